"""Benchmark of the spine (no ASR/LLM/TTS models yet): prints the numbers the README quotes.

    .venv/bin/python benchmarks/spine.py

- VAD: wall time per 20 ms chunk of the real silero VAD (sherpa-onnx), and its real-time factor.
- Replay: how much faster than real time a long session replays in lockstep (real VAD, test
  doubles for the other models), i.e. the cost of the state machine and pump per chunk.
- Barge-in: wall time from the barge-in decision to the sink being cleared, over several runs.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.app import Parts
from assistant.audio import replay as replay_audio
from assistant.audio.wav import read_wav
from assistant.events import BargeIn
from assistant.replay import replay
from models.assets import Assets
from models.protocols import Backends
from models.sherpa_vad import SherpaSileroVad, silero_model_path
from tests.conftest import make_config, real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts

REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "audio" / "real"


async def vad_cost(vad: SherpaSileroVad) -> None:
    audio = read_wav(REAL / "car_commands_68s.wav", 16000)
    vad.reset()
    started = time.perf_counter()
    chunks = 0
    for i in range(0, len(audio) - 320, 320):
        await vad.accept(audio[i:i + 320])
        chunks += 1
    spent = time.perf_counter() - started
    print(f"VAD (silero v5, sherpa-onnx, 1 thread): {spent / chunks * 1000:.3f} ms per 20 ms chunk, "
          f"RTF {spent / (len(audio) / 16000):.4f} over {len(audio) / 16000:.1f} s")


def backends(vad: SherpaSileroVad) -> Backends:
    vad.reset()
    return Backends(vad=vad, asr=ScriptedAsr(*["好"] * 50), llm=ScriptedLlm(*["好的。"] * 50), tts=ToneTts())


async def replay_speed(vad: SherpaSileroVad, out: Path) -> None:
    audio = read_wav(REAL / "car_commands_68s.wav", 16000)
    started = time.perf_counter()
    summary = await replay(Parts(make_config("log.level='error'"), backends(vad)), audio, out / "speed")
    spent = time.perf_counter() - started
    print(f"Replay in lockstep (real VAD + doubles): {len(audio) / 16000:.1f} s session in {spent:.2f} s "
          f"= {len(audio) / 16000 / spent:.0f}x real time, {len(summary['turns'])} turns")


async def barge_in_latency(vad: SherpaSileroVad, out: Path, runs: int = 10) -> None:
    first = real("ask_who_are_you.wav")
    session = session_of(first, silence(5.0 - len(first) / 16000), real("cmd_qiehuan_1.wav"), silence(2.0))
    original = replay_audio.ReplaySpeaker.clear
    delays: list[float] = []
    for i in range(runs):
        marks: dict[str, float] = {}

        def timed_clear(self: replay_audio.ReplaySpeaker, marks: dict[str, float] = marks) -> None:
            marks.setdefault("cleared", time.perf_counter())
            original(self)

        def on_event(t: float, event: object, marks: dict[str, float] = marks) -> None:
            if isinstance(event, BargeIn):
                marks["decided"] = time.perf_counter()

        replay_audio.ReplaySpeaker.clear = timed_clear  # type: ignore[method-assign]
        try:
            b = backends(vad)
            b.llm = ScriptedLlm("我是听说，一个离线的普通话语音助手，我可以回答问题，也可以帮你设定提醒。", "好的。")
            await replay(Parts(make_config("log.level='error'"), b), session, out / f"barge{i}", subscribers=[on_event])
        finally:
            replay_audio.ReplaySpeaker.clear = original  # type: ignore[method-assign]
        delays.append((marks["cleared"] - marks["decided"]) * 1000)
    print(f"Barge-in decision -> sink cleared: median {statistics.median(delays):.2f} ms, "
          f"max {max(delays):.2f} ms over {runs} runs")


async def main() -> None:
    vad = SherpaSileroVad(silero_model_path(Assets()))
    vad.load()
    with tempfile.TemporaryDirectory() as tmp:
        await vad_cost(vad)
        await replay_speed(vad, Path(tmp))
        await barge_in_latency(vad, Path(tmp))
    vad.close()


if __name__ == "__main__":
    from assistant import logs

    logs.setup("error")
    asyncio.run(main())
