"""The seam where the session turns an utterance into an answer (``assistant/answerer.py``).

A session answered by something other than its own ASR and responder (a satellite's Home Assistant)
runs with no ASR, LLM or TTS: it hears the request, the answerer hears and answers it, and the
answer's own audio is what plays. Here the answerer is scripted, on a real recording and the real VAD;
``tests/test_satellite.py`` runs the real one against a pipeline server.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant.app import Parts
from assistant.audio.replay import ReplayDevice
from assistant.audio.wav import read_wav
from assistant.clock import SampleClock
from assistant.events import EventBus
from assistant.pipeline import FixedText, Recording
from assistant.replay import replay
from assistant.respond import Answer
from models.protocols import Backends, ModelError, Samples
from states.session import Session
from tests import sessions
from tests.conftest import RATE, make_config

VOICE_RATE = 22050


class ScriptedAnswerer:
    """Hears every utterance as ``transcript`` and answers with ``reply`` in its own voice: a tone
    recorded at ``VOICE_RATE`` (a remote pipeline's answer, audio and all)."""

    def __init__(self, transcript: str, reply: str, seconds: float) -> None:
        self.transcript, self.reply = transcript, reply
        t = np.arange(int(seconds * VOICE_RATE)) / VOICE_RATE
        self.audio = (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)
        self.heard: list[tuple[int, int]] = []  # (samples, rate) of each utterance
        self.asked: list[str] = []
        self.stops = 0

    async def hear(self, utterance: Samples, rate: int) -> str:
        self.heard.append((len(utterance), rate))
        return self.transcript

    async def answer(self, text: str, spoken_s: float) -> Answer:
        self.asked.append(text)
        return Answer(FixedText(self.reply), text, None, voice=Recording(self.audio, VOICE_RATE))

    async def answer_ahead(self, text: str, spoken_s: float) -> Answer | None:
        return None  # as a remote pipeline: it answers once the request is over

    def retract(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1


async def test_an_answer_with_its_own_voice_is_played_by_a_session_without_asr_llm_or_tts(
        vad, tmp_path: Path) -> None:
    answerer = ScriptedAnswerer("你是谁", "我是听说。", seconds=1.5)
    cfg = make_config("dialog.follow_up_s=0", "vad.speculative_silence_ms=0")  # heard once, at the endpoint
    parts = Parts(cfg, Backends(vad=vad), answerer=answerer)
    layout = sessions.Layout().pause(0.5).clip("ask_who_are_you.wav", "request").pause(6.0)
    summary = await replay(parts, layout.audio, tmp_path)
    [turn] = summary["turns"]
    assert (turn["transcript"], turn["reply"], turn["interrupted"]) == ("你是谁", "我是听说。", False)
    assert answerer.asked == ["你是谁"] and len(answerer.heard) == 1 and answerer.heard[0][1] == RATE
    assert answerer.stops >= 1  # the reply's end gives the utterance up (nothing left in flight)
    played = read_wav(tmp_path / "played.wav", RATE)
    loud = np.flatnonzero(np.abs(played) > 0.1)
    assert loud.size and 1.3 < (loud[-1] - loud[0]) / RATE < 1.6  # the answer's 1.5 s of tone, not a TTS's


def test_a_session_with_neither_an_asr_nor_an_answerer_is_refused() -> None:
    cfg = make_config()
    clock = SampleClock(RATE)
    device = ReplayDevice(np.zeros(RATE, np.float32), clock, cfg.audio.chunk_samples)

    class StandInVad:
        window_samples = 512

    with pytest.raises(ModelError, match="no ASR"):
        Session(cfg, clock, EventBus(clock), device, device.speaker, Backends(vad=StandInVad()))  # type: ignore[arg-type]
