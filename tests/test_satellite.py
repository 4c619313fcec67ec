"""`assistant satellite` against a Home Assistant pipeline server written with the `wyoming` library.

The satellite runs a real session on a replayed recording (the real VAD and keyword spotter, in
real time); the pipeline server transcribes what the satellite sends with the real Whisper and
answers with a reply text and audio, as Home Assistant does, then waits for ``played``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.satellite import RunSatellite
from wyoming.timer import TimerFinished, TimerStarted
from wyoming.tts import Synthesize
from wyoming.vad import VoiceStarted, VoiceStopped

from assistant import app, backends
from assistant.app import Parts
from assistant.audio.replay import ReplayDevice
from assistant.audio.resample import resample
from assistant.audio.wav import NullSink, read_wav
from assistant.clock import SampleClock
from assistant.events import EventBus
from assistant.replay import replay
from assistant.wyoming.link import HaLink, HomeAnswerer
from assistant.wyoming.pcm import chunks
from assistant.wyoming.satellite import Satellite, home_status
from models.protocols import Asr, ModelError
from tests import sessions
from tests.conftest import make_config, real, says, silence
from tests.sessions import wake_and_request
from tests.test_wyoming import free_port

pytestmark = pytest.mark.slow

REPLY = "好的，我在。"
TTS_RATE = 22050  # Home Assistant's TTS speaks at its own rate; the satellite resamples it


@pytest.fixture(scope="module")
def whisper() -> Iterator[Asr]:
    """The pipeline server's speech to text: the real Whisper."""
    cfg = make_config()
    asr = backends.asr(cfg, backends.assets_for(cfg))
    asr.load()
    yield asr
    asr.close()


@dataclass
class PipelineServer:
    """Home Assistant in miniature: it connects to the satellite, sends ``run-satellite``, and answers
    each ``run-pipeline`` as Home Assistant's voice pipeline does, with the events in its order."""

    asr: Asr
    reply: str = REPLY
    speech: np.ndarray = field(default_factory=lambda: resample(real("cmd_qiehuan_1.wav"), 16000, TTS_RATE))
    fail_with: str | None = None  # answer each run with this pipeline error instead
    runs: list[RunPipeline] = field(default_factory=list)
    heard: list[str] = field(default_factory=list)
    audio_rates: list[int] = field(default_factory=list)
    played: asyncio.Event = field(default_factory=asyncio.Event)
    info: Info | None = None

    async def serve(self, port: int, ready: asyncio.Event) -> None:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            self.info = Info.from_event(await self._next(client, "info"))
            await client.write_event(RunSatellite().event())
            await client.write_event(Ping(text="ha").event())
            await self._next(client, "pong")
            ready.set()
            audio: list[bytes] = []
            while (event := await client.read_event()) is not None:
                if RunPipeline.is_type(event.type):
                    self.runs.append(RunPipeline.from_event(event))
                    audio = []
                elif AudioStart.is_type(event.type):
                    self.audio_rates.append(AudioStart.from_event(event).rate)
                elif AudioChunk.is_type(event.type):
                    audio.append(AudioChunk.from_event(event).audio)
                elif AudioStop.is_type(event.type):
                    await self._answer(client, b"".join(audio))
                elif event.type == "played":
                    self.played.set()

    async def _answer(self, client: AsyncTcpClient, pcm: bytes) -> None:
        if self.fail_with is not None:
            await client.write_event(Error(text=self.fail_with, code="intent-failed").event())
            return
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
        await client.write_event(Transcribe(language="zh-cn").event())
        await client.write_event(VoiceStarted(timestamp=0).event())
        text = await self.asr.transcribe(samples)
        self.heard.append(text)
        await client.write_event(VoiceStopped(timestamp=int(1000 * len(samples) / 16000)).event())
        await client.write_event(Transcript(text=text).event())
        await client.write_event(Synthesize(text=self.reply).event())
        await client.write_event(AudioStart(rate=TTS_RATE, width=2, channels=1).event())
        for chunk in chunks(self.speech, TTS_RATE):
            await client.write_event(chunk.event())
        await client.write_event(AudioStop().event())

    @staticmethod
    async def _next(client: AsyncTcpClient, kind: str) -> Event:
        while (event := await asyncio.wait_for(client.read_event(), 30)) is not None:
            if event.type == kind:
                return event
        raise AssertionError(f"the satellite closed the connection before {kind}")


@asynccontextmanager
async def satellite_with(home: PipelineServer | None, *overrides: str) -> AsyncIterator[tuple[Parts, Satellite]]:
    from wyoming.server import AsyncTcpServer

    port = free_port()
    cfg = make_config("wake.mode='keyword'", "wake.keywords=['小智']", "dialog.follow_up_s=0",
                      f"satellite.uri='tcp://127.0.0.1:{port}'", "satellite.reply_timeout_s=60", *overrides)
    link = HaLink(cfg.satellite.reply_timeout_s)
    with app.satellite(cfg, link) as parts:
        async with Satellite(parts.cfg, link, AsyncTcpServer("127.0.0.1", port)) as satellite:
            ready = asyncio.Event()
            task = asyncio.create_task(home.serve(port, ready)) if home is not None else None
            if task is not None:
                await asyncio.wait_for(ready.wait(), 30)
            try:
                yield parts, satellite
            finally:
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)


async def test_a_full_turn_through_a_home_assistant_pipeline(whisper: Asr, tmp_path: Path) -> None:
    home = PipelineServer(whisper)
    async with satellite_with(home) as (parts, satellite):
        summary = await replay(parts, np.concatenate([wake_and_request(), silence(4.0)]), tmp_path,
                               realtime=True, subscribers=[satellite])  # it sends played
        await asyncio.wait_for(home.played.wait(), 30)
    assert home.info is not None and home.info.satellite is not None
    assert home.info.satellite.has_vad and home.info.satellite.active_wake_words == ["小智"]
    assert [(r.start_stage, r.end_stage) for r in home.runs] == [(PipelineStage.ASR, PipelineStage.TTS)]
    assert home.audio_rates == [16000]
    assert len(home.heard) == 1 and says(home.heard[0], "在吗"), home.heard  # the real utterance reached it
    [turn] = summary["turns"]
    assert turn["reply"] == REPLY
    assert turn["end_of_speech_to_first_audio_s"] is not None
    played = read_wav(tmp_path / "played.wav", 16000)
    assert np.abs(played).max() > 0.05 and len(played) > 16000  # Home Assistant's speech, played here


async def test_barge_in_over_home_assistants_reply_stops_it_and_the_next_request_is_a_new_run(
        whisper: Asr, tmp_path: Path) -> None:
    home = PipelineServer(whisper, speech=resample(real("greeting_10s.wav"), 16000, TTS_RATE))
    layout = sessions.interrupted_turn(playback_start_s=4.0, after_s=2.0)  # the reply plays by then, for 10 s
    async with satellite_with(home, "dialog.follow_up_s=4.0") as (parts, satellite):
        summary = await replay(parts, layout.audio, tmp_path, realtime=True, subscribers=[satellite])
        await asyncio.wait_for(home.played.wait(), 30)
    assert len(home.runs) == 2 and says(home.heard[1], "切换"), home.heard
    first, second = summary["turns"]
    assert first["interrupted"] and not second["interrupted"]
    assert [b["reason"] for b in summary["barge_ins"]] == ["speech"]


async def test_a_pipeline_error_sends_the_satellite_back_to_waiting(whisper: Asr, tmp_path: Path) -> None:
    home = PipelineServer(whisper, fail_with="Unexpected error during intent recognition")
    async with satellite_with(home) as (parts, _):
        summary = await replay(parts, np.concatenate([wake_and_request(), silence(3.0)]), tmp_path, realtime=True)
    assert len(home.runs) == 1
    [turn] = summary["turns"]
    assert turn["reply"] in (None, "")
    assert summary["errors"] and "Home Assistant" in summary["errors"][0]["message"]


async def test_without_home_assistant_a_request_fails_clearly_and_the_satellite_listens_on(tmp_path: Path) -> None:
    async with satellite_with(None) as (parts, _):
        summary = await replay(parts, np.concatenate([wake_and_request(), silence(2.0)]), tmp_path, realtime=True)
    assert summary["errors"] and "not connected" in summary["errors"][0]["message"]


async def test_a_finished_timer_rings_on_the_satellite() -> None:
    link = HaLink(5.0)
    sink = NullSink(16000)
    satellite = Satellite(make_config(), link, server=None, sink=sink)  # type: ignore[arg-type]
    link.receive(TimerStarted(id="t1", total_seconds=300, name="泡面").event())
    assert link.timers["t1"].name == "泡面"
    assert home_status(link) == {"connected": False, "paused": False,  # as the status page shows it
                                 "timers": [{"id": "t1", "name": "泡面", "total_seconds": 300, "active": True}]}
    link.receive(TimerFinished(id="t1").event())
    await asyncio.wait_for(satellite.tasks.wait(), 10)
    assert "t1" not in link.timers and sink.position > 16000  # three chimes and the gaps between them


def test_satellite_refuses_a_bad_address_in_one_line(cli_main) -> None:
    code, _, err = cli_main("satellite", "--set", "satellite.uri='udp://127.0.0.1:10701'")
    assert code == 2 and len(err) == 1 and "satellite.uri" in err[0], err


def test_nothing_on_a_satellite_transcribes_on_its_own() -> None:
    """Each transcription is a Home Assistant pipeline run, which acts on what it hears: no speculative
    transcript, no second wake-word stage, no tools answering in its place."""
    cfg = app.satellite_config(make_config("wake.verify=true", "vad.speculative_silence_ms=64", "tools.enabled=true"))
    assert (cfg.vad.speculative_silence_ms, cfg.wake.verify, cfg.tools.enabled) == (0, False, False)
    assert not cfg.tts.streaming and not cfg.tts.phrase_cache  # the reply is Home Assistant's audio, whole


def test_a_satellite_runs_no_asr_llm_or_tts_of_its_own() -> None:
    """Home Assistant hears, answers and speaks: the satellite's parts are its ears (VAD, keyword
    spotter, end-of-turn model) and the answerer that sends each request to Home Assistant."""
    link = HaLink(5.0)
    cfg = make_config("wake.mode='keyword'", "wake.keywords=['小智']", "vad.turn_model=true")
    with app.satellite(cfg, link) as parts:
        models = parts.backends
        assert (models.asr, models.llm, models.tts, parts.responder) == (None, None, None, None)
        assert models.kws is not None and models.turn is not None
        assert models.all() == [models.vad, models.kws, models.turn]
        assert not [m for m in models.all() for name in ("transcribe", "reply", "synthesize") if hasattr(m, name)]
        assert isinstance(parts.answerer, HomeAnswerer) and parts.answerer.link is link
        clock = SampleClock(16000)
        device = ReplayDevice(np.zeros(16000, np.float32), clock, parts.cfg.audio.chunk_samples)
        session = parts.session(clock, EventBus(clock), device, device.speaker)
        assert session.answerer is parts.answerer and session.responder is None


def home_assistant(link: HaLink, *answers: list[Event]) -> tuple[list[Event], Callable[[Event], Awaitable[None]]]:
    """What the satellite sends, and a connection on which Home Assistant answers each run with the
    next of ``answers`` once the run's utterance has been sent."""
    sent: list[Event] = []
    left = iter(answers)

    async def send(event: Event) -> None:
        sent.append(event)
        if AudioStop.is_type(event.type):
            for answer in next(left, []):
                link.receive(answer)

    return sent, send


def spoken(text: str, level: float, samples: int) -> list[Event]:
    """Home Assistant's reply ``text`` and its audio (``samples`` at 16 kHz, all at ``level``)."""
    return [Synthesize(text=text).event(), AudioStart(rate=16000, width=2, channels=1).event(),
            *[c.event() for c in chunks(np.full(samples, level, np.float32), 16000)], AudioStop().event()]


async def test_what_home_assistant_still_sends_for_a_given_up_request_is_not_played() -> None:
    """Runs are answered in order: the late answer of an abandoned run goes to that run, not the next."""
    link = HaLink(5.0)
    late = spoken("第一个回答", 0.2, 3200)  # the first run's reply, come in after the second run began
    sent, send = home_assistant(link, [Transcript(text="第一").event()],
                                [*late, Transcript(text="第二").event(), *spoken("第二个回答", 0.1, 1600)])
    link.attach(send)
    answerer = HomeAnswerer(link)
    assert await answerer.hear(np.zeros(1600, np.float32), 16000) == "第一"
    first = link.current
    answerer.stop()  # a barge-in: the first reply is not wanted any more
    assert await answerer.hear(np.zeros(1600, np.float32), 16000) == "第二"
    answer = await answerer.answer("第二", 0.1)
    assert first is not None and first.abandoned and first.reply.result() == "第一个回答"
    assert (answer.text, answer.intent) == ("第二", None)
    assert [piece async for piece in answer.source.reply("第二")] == ["第二个回答"]
    assert answer.voice is not None and answer.voice.sample_rate == 24000
    audio = np.concatenate([piece async for piece in answer.voice.synthesize("第二个回答")])
    assert abs(len(audio) - 2400) <= 2 and abs(float(audio.mean()) - 0.1) < 0.01  # the second's, at 24 kHz
    assert [e.type for e in sent].count("run-pipeline") == 2 and not link.runs


async def test_an_error_from_home_assistant_mid_reply_fails_the_reply() -> None:
    link = HaLink(5.0)
    _, send = home_assistant(link, [Transcript(text="开灯").event(), Synthesize(text="好的").event(),
                                    AudioStart(rate=16000, width=2, channels=1).event(),
                                    Error(text="TTS failed", code="tts-failed").event()])
    link.attach(send)
    answerer = HomeAnswerer(link)
    assert await answerer.hear(np.zeros(1600, np.float32), 16000) == "开灯"
    answer = await answerer.answer("开灯", 0.1)
    assert [piece async for piece in answer.source.reply("开灯")] == ["好的"]
    assert answer.voice is not None
    with pytest.raises(ModelError, match="Home Assistant: TTS failed"):
        [piece async for piece in answer.voice.synthesize("好的")]


async def test_a_request_without_an_answer_gives_up_after_the_timeout() -> None:
    link = HaLink(0.2)
    sent, send = home_assistant(link)
    link.attach(send)
    with pytest.raises(ModelError, match="reply_timeout_s"):
        await HomeAnswerer(link).hear(np.zeros(4800, np.float32), 48000)
    assert not link.runs  # forgotten: a late answer goes to no run
    assert AudioStop.from_event(sent[-1]).timestamp == 100  # 0.1 s of the session's audio, sent at 16 kHz


async def test_without_a_run_there_is_nothing_to_answer() -> None:
    with pytest.raises(ModelError, match="no Home Assistant pipeline run"):
        await HomeAnswerer(HaLink(5.0)).answer("你好", 0.5)
