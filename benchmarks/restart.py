"""How long a SIGKILLed worker takes to answer again, with the apology rendered at its start (as every
start did before) and without (a restart now keeps the first worker's rendering).

    .venv/bin/python benchmarks/restart.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import app, config, logs  # noqa: E402
from benchmarks.worker import restart_s  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cfg = config.load(None, ["log.level='error'", "tts.phrase_cache=false", "worker.process=true",
                             "worker.restart_backoff_s=0"])
    logs.setup(cfg.log.level, cfg.log.format)
    models = app.backends(cfg)
    loading = ExitStack()
    loading.enter_context(app.loaded(*models.all()))
    times: dict[str, list[float]] = {"apology rendered again": [], "apology kept": []}
    try:
        for _ in range(args.rounds):
            for label in times:
                if label == "apology rendered again":
                    models.worker.apology = np.zeros(0, np.float32)  # as if it were the first start
                times[label].append(restart_s(models))
                print(f"  {label}: {times[label][-1]:.2f} s", file=sys.stderr)
    finally:
        loading.close()
    print("| restart after SIGKILL | median (s) | runs |\n|---|---|---|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
