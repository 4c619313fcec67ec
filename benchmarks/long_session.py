"""The LLM's first clause over one long conversation: does each turn find its prompt in the KV cache?

    .venv/bin/python benchmarks/long_session.py [--turns N] [--pause S] [--no-ahead] [--set key=value ...]

Ten requests of one conversation (a walk in the park, then follow-ups), asked one after the other
of the configured LLM (its history as configured: ``llm.history_turns``), each reply read to its end
as the assistant reads it. Between two requests the user takes ``--pause`` seconds (the reply heard
out, the next request said), and the assistant, as it does once a reply has been heard out,
evaluates what the next prompt begins with (``prefill_history``; ``--no-ahead``: it does not, as
before). Printed per turn: the time to the first piece and to the first clause (up to its first
，。！？), and the p50 of both over the turns after the history is full, where the oldest exchange
leaves the prompt each time. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant import backends, config, logs  # noqa: E402

ASKS = ("今天天气不错，我想出去走走。", "你觉得去公园好还是去商场好？", "那我带点什么东西比较好？", "公园里人多吗？",
        "我可以带狗去吗？", "公园附近有什么好吃的？", "我该几点出发比较好？", "要是下雨了怎么办？",
        "走路去要多久？", "好的，谢谢你的建议。")
CLAUSE_END = re.compile(r"[，。！？,.!?]")


async def converse(llm: object, turns: int, pause: float, ahead: bool) -> list[tuple[float, float]]:
    times = []
    for ask in ASKS[:turns]:
        started = time.perf_counter()
        first = clause = None
        text = ""
        async for piece in llm.reply(ask):  # type: ignore[attr-defined]
            first = first if first is not None else time.perf_counter() - started
            text += piece
            if clause is None and CLAUSE_END.search(text):
                clause = time.perf_counter() - started
        assert first is not None
        times.append((first, clause if clause is not None else time.perf_counter() - started))
        print(f"  first piece {first:.3f} s, first clause {times[-1][1]:.3f} s: {ask} → {text}", flush=True)
        if ahead:
            llm.prefill_history()  # type: ignore[attr-defined]
        await asyncio.sleep(pause)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=len(ASKS))
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between a reply and the next request")
    parser.add_argument("--no-ahead", action="store_true", help="do not evaluate the next prompt's start ahead")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    cfg = config.load(None, ["log.level='error'", *args.set])
    logs.setup(cfg.log.level, cfg.log.format)
    llm = backends.llm(cfg, backends.assets_for(cfg))
    llm.load()
    try:
        times = asyncio.run(converse(llm, min(args.turns, len(ASKS)), args.pause, not args.no_ahead))
    finally:
        llm.close()
    full = times[cfg.llm.history_turns + 1:]  # the oldest exchange leaves the prompt from here on
    if full:
        first, clause = statistics.median(t[0] for t in full), statistics.median(t[1] for t in full)
        print(f"{'without' if args.no_ahead else 'with'} the next prompt's start evaluated ahead; turns "
              f"{cfg.llm.history_turns + 2}–{len(times)}: first piece p50 {first:.3f} s, "
              f"first clause p50 {clause:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
