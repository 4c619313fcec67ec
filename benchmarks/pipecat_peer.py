"""A pipecat bot on Tingshuo's model files: the peer that ``benchmarks/turn.py`` measures beside Tingshuo.

    ~/.cache/tingshuo/pipecat-venv/bin/python benchmarks/pipecat_peer.py SPEC.json

It runs in pipecat's own virtualenv (``benchmarks/pipecat-venv.sh``), never in Tingshuo's: the
assistant does not depend on pipecat, and nothing here imports the assistant. ``turn.py`` writes the
spec (the recordings, where each one's speech ends, the model files) and reads one JSON line per
recording from standard output.

The bot is built as pipecat's documentation recommends for a responsive local voice bot
(pipecat-ai 1.14): the user aggregator runs silero VAD (``stop_secs`` 0.2) and ends the turn with
Smart Turn v3.2 on its bundled file (pipecat's default stop strategy); its faster-whisper service
transcribes each VAD segment (the same CTranslate2 Whisper base, int8, Chinese, faster-whisper's own
defaults: beam 5, the 30 s window); the same Qwen GGUF answers behind llama-cpp-python's
OpenAI-compatible server on loopback, through pipecat's OpenAI LLM service, with Tingshuo's system
prompt and greedy sampling; and pipecat's Kokoro service (kokoro-onnx, espeak-ng's Mandarin phonemes)
speaks the reply sentence by sentence with the same Kokoro int8 file and Mandarin voice.

The microphone is the task's own input queue, fed 20 ms frames at one second per second; probes note
when the turn ends (the aggregator's ``UserStoppedSpeakingFrame``), the transcript, the LLM's first
text and the first reply audio, each in seconds from the start of the recording.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import wave
from pathlib import Path
from typing import Any

import numpy as np

FRAME_S = 0.02  # one microphone frame
MIC_RATE = 16000
OUT_RATE = 24000
VOICE_SHAPE = (510, 1, 256)  # a Kokoro v1.0 voice file: raw float32


def read_clip(path: str) -> np.ndarray:
    """A 16 kHz mono 16-bit wav as int16 samples."""
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (MIC_RATE, 1, 2):
            raise SystemExit(f"pipecat_peer: {path} is not 16 kHz mono 16-bit")
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def voices_file(voice: str, raw: str, folder: Path) -> Path:
    """kokoro-onnx reads its voices from one .npz: this voice's raw file, as that."""
    path = folder / "voices.npz"
    np.savez(path, **{voice: np.fromfile(raw, np.float32).reshape(VOICE_SHAPE)})
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llm_server(gguf: str, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    """llama-cpp-python's OpenAI-compatible server on loopback, once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
         "--n_threads", str(threads), "--n_ctx", "2048", "--chat_format", "chatml"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"pipecat_peer: llama_cpp.server ended with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=1):
                return server, base
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("pipecat_peer: llama_cpp.server did not answer in 120 s")


class Marks:
    """When each thing happened (every time), in seconds from the start of the recording."""

    def __init__(self) -> None:
        self.start = 0.0
        self.seen: dict[str, list[float]] = {}
        self.transcript = ""
        self.reply = ""

    def now(self) -> float:
        return asyncio.get_running_loop().time() - self.start


def probe(name: str, kinds: tuple[type, ...], marks: Marks) -> Any:
    """A pass-through processor noting when each frame of ``kinds`` reached it (the first of a run
    of audio or text frames only: one a second apart at least)."""
    from pipecat.frames.frames import LLMTextFrame, TranscriptionFrame
    from pipecat.processors.frame_processor import FrameProcessor

    class Probe(FrameProcessor):
        async def process_frame(self, frame: Any, direction: Any) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, kinds):
                times = marks.seen.setdefault(name, [])
                now = round(marks.now(), 3)
                if not times or now - times[-1] > 1.0:
                    times.append(now)
            if isinstance(frame, TranscriptionFrame):
                marks.transcript += frame.text
            elif isinstance(frame, LLMTextFrame) and name == "llm_text":
                marks.reply += frame.text
            await self.push_frame(frame, direction)

    return Probe(name=f"probe-{name}")


async def one_turn(spec: dict[str, Any], clip: dict[str, Any], llm_base: str, voices: Path) -> dict[str, Any]:
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams
    from pipecat.frames.frames import (
        EndFrame,
        InputAudioRawFrame,
        LLMTextFrame,
        TranscriptionFrame,
        TTSAudioRawFrame,
        UserStoppedSpeakingFrame,
    )
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.services.kokoro.tts import KokoroTTSService
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.services.whisper.stt import WhisperSTTService
    from pipecat.transcriptions.language import Language
    from pipecat.workers.runner import WorkerRunner

    marks = Marks()
    stt = WhisperSTTService(settings=WhisperSTTService.Settings(model=spec["whisper"], language=Language.ZH),
                            device="cpu", compute_type="int8")
    llm = OpenAILLMService(api_key="none", base_url=llm_base,
                           settings=OpenAILLMService.Settings(model="local", temperature=0.0,
                                                              max_tokens=spec["max_tokens"],
                                                              system_instruction=spec["system_prompt"]))
    tts = KokoroTTSService(model_path=spec["kokoro"], voices_path=str(voices),
                           settings=KokoroTTSService.Settings(voice=spec["voice"], language=Language.ZH))
    context = LLMContext()
    pair = LLMContextAggregatorPair(context, user_params=LLMUserAggregatorParams(
        vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.2))))
    pipeline = Pipeline([stt, probe("transcript_at", (TranscriptionFrame,), marks), pair.user(),
                         probe("turn_end", (UserStoppedSpeakingFrame,), marks), llm,
                         probe("llm_text", (LLMTextFrame,), marks), tts,
                         probe("first_audio", (TTSAudioRawFrame,), marks), pair.assistant()])
    task = PipelineWorker(pipeline, params=PipelineParams(audio_in_sample_rate=MIC_RATE,
                                                          audio_out_sample_rate=OUT_RATE),
                          enable_rtvi=False)
    runner = WorkerRunner(handle_sigint=False)
    samples = np.concatenate([np.zeros(int(spec["lead_s"] * MIC_RATE), np.int16), read_clip(clip["path"]),
                              np.zeros(int(spec["tail_s"] * MIC_RATE), np.int16)])
    step = int(FRAME_S * MIC_RATE)

    async def microphone() -> None:
        await asyncio.sleep(0.5)  # the task has started its processors
        loop = asyncio.get_running_loop()
        marks.start = loop.time()
        for i in range(0, len(samples) - step + 1, step):
            delay = marks.start + (i + step) / MIC_RATE - loop.time()  # a frame arrives once it is whole
            if delay > 0:
                await asyncio.sleep(delay)
            await task.queue_frame(InputAudioRawFrame(audio=samples[i:i + step].tobytes(), sample_rate=MIC_RATE,
                                                      num_channels=1))
        await task.queue_frame(EndFrame())

    feeding = asyncio.create_task(microphone())
    await runner.add_workers(task)
    await runner.run()
    await feeding
    return {"name": clip["name"], "speech_end": clip["speech_end"], **marks.seen,
            "transcript": marks.transcript, "reply": marks.reply}


async def main_async(spec: dict[str, Any]) -> None:
    server, base = start_llm_server(spec["llm"], spec["threads"])
    try:
        with tempfile.TemporaryDirectory(prefix="pipecat-peer-") as folder:
            voices = voices_file(spec["voice"], spec["voice_file"], Path(folder))
            for clip in spec["clips"]:
                print(json.dumps(await one_turn(spec, clip, base, voices), ensure_ascii=False), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: pipecat_peer.py SPEC.json", file=sys.stderr)
        return 2
    try:
        spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"pipecat_peer: cannot read the spec: {exc}", file=sys.stderr)
        return 2
    asyncio.run(main_async(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
