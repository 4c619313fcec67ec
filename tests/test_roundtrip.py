"""Speech out and back in: Kokoro says three sentences, Whisper writes them down again."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import numpy as np
import pytest

from assistant.audio.resample import resample
from assistant.audio.wav import read_wav
from models.kokoro_tts import KokoroTts
from models.whisper_asr import WhisperAsr
from tests.conftest import ROOT, says

SENTENCES = ["今天天气很好，我们一起去公园散步吧。", "请把客厅的灯关掉。", "明天早上八点提醒我开会。"]


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate over the Chinese characters (punctuation and spaces ignored)."""
    ref = re.sub(r"[^\u4e00-\u9fff]", "", reference)
    hyp = re.sub(r"[^\u4e00-\u9fff]", "", hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(len(ref), 1)


def test_cer_counts_edits():
    assert cer("你好世界", "你好世界。") == 0
    assert cer("你好世界", "你坏世界") == 0.25
    assert cer("你好", "") == 1.0


@pytest.mark.slow
def test_tts_round_trip_character_error_rate_is_at_most_ten_percent(assets):
    tts = KokoroTts(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx"),
                    assets.path("kokoro-v1.0-int8", "vocab.json"),
                    assets.path("kokoro-zh-voices", "zf_xiaoxiao.bin"))
    asr = WhisperAsr(assets.folder("whisper-base"))
    tts.load()
    asr.load()
    try:
        async def round_trip(text: str) -> str:
            audio = np.concatenate([p async for p in tts.synthesize(text)])
            return await asr.transcribe(resample(audio, tts.sample_rate, 16000))

        heard = [asyncio.run(round_trip(s)) for s in SENTENCES]
    finally:
        tts.close()
        asr.close()
    assert cer("".join(SENTENCES), "".join(heard)) <= 0.10, heard


@pytest.mark.slow
def test_say_writes_speech_to_a_file(tmp_path):
    out = tmp_path / "say.wav"
    result = subprocess.run([sys.executable, "-m", "assistant", "say", "你好，我是听说。", "-o", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    audio = read_wav(out, 16000)
    assert 0.8 < len(audio) / 16000 < 4.0
    assert np.abs(audio).max() > 0.05


@pytest.mark.slow
def test_file_prints_transcript_and_reply_and_writes_the_spoken_answer(tmp_path):
    out = tmp_path / "answer.wav"
    result = subprocess.run([sys.executable, "-m", "assistant", "file", str(ROOT.parent / "shared" / "audio" / "real"
                                                                            / "ask_who_are_you.wav"), "-o", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    heard, answered = result.stdout.strip().splitlines()[:2]
    assert heard.startswith("你: ") and "你是谁" in heard
    assert answered.startswith("听说: ") and re.search(r"[\u4e00-\u9fff]", answered)
    audio = read_wav(out, 16000)
    assert len(audio) / 16000 > 0.5
    assert np.abs(audio).max() > 0.05


@pytest.mark.slow
def test_transcribe_prints_one_line_per_file(tmp_path):
    clips = [ROOT.parent / "shared" / "audio" / "real" / n for n in ("ask_who_are_you.wav", "hey_xiaozhi.wav")]
    result = subprocess.run([sys.executable, "-m", "assistant", "transcribe", *map(str, clips)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == [str(c) for c in clips]
    assert says(lines[0].split("\t")[1], "名字")
    assert says(lines[1].split("\t")[1], "小智")  # by its sound: another CPU may write the homophone 小志
