"""Kokoro's calibrated decoder against the export's own: speed, distance, and how Whisper hears it.

    .venv/bin/python benchmarks/kokoro_calibrated.py [--repeats 3]

On a quiet machine, both decoders loaded side by side (the calibrated one built into the model store
first if it is not there, and timed):
- over the bench's three replies and the first six round-trip sentences (none of them among
  ``kokoro_calibrated.CALIBRATION``): each text's first piece's early head as the TTS decodes it
  (``tts.first_frames`` voiced frames or more after the lead), best of ``--repeats``; per piece, the
  whole voiced span's time per 25 ms frame, and the log-mel distance of the calibrated rendering from
  the export's;
- the twenty sentences of ``benchmarks/tts_heard.py`` synthesized by each (as it streams, reply voice,
  ``tts.onset_frames``), heard by Whisper base (int8, beam 5, no rescoring): CER and syllable error rate.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, config, logs  # noqa: E402
from assistant.audio.metrics import log_mel_distance  # noqa: E402
from assistant.commands.bench import REPLIES  # noqa: E402
from assistant.commands.npu import SENTENCES  # noqa: E402
from benchmarks.tts_heard import OTHERS, heard_errors  # noqa: E402
from models import kokoro_split as ks  # noqa: E402
from models.kokoro_tts import SILENT, KokoroTts  # noqa: E402
from models.whisper_asr import WhisperAsr  # noqa: E402


def decode(tts: KokoroTts, front: ks.Front, start: int, end: int) -> np.ndarray:
    import onnxruntime as ort

    audio = tts._worker.call(tts._decode, front, start, end, ort.RunOptions())
    assert audio is not None
    return audio


def timed(tts: KokoroTts, front: ks.Front, start: int, end: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        decode(tts, front, start, end)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cfg = config.load(ROOT / "config.toml", ["tts.decoder='calibrated'"])
    assets = backends.assets_for(cfg)
    calibrated = backends.tts(cfg, assets)
    export = backends.tts(config.load(ROOT / "config.toml", ["tts.decoder='dynamic'"]), assets)
    assert isinstance(calibrated, KokoroTts) and isinstance(export, KokoroTts) and calibrated.calibrated
    built = calibrated.calibrated.is_file()
    started = time.perf_counter()
    calibrated.load()
    print(f"calibrated decoder: {calibrated.calibrated} "
          f"({'found' if built else f'built in {time.perf_counter() - started:.0f} s'})")
    export.load()
    texts = [text for _, text in REPLIES] + list(SENTENCES[:6])
    rows: dict[str, list[float]] = {"head_export": [], "head_calibrated": [], "frame_export": [],
                                    "frame_calibrated": [], "log_mel": []}
    for text in texts:
        for index, phonemes in enumerate(export.pieces(text)):
            front = export.front(phonemes)
            s = ks.span(front, phonemes, SILENT, cfg.tts.onset_frames)
            head = min(s.end, s.voice + ks.head_frames(s, cfg.tts.first_frames))
            for name, tts in (("export", export), ("calibrated", calibrated)):
                decode(tts, front, s.start, s.end)  # warm for this length
                if index == 0:  # a text's first piece: its early head is its first sound
                    rows[f"head_{name}"].append(timed(tts, front, s.start, head, args.repeats))
                rows[f"frame_{name}"].append(timed(tts, front, s.start, s.end, 1) / s.frames)
            rows["log_mel"].append(log_mel_distance(decode(calibrated, front, s.start, s.end),
                                                    decode(export, front, s.start, s.end)))
    p50 = {k: statistics.median(v) for k, v in rows.items()}
    print(f"\n{len(rows['log_mel'])} pieces of {len(texts)} texts, this machine, best of {args.repeats} per head\n")
    print("| decoder | first piece's head p50 (s) | per 25 ms frame p50 (ms) | "
          "log-mel from the export's, mean / max (dB) |")
    print("|---|---|---|---|")
    print(f"| the export's (dynamic int8) | {p50['head_export']:.3f} | {1000 * p50['frame_export']:.2f} | 0 |")
    print(f"| calibrated | {p50['head_calibrated']:.3f} | {1000 * p50['frame_calibrated']:.2f} | "
          f"{statistics.mean(rows['log_mel']):.2f} / {max(rows['log_mel']):.2f} |")

    asr = WhisperAsr(assets.folder("whisper-base"), beam_size=5)
    asr.load()
    heard_texts = (*SENTENCES, *OTHERS)
    print("\n| decoder | CER, round-trip ten | CER, other ten | CER, all | syllable error rate, all |")
    print("|---|---|---|---|---|")
    try:
        for name, tts in (("the export's", export), ("calibrated", calibrated)):
            tts.onset_frames = cfg.tts.onset_frames
            means = heard_errors(asr, tts, heard_texts)
            print(f"| {name} | " + " | ".join(f"{m:.3f}" for m in means) + " |", flush=True)
    finally:
        asr.close()
        calibrated.close()
        export.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
