"""How CTranslate2 should use two cores for Whisper base: its own threads, or one per decoding.

    .venv/bin/python benchmarks/asr_threads.py [--repeats 1]

The assistant decodes every short request twice from one encoder output ("pooled": the plain prompt
and the prompt with the command words), beam 5 and five hypotheses each. Each layout below loads
Whisper base (int8) once and, on the real clips under 6 s (``asr_window.clips``), times the encoder
(15 s window, as ``asr.window_s``), the two decodings one after the other, and the two decodings
side by side (each on a worker of its own, ``asynchronous=True``), and checks that the side-by-side
hypotheses are token for token the sequential ones. Printed: the median of each per clip, after one
warm-up clip. Run it on a quiet machine: its numbers are worth nothing beside another load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, logs  # noqa: E402
from assistant.config import load  # noqa: E402
from benchmarks.asr_window import clips  # noqa: E402

LAYOUTS = ((2, 1), (1, 1), (1, 2))  # (CTranslate2 threads per decoding, workers)
FRAMES = 1500  # 15 s of log-mel frames


def timed(model: Any, prompts: list[list[int]], suppress: list[int],
          audios: list[Any]) -> tuple[list[float], int, int]:
    """Medians (after the first clip) of the encoder, the two decodings one after the other, and side
    by side; how many clips gave the same hypotheses both ways; how many clips."""
    from faster_whisper.audio import pad_or_trim

    def decode(encoded: Any, prompt: list[int], samples: int) -> Any:
        return model.model.generate(encoded, [prompt], beam_size=5, num_hypotheses=5, asynchronous=True,
                                    max_length=min(448, len(prompt) + 15 * samples // 16000 + 16),
                                    return_scores=True, suppress_tokens=suppress)[0]

    times: list[tuple[float, float, float]] = []
    same = 0
    for audio in audios:
        features = model.feature_extractor(audio)
        t0 = time.perf_counter()
        encoded = model.encode(pad_or_trim(features, FRAMES))
        t1 = time.perf_counter()
        one_by_one = [decode(encoded, p, len(audio)).result() for p in prompts]
        t2 = time.perf_counter()
        side = [job.result() for job in [decode(encoded, p, len(audio)) for p in prompts]]
        t3 = time.perf_counter()
        same += all(a.sequences_ids == b.sequences_ids for a, b in zip(one_by_one, side, strict=True))
        times.append((t1 - t0, t2 - t1, t3 - t2))
    return [statistics.median(t[i] for t in times[1:]) for i in range(3)], same, len(times)


def main() -> int:
    logs.setup()  # the models' logs to stderr: stdout keeps the results
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="passes over the clips per layout")
    args = parser.parse_args()
    from faster_whisper import WhisperModel

    short = [audio for _, _, audio in clips() if len(audio) < 6 * 16000]
    cfg = load(ROOT / "config.toml", [])
    asr = backends.asr(cfg, backends.assets_for(cfg))
    asr.load()  # for its prompts and suppressed tokens
    prompts = [asr._plain, asr._prompt]
    print(f"{len(short)} real clips under 6 s; Whisper base int8, beam 5, 5 hypotheses, both prompts\n")
    print("| CTranslate2 threads per decoding | workers | encoder | two decodings, one after the other | "
          "two decodings side by side | side by side identical |\n|---|---|---|---|---|---|")
    for threads, workers in LAYOUTS:
        model = WhisperModel(str(asr.model_dir), device="cpu", compute_type="int8", cpu_threads=threads,
                             num_workers=workers, local_files_only=True)
        medians, same, runs = timed(model, prompts, asr._suppress, [short[0]] + short * args.repeats)
        print(f"| {threads} | {workers} | " + " | ".join(f"{m:.3f} s" for m in medians) + f" | {same}/{runs} |",
              flush=True)
        del model
    asr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
