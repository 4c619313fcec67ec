"""Smart Turn v3.2 on real Mandarin: finished requests against requests cut mid-sentence."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from models.smart_turn import MODEL, SmartTurn
from tests.conftest import RATE, real


@pytest.fixture(scope="module")
def turn(assets) -> Iterator[SmartTurn]:
    model = SmartTurn(assets.path(MODEL.name, MODEL.files[0].name))
    model.load()
    yield model
    model.close()


def with_trailing_silence(audio: np.ndarray, seconds: float = 0.2) -> np.ndarray:
    """The speech up to its last loud sample plus ``seconds``: what the model hears at the check."""
    last = int(np.flatnonzero(np.abs(audio) > 0.02)[-1])
    return np.concatenate([audio[:last], np.zeros(int(seconds * RATE), np.float32)])


@pytest.mark.parametrize("clip", ["ask_who_are_you.wav", "hey_xiaozhi.wav", "cmd_qiehuan_1.wav"])
def test_finished_requests_are_heard_as_finished(turn: SmartTurn, clip: str) -> None:
    assert asyncio.run(turn.complete(with_trailing_silence(real(clip)))) > 0.5


@pytest.mark.parametrize(("clip", "cut_s"), [("ask_who_are_you.wav", 1.3), ("hey_xiaozhi.wav", 1.8)])
def test_a_request_cut_mid_sentence_is_not_finished(turn: SmartTurn, clip: str, cut_s: float) -> None:
    audio = real(clip)[: int(cut_s * RATE)]
    assert asyncio.run(turn.complete(with_trailing_silence(audio))) < 0.5


def test_only_the_last_eight_seconds_count(turn: SmartTurn) -> None:
    request = with_trailing_silence(real("ask_who_are_you.wav"))
    padded = np.concatenate([np.zeros(10 * RATE, np.float32), request])
    assert abs(asyncio.run(turn.complete(padded)) - asyncio.run(turn.complete(request))) < 0.05
