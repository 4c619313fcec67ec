"""Kokoro-82M v1.0 int8 speaking Mandarin: the real model, the real G2P, the real audio.

The text planning (clauses, pieces, normalization) is tested on its own, then the model is
checked on what a listener would notice: 24 kHz float32 sound of a plausible length, several
pieces for longer text, a stop that lands at once, and speech that the shared sherpa-onnx
keyword spotter recognises — our stand-in for a listener's ear, tones included.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from assistant.audio.resample import resample
from models.kokoro_tts import LETTERS, MAX_PHONEMES, KokoroTts, clauses, normalize, plan, split_long
from models.protocols import ModelError, Samples
from tests.conftest import SHARED, KokoroFiles

VOICES = SHARED / "models" / "kokoro-zh-voices"
KWS = SHARED / "models" / "kws-zipformer-wenetspeech-3.3M"
ONE_LONG_CLAUSE = "这是一段很长的句子没有停顿也没有什么特别的意思只是为了让模型多算一会儿好让我们在它算到一半的时候叫停"
SENTENCES = "今天天气很好，我们一起去公园散步吧。公园里有很多花，红的黄的都有。走累了，就在湖边坐一会儿。"



async def collect(tts: KokoroTts, text: str) -> list[Samples]:
    return [piece async for piece in tts.synthesize(text)]


def chinese_chars(text: str) -> int:
    return sum("\u4e00" <= c <= "\u9fff" for c in text)


# --- planning the text (no model) ---

def test_clauses_end_at_punctuation_but_not_inside_numbers() -> None:
    assert clauses("你好，今天几号？3.14和1,299元，10:30开会。") == [
        ("你好，", False), ("今天几号？", True), ("3.14和1,299元，", False), ("10:30开会。", True)]
    # closing quotes stay with their clause; punctuation alone joins the clause before it
    assert clauses("他说：“走吧！”……") == [("他说：", False), ("“走吧！”……", True)]
    assert clauses("第一行\n第二行") == [("第一行\n", True), ("第二行", True)]


def test_plan_cuts_sentences_and_keeps_every_piece_within_the_limit() -> None:
    def phonemize(clause: str) -> str:  # one "phoneme" per character is enough to test the grouping
        return clause.strip()

    text = "嗯，好的。" + "这是一个比较长的分句，" * 60 + "结束了。最后一句。"
    pieces = plan(text, phonemize, limit=100)
    assert all(0 < len(p) <= 100 for p in pieces)
    assert "".join(pieces).replace(" ", "") == text  # nothing lost, nothing added
    assert pieces[0] == "嗯， 好的。"  # too short to stand alone, so it runs to the sentence end
    assert pieces[-1] == "最后一句。"  # sentences are not merged
    long_first = plan("我们先看一下今天的第一个比较长的分句，然后再看第二个分句。", phonemize)
    assert long_first == ["我们先看一下今天的第一个比较长的分句，", "然后再看第二个分句。"]  # first piece ends early


def test_a_clause_without_punctuation_is_cut_at_word_gaps() -> None:
    words = " ".join(["ni↓xau↓"] * 200)
    parts = split_long(words, MAX_PHONEMES)
    assert len(parts) > 1
    assert all(len(p) <= MAX_PHONEMES for p in parts)
    assert " ".join(parts) == words
    assert split_long("a" * 1200, MAX_PHONEMES) == ["a" * 510, "a" * 510, "a" * 180]


def test_normalize_fixes_what_misaki_reads_badly() -> None:
    assert normalize("价格1,299元") == "价格1299元"
    assert normalize("现在是10:30") == "现在是10点30分"
    assert normalize("比分3:2") == "比分3:2"  # not a time of day
    assert normalize("用AI写") == "用 ˈAˈI 写"
    assert normalize("Google") == " ɡooɡle "
    assert normalize("把空调调到26度，音量调高，灯调暗") == "把空调条到26度，音量条高，灯条暗"  # tiáo, not diào
    assert normalize("声音调大一点") == "声音条大一点"
    for kept in ("音调高一点", "请强调到位", "空调到货了", "把人调走"):  # a tone, a stress, the noun, diào
        assert normalize(kept) == kept


def test_letter_names_use_only_kokoro_phonemes(kokoro_files: KokoroFiles) -> None:
    vocab = json.loads(kokoro_files.vocab.read_text("utf-8"))["vocab"]
    assert {c for name in LETTERS.values() for c in name} <= set(vocab)


# --- refusing bad files ---

def test_refuses_a_model_with_one_byte_flipped(kokoro_files: KokoroFiles, tmp_path: Path) -> None:
    bad = tmp_path / "kokoro-v1.0.int8.onnx"
    shutil.copyfile(kokoro_files.model, bad)
    with bad.open("r+b") as f:
        f.seek(bad.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    tts = KokoroTts(bad, kokoro_files.vocab, kokoro_files.voice)
    with pytest.raises(ModelError, match="corrupt or the wrong file"):
        tts.load()
    tts.close()


def test_refuses_missing_and_unknown_files(kokoro_files: KokoroFiles, tmp_path: Path) -> None:
    for model, vocab, voice, message in [
        (tmp_path / "none.onnx", kokoro_files.vocab, kokoro_files.voice, "not found"),
        (kokoro_files.model, kokoro_files.model, kokoro_files.voice, "corrupt or the wrong file"),
        (kokoro_files.model, kokoro_files.vocab, tmp_path / "af_heart.bin", "unknown Kokoro voice"),
    ]:
        tts = KokoroTts(model, vocab, voice)
        with pytest.raises(ModelError, match=message):
            tts.load()
        tts.close()


def test_rejects_bad_settings(kokoro_files: KokoroFiles) -> None:
    with pytest.raises(ValueError, match="threads"):
        KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, threads=0)
    with pytest.raises(ValueError, match="speed"):
        KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice, speed=5.0)


# --- the real G2P and model ---

def test_mixed_text_becomes_kokoro_phonemes(tts: KokoroTts, kokoro_files: KokoroFiles) -> None:
    vocab = set(json.loads(kokoro_files.vocab.read_text("utf-8"))["vocab"])
    pieces = tts.pieces("我用AI和Python算了3.14，花了1,299元😀！")
    assert pieces
    assert all(set(p) <= vocab for p in pieces)
    joined = " ".join(pieces)
    assert "ˈAˈI" in joined and "python" in joined  # English kept, not dropped
    assert "sa→ntjɛ↓n" in joined  # 3.14 read as 三点…
    assert "i→ʨʰjɛ→n" in joined  # 1,299 read as 一千…
    assert tts.pieces("😀……") == []  # nothing to say: no piece at all


def test_adjusting_is_read_tiao(tts: KokoroTts) -> None:
    """misaki reads 调 alone as diào; the assistant's "调到二十六度" is tiáo, and 空调 stays as it was."""
    joined = " ".join(tts.pieces("好的，已把空调调到二十六度，音量调高了。"))
    assert joined.count("tʰjau↗") == 3
    assert "tjau↘" not in joined


@pytest.mark.slow
async def test_speaks_a_sentence_at_24khz(tts: KokoroTts) -> None:
    text = "你好，今天天气怎么样？"
    pieces = await collect(tts, text)
    audio = np.concatenate(pieces)
    assert tts.sample_rate == 24000
    assert all(p.dtype == np.float32 and p.ndim == 1 for p in pieces)
    assert np.isfinite(audio).all() and np.abs(audio).max() <= 1.0
    assert np.sqrt(np.mean(audio**2)) > 0.02  # speech, not silence
    seconds = len(audio) / tts.sample_rate
    assert 0.15 * chinese_chars(text) <= seconds <= 0.45 * chinese_chars(text)


@pytest.mark.slow
async def test_longer_text_comes_in_several_pieces(tts: KokoroTts) -> None:
    pieces = await collect(tts, SENTENCES)
    assert len(pieces) >= 3
    assert all(len(p) / tts.sample_rate > 0.5 and np.sqrt(np.mean(p**2)) > 0.02 for p in pieces)
    seconds = sum(len(p) for p in pieces) / tts.sample_rate
    assert 0.15 * chinese_chars(SENTENCES) <= seconds <= 0.45 * chinese_chars(SENTENCES)


@pytest.mark.slow
async def test_stop_between_pieces_ends_the_stream(tts: KokoroTts) -> None:
    pieces = []
    async for piece in tts.synthesize(SENTENCES):
        pieces.append(piece)
        tts.stop()
    assert len(pieces) == 1
    after = await collect(tts, "好的。")  # a stop does not carry over to the next stream: 好的 is said whole
    assert 0.3 < sum(len(p) for p in after) / tts.sample_rate < 1.0


@pytest.mark.slow
async def test_stop_in_flight_ends_the_model_call_at_once(tts: KokoroTts) -> None:
    asyncio.get_running_loop().call_later(0.3, tts.stop)
    started = time.monotonic()
    pieces = await collect(tts, ONE_LONG_CLAUSE)  # one piece of about 10 s of speech
    assert pieces == []
    assert time.monotonic() - started < 2.0


@pytest.mark.slow
async def test_cancelling_the_consumer_frees_the_worker(tts: KokoroTts) -> None:
    task = asyncio.create_task(collect(tts, ONE_LONG_CLAUSE))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    started = time.monotonic()
    await asyncio.to_thread(tts.pieces, "好的")  # queued behind the cancelled call on the worker
    assert time.monotonic() - started < 1.0


@pytest.mark.slow
async def test_keywords_are_heard_in_the_speech(tts: KokoroTts, tmp_path: Path) -> None:
    import sherpa_onnx

    keywords = tmp_path / "keywords.txt"
    keywords.write_text("x iǎo ài t óng x ué @小爱同学\nd ǎ k āi k ōng t iáo @打开空调\n", "utf-8")
    spotter = sherpa_onnx.KeywordSpotter(
        tokens=str(KWS / "tokens.txt"), keywords_file=str(keywords), num_threads=1,
        encoder=str(KWS / "encoder-epoch-12-avg-2-chunk-16-left-64.int8.onnx"),
        decoder=str(KWS / "decoder-epoch-12-avg-2-chunk-16-left-64.onnx"),
        joiner=str(KWS / "joiner-epoch-12-avg-2-chunk-16-left-64.int8.onnx"))

    def heard(audio: Samples) -> list[str]:
        stream = spotter.create_stream()
        stream.accept_waveform(16000, resample(audio, tts.sample_rate, 16000))
        stream.accept_waveform(16000, np.zeros(8000, np.float32))
        stream.input_finished()
        found = []
        while spotter.is_ready(stream):
            spotter.decode_stream(stream)
            if result := spotter.get_result(stream):
                found.append(result)
                spotter.reset_stream(stream)
        return found

    assert heard(np.concatenate(await collect(tts, "小爱同学，帮我打开空调。"))) == ["小爱同学", "打开空调"]
    assert heard(np.concatenate(await collect(tts, "我们明天再见吧。"))) == []
