"""The phrase cache: round trips, keys, corrupt files, atomic writes, and warming through a TTS."""

from __future__ import annotations

import asyncio
import os
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from assistant.phrase_cache import PhraseCache, tts_key, warm
from models.protocols import Samples

KEY = tts_key("a" * 64, "zf_xiaoxiao", 1.0)


def tone(seconds: float, rate: int = 24000, level: float = 0.3) -> Samples:
    t = np.arange(round(seconds * rate)) / rate
    return (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


class ScriptedTts:
    """A ``Tts`` that 'speaks' each text as a tone lasting 0.1 s per character, in two pieces,
    and remembers what it was asked to say."""

    sample_rate = 16000

    def __init__(self, fail_on: str | None = None) -> None:
        self.said: list[str] = []
        self.fail_on = fail_on
        self.closed_streams = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None: ...

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        self.said.append(text)
        audio = tone(0.1 * len(text), self.sample_rate)
        try:
            for piece in np.array_split(audio, 2):
                await asyncio.sleep(0)
                if text == self.fail_on:
                    raise RuntimeError("synthesis failed")
                yield piece
        finally:
            self.closed_streams += 1


def cache_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_put_get_round_trip(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "phrases", KEY)
    audio = tone(0.8)
    assert cache.put("你好，我在。", audio, 24000)

    hit = cache.get("你好，我在。")
    assert hit is not None
    got, rate = hit
    assert rate == 24000
    assert got.dtype == np.float32
    assert len(got) == len(audio)
    np.testing.assert_allclose(got, audio, atol=1 / 32767)

    again = PhraseCache(tmp_path / "phrases", KEY).get("  你好，我在。\n")  # a new process, stray whitespace
    assert again is not None
    np.testing.assert_array_equal(again[0], got)


def test_missing_phrase_is_none(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "never-created", KEY)
    assert cache.get("好的。") is None
    assert not (tmp_path / "never-created").exists()


def test_loud_and_broken_samples_are_clipped_not_wrapped(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    assert cache.put("x", np.array([1.5, -2.0, np.nan, 0.5], np.float32), 16000)
    hit = cache.get("x")
    assert hit is not None
    np.testing.assert_allclose(hit[0], [1.0, -1.0, 0.0, 0.5], atol=1 / 32767)


def test_empty_audio_is_a_valid_entry(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    assert cache.put("……", np.zeros(0, np.float32), 24000)
    hit = cache.get("……")
    assert hit is not None and len(hit[0]) == 0 and hit[1] == 24000


@pytest.mark.parametrize("other", [
    tts_key("a" * 64, "zm_yunjian", 1.0),  # another voice
    tts_key("a" * 64, "zf_xiaoxiao", 1.2),  # another speed
    tts_key("b" * 64, "zf_xiaoxiao", 1.0),  # another model
    ("a" * 64, "zf_xiaoxiao"),  # fewer parts
])
def test_key_includes_voice_speed_and_model(tmp_path: Path, other: tuple[str, ...]) -> None:
    PhraseCache(tmp_path, KEY).put("好的。", tone(0.5), 24000)
    assert PhraseCache(tmp_path, other).get("好的。") is None
    assert PhraseCache(tmp_path, KEY).get("好的。") is not None


def test_key_parts_do_not_run_together(tmp_path: Path) -> None:
    assert PhraseCache(tmp_path, ("ab", "c")).path("x") != PhraseCache(tmp_path, ("a", "bc")).path("x")
    assert PhraseCache(tmp_path, ("a",)).path("b c") != PhraseCache(tmp_path, ("a", "b")).path("c")


def test_speed_is_spelled_one_way() -> None:
    assert tts_key("m", "v", 1) == tts_key("m", "v", 1.0)


def test_different_text_misses(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.put("好的。", tone(0.5), 24000)
    assert cache.get("好的！") is None


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated", "header only", "stereo", "8-bit"])
def test_corrupt_file_is_ignored_and_removed(tmp_path: Path, damage: str) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.put("好的。", tone(0.5), 24000)
    path = cache.path("好的。")
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot a wav at all" * 50)
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2 + 1])
    elif damage == "header only":
        path.write_bytes(data[:30])
    else:
        with wave.open(str(path), "wb") as w:
            w.setnchannels(2 if damage == "stereo" else 1)
            w.setsampwidth(2 if damage == "stereo" else 1)
            w.setframerate(24000)
            w.writeframes(b"\x80" * 400)

    assert cache.get("好的。") is None
    assert not path.exists()
    assert cache.put("好的。", tone(0.5), 24000)  # and the phrase can be stored again
    assert cache.get("好的。") is not None


def test_unreadable_entry_is_a_miss_and_left_alone(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.path("好的。").mkdir()
    assert cache.get("好的。") is None
    assert cache.path("好的。").is_dir()


def test_write_leaves_one_file_and_no_temporary_files(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path / "phrases", KEY)
    for i in range(3):
        assert cache.put("你好。", tone(0.2 + 0.1 * i), 24000)
    assert cache_files(tmp_path / "phrases") == [cache.path("你好。").name]


def test_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.put("旧的。", tone(0.3), 24000)

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    assert cache.put("你好。", tone(0.5), 24000) is False
    assert cache_files(tmp_path) == [cache.path("旧的。").name]


def test_write_to_an_unwritable_place_fails_quietly(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    assert PhraseCache(blocker, KEY).put("你好。", tone(0.2), 24000) is False


def test_put_rejects_bad_audio(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    with pytest.raises(ValueError, match="mono"):
        cache.put("x", np.zeros((2, 10), np.float32), 24000)
    with pytest.raises(ValueError, match="sample rate"):
        cache.put("x", np.zeros(10, np.float32), 0)


async def test_warm_synthesizes_only_missing_phrases(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.put("你好，我在。", tone(0.5, 16000), 16000)
    tts = ScriptedTts()

    made = await warm(cache, tts, ["你好，我在。", "好的。", "抱歉，我没听清。", "好的。", "  ", ""])

    assert made == ["好的。", "抱歉，我没听清。"]
    assert tts.said == ["好的。", "抱歉，我没听清。"]
    hit = cache.get("抱歉，我没听清。")
    assert hit is not None
    assert hit[1] == 16000
    np.testing.assert_allclose(hit[0], tone(0.8, 16000), atol=1 / 32767)  # both pieces, joined

    assert await warm(cache, tts, ["你好，我在。", "好的。", "抱歉，我没听清。"]) == []
    assert len(tts.said) == 2


async def test_warm_replaces_a_corrupt_entry(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    cache.path("好的。").write_bytes(b"RIFF junk")
    tts = ScriptedTts()
    assert await warm(cache, tts, ["好的。"]) == ["好的。"]
    assert cache.get("好的。") is not None


async def test_warm_failure_propagates_and_stores_nothing_for_that_phrase(tmp_path: Path) -> None:
    cache = PhraseCache(tmp_path, KEY)
    tts = ScriptedTts(fail_on="坏的。")
    with pytest.raises(RuntimeError, match="synthesis failed"):
        await warm(cache, tts, ["好的。", "坏的。", "后面的。"])
    assert cache.get("好的。") is not None
    assert cache.get("坏的。") is None
    assert tts.said == ["好的。", "坏的。"]
    assert tts.closed_streams == 2
