"""The real CPU models on real recordings: VAD spans, wake words, Mandarin ASR."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from assistant.segments import find_utterances
from models.assets import Assets
from models.sherpa_kws import MODEL as KWS_MODEL
from models.sherpa_kws import Keyword, SherpaKws
from models.whisper_asr import WhisperAsr
from tests.conftest import REAL, SHARED, make_config, real

CORPUS = SHARED / "audio" / "corpus"


async def test_vad_finds_the_speech_spans_of_the_greeting(vad):
    # Spans measured once from the recording's energy envelope (10 ms frames, within 35 dB of the
    # peak, gaps under 0.1 s bridged): 0.00–1.65 s and 2.80–3.60 s.
    found = await find_utterances(make_config(), vad, real("greeting_10s.wav"))
    spans = [(start / 16000, end / 16000) for start, end, _ in found]
    assert len(spans) == 2
    for (start, end), (want_start, want_end) in zip(spans, [(0.00, 1.65), (2.80, 3.60)], strict=True):
        assert start == pytest.approx(want_start, abs=0.2)
        assert end == pytest.approx(want_end, abs=0.2)


@pytest.fixture(scope="module")
def kws_dir() -> Path:
    return Assets([SHARED / "models"]).folder(KWS_MODEL)


def spot(kws_dir: Path, words: list[str], audio: np.ndarray) -> list[str]:
    kws = SherpaKws(kws_dir, [Keyword(w) for w in words])
    kws.load()
    try:
        padded = np.concatenate([audio, np.zeros(16000, np.float32)])  # let the last frames decode

        async def feed() -> list[str]:
            hits = []
            for i in range(0, len(padded), 320):
                if found := await kws.accept(padded[i:i + 320]):
                    hits.append(found)
            return hits

        return asyncio.run(feed())
    finally:
        kws.close()


WAKE_WORDS = ["小爱同学", "小度小度", "小智"]


@pytest.mark.parametrize(("clip", "word"), [
    (CORPUS / "039.wav", "小爱同学"),
    (CORPUS / "043.wav", "小度小度"),
    (REAL / "hey_xiaozhi.wav", "小智"),
])
def test_wake_words_configured_in_characters_fire_on_real_recordings(kws_dir, clip, word):
    from assistant.audio.wav import read_wav

    assert spot(kws_dir, WAKE_WORDS, read_wav(clip, 16000)) == [word]


@pytest.mark.parametrize("clip", ["ask_who_are_you.wav", "greeting_10s.wav"])
def test_wake_words_do_not_fire_on_other_speech(kws_dir, clip):
    assert spot(kws_dir, WAKE_WORDS, real(clip)) == []


def test_wake_words_must_be_chinese_characters(kws_dir):
    from models.protocols import ModelError

    with pytest.raises(ModelError, match="Chinese characters"):
        SherpaKws(kws_dir, [Keyword("hey siri")]).load()


@pytest.fixture(scope="module")
def whisper() -> WhisperAsr:
    asr = WhisperAsr(Assets([SHARED / "models"]).folder("whisper-base"))
    asr.load()
    yield asr
    asr.close()


@pytest.mark.slow
def test_whisper_transcribes_a_real_mandarin_question(whisper):
    text = asyncio.run(whisper.transcribe(real("ask_who_are_you.wav")))
    assert "你是谁" in text and "名字" in text


@pytest.mark.slow
def test_whisper_answers_in_simplified_characters(whisper):
    text = asyncio.run(whisper.transcribe(real("hey_xiaozhi.wav")))
    assert "小智" in text and "今天怎么样" in text
    assert "麼" not in text and "樣" not in text
