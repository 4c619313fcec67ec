"""How well Whisper base hears the assistant's own voice: Kokoro as it streams (the voiced frames, the
early head spliced in), per voice and per ``tts.onset_frames``.

    .venv/bin/python benchmarks/tts_heard.py [--voices zf_xiaoxiao,zf_xiaoyi] [--onsets 0,2]

Twenty everyday sentences: the ten of ``assistant npu build``'s round trip (where the clipped onset was
found) and ten others (kept apart: they were not looked at when 2 onset frames were chosen). Each is
synthesized by ``KokoroTts.synthesize``, put between 0.3 s of silence (a room, not a clip that starts
on the first sample) and heard by Whisper base (int8, beam 5, no rescoring). Printed: the character
error rate of what was heard read out in words (``spoken_cer``), and the syllable error rate, which
does not count a homophone Whisper chose.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import config, logs  # noqa: E402
from assistant.audio.resample import resample  # noqa: E402
from assistant.backends import assets_for  # noqa: E402
from assistant.commands.npu import SENTENCES, spoken_cer  # noqa: E402
from assistant.text.cer import ser  # noqa: E402
from models.kokoro_tts import KokoroTts  # noqa: E402
from models.whisper_asr import WhisperAsr  # noqa: E402

OTHERS = ("你好，我是听说，有什么可以帮你的吗？", "现在是下午三点十五分，外面正在下雨。", "好的，我已经帮你记下来了。",
          "番茄炒蛋很简单。先把两个番茄切块，三个鸡蛋打散，加一点盐。",
          "为什么天空是蓝色的？因为阳光里的蓝光被空气散射得最多。", "推荐你看《活着》，这本书不长，周末就能读完。",
          "客厅的灯已经关了。", "明天多云转晴，最高气温二十三度。", "一米等于一百厘米。", "十五加二十七等于四十二。")
QUIET_S = 0.3


async def spoken(tts: KokoroTts, text: str) -> np.ndarray:
    quiet = np.zeros(int(QUIET_S * tts.sample_rate), np.float32)
    return np.concatenate([quiet, *[a async for a in tts.synthesize(text)], quiet])


def heard_errors(asr: WhisperAsr, tts: KokoroTts, texts: tuple[str, ...]) -> list[float]:
    """CER on the first ten, on the rest, on all, and the syllable error rate on all, as Whisper hears
    ``tts`` say each of ``texts``."""
    heard = [asyncio.run(asr.transcribe(resample(asyncio.run(spoken(tts, t)), tts.sample_rate, asr.sample_rate)))
             for t in texts]
    cers = [spoken_cer(t, h) for t, h in zip(texts, heard, strict=True)]
    sers = [ser(t, h) for t, h in zip(texts, heard, strict=True)]
    return [statistics.mean(x) for x in (cers[:10], cers[10:], cers, sers)]


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="zf_xiaoxiao", help="Kokoro voices, comma-separated")
    parser.add_argument("--onsets", default="0,2", help="tts.onset_frames values to compare")
    args = parser.parse_args()
    cfg = config.load(ROOT / "config.toml")
    assets = assets_for(cfg)
    asr = WhisperAsr(assets.folder("whisper-base"), beam_size=5)
    asr.load()
    texts = (*SENTENCES, *OTHERS)
    print("| voice | tts.onset_frames | CER, round-trip ten | CER, other ten | CER, all | syllable error rate, all |")
    print("|---|---|---|---|---|---|")
    try:
        for voice in args.voices.split(","):
            tts = KokoroTts(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx"),
                            assets.path("kokoro-v1.0-int8", "vocab.json"),
                            assets.path("kokoro-zh-voices", f"{voice}.bin"))
            tts.load()
            try:
                for onset in (int(x) for x in args.onsets.split(",")):
                    tts.onset_frames = onset
                    means = heard_errors(asr, tts, texts)
                    print(f"| {voice} | {onset} | " + " | ".join(f"{m:.3f}" for m in means) + " |", flush=True)
            finally:
                tts.close()
    finally:
        asr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
