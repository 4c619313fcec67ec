"""Kokoro in two parts: only the voiced frames rendered, the first piece spoken early and spliced.

The real model, real text. The spliced audio is compared with the rendering of the same frames in
one call (log-mel distance over the loud frames, ``assistant/audio/metrics.py``), and Whisper must still
read it.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from assistant.audio.metrics import log_mel_distance
from assistant.audio.resample import resample
from models import kokoro_split as ks
from models.kokoro_tts import SILENT, KokoroTts
from models.whisper_asr import WhisperAsr
from tests.conftest import says

SPLICED_MAX_DB = 3.0  # measured 1.1–1.7 dB on six first clauses; the first frames decoded alone: 5–7 dB
FIRST_CLAUSES = ("今天天气不错，", "好的，我记住了。", "北京是中国的首都。", "现在是下午三点十五分。")


async def pieces(tts: KokoroTts, text: str) -> list[np.ndarray]:
    return [p async for p in tts.synthesize(text)]


def test_front_and_decoder_reproduce_the_whole_model_exactly(tts: KokoroTts, kokoro_files) -> None:
    import onnxruntime as ort

    whole = ort.InferenceSession(str(kokoro_files.model), providers=["CPUExecutionProvider"])
    phonemes = tts.pieces("你好，我是听说。")[0]
    options = ort.RunOptions()
    front = tts._worker.call(tts._run_front, phonemes, options)
    ids = [tts._vocab[c] for c in phonemes]
    (expected,) = whole.run(["audio"], {"tokens": np.array([[0, *ids, 0]], np.int64), "style": front.style,
                                        "speed": np.array([1.0], np.float32)})
    s = ks.whole(front)
    got = tts._worker.call(tts._decode, front, s.start, s.end, options)
    assert got.size == np.asarray(expected).size == s.frames * ks.FRAME
    assert np.array_equal(got, np.asarray(expected).reshape(-1))


async def test_only_the_voiced_frames_are_rendered(tts: KokoroTts) -> None:
    tts.first_frames = 0
    try:
        voiced = np.concatenate(await pieces(tts, "好的。"))
        tts.voiced_only = False
        every = np.concatenate(await pieces(tts, "好的。"))
    finally:
        tts.first_frames, tts.voiced_only = 16, True
    loud = np.flatnonzero(np.abs(voiced) > 0.01)
    assert loud[0] < 0.06 * tts.sample_rate  # speech at once, not after the start token's 0.4 s
    assert np.flatnonzero(np.abs(every) > 0.01)[0] > 0.3 * tts.sample_rate
    assert voiced.size < every.size - 0.4 * tts.sample_rate


@pytest.mark.parametrize("text", ["火车将在十分钟后到站。", "谢谢你的帮助。", "再把空调调到二十六度。"])
def test_a_piece_can_be_played_from_its_first_consonants_onset(tts: KokoroTts, text: str) -> None:
    # In the whole rendering the consonant is heard before the frame its duration starts at: the two
    # frames before it rise out of the start token's silence (measured −48 to −23 dBFS a frame with
    # zf_xiaoxiao, from −90 to −120), so a piece played from that frame loses them (火车 → 过车,
    # 谢谢 → 这些, 再把 → 带把, as Whisper base heard them); ``tts.onset_frames`` plays them.
    phonemes = tts.pieces(text)[0]
    front = tts.front(phonemes)
    whole = tts.render_whole(front)
    aligned = int(front.durations[0])
    s = ks.span(front, phonemes, SILENT, onset=2)
    assert s.voice == aligned - 2 and s.start == s.voice - ks.LEAD_FRAMES
    assert ks.span(front, phonemes, SILENT).voice == aligned  # the default: from the aligned frame

    def level(first: int, last: int) -> float:
        return float(10 * np.log10(np.mean(whole[first * ks.FRAME:last * ks.FRAME] ** 2) + 1e-12))

    assert level(s.voice, aligned) > level(s.start, s.start + 2) + 30  # the onset, out of silence


async def test_the_onset_frames_are_played(tts: KokoroTts) -> None:
    tts.first_frames = 0
    try:
        plain = np.concatenate(await pieces(tts, "火车到站了。"))
        tts.onset_frames = 2
        onset = np.concatenate(await pieces(tts, "火车到站了。"))
    finally:
        tts.first_frames, tts.onset_frames = 16, 0
    assert onset.size == plain.size + 2 * ks.FRAME


@pytest.mark.parametrize("text", FIRST_CLAUSES)
async def test_the_early_first_frames_splice_into_the_one_call_rendering(tts: KokoroTts, text: str) -> None:
    spliced = await pieces(tts, text)
    assert len(spliced) == 2
    head = spliced[0]
    assert head.size >= (tts.first_frames * ks.FRAME - ks.FADE)  # at least the first frames, early
    tts.first_frames = 0
    try:
        (whole,) = await pieces(tts, text)
    finally:
        tts.first_frames = 16
    joined = np.concatenate(spliced)
    assert joined.size == whole.size
    assert np.array_equal(joined[head.size + ks.FADE:], whole[head.size + ks.FADE:])  # one join, then identical
    assert log_mel_distance(joined, whole) < SPLICED_MAX_DB


def test_the_spliced_first_clause_still_reads_right(tts: KokoroTts, assets) -> None:
    asr = WhisperAsr(assets.folder("whisper-base"))
    asr.load()
    try:
        audio = np.concatenate(asyncio.run(pieces(tts, "北京是中国的首都。")))
        heard = asyncio.run(asr.transcribe(resample(audio, tts.sample_rate, asr.sample_rate)))
    finally:
        asr.close()
    assert says(heard, "北京") and says(heard, "中国"), heard  # 北京 is in the early frames


def test_the_head_is_long_enough_for_the_rest_to_be_ready() -> None:
    short, long = ks.Span(0, 8, 40), ks.Span(0, 8, 208)
    assert ks.head_frames(short, 16) == 16
    assert ks.head_frames(long, 16) == 73  # 35 % of the 208 frames: the whole span is decoded at 7–9 ms a 25 ms frame
