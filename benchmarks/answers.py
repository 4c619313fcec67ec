"""The answer evaluation: every request of a question set through the assistant's answer path, judged.

    .venv/bin/python benchmarks/answers.py [--questions benchmarks/questions.toml]
        [--variants 0.5b,0.5b-before,1.5b] [--only CATEGORY] [--show-failures]

Each variant runs in a process of its own (a fresh model, a cold KV cache, its own peak RSS) over
every item, and the table gives the acceptable rate per category and overall, the first clause
(request → first clause of text, the point the TTS can start) for replies the LLM wrote, its
speed and the process's peak RSS. Variants:

- `0.5b`, `1.5b`: the default answer path (router with the honest limits, the prompt and examples
  of models/chat.py, the reply guard) with Qwen2.5-Coder 0.5B or 1.5B;
- `…-before`: as the assistant was before the evaluation existed — the old prompt (rules and
  examples inline, "听说：" tags), no honest limits in the router, no reply guard, no command-word
  correction, temperature 0.7;
- `…-noguard`, `…-nolimits`: the default with one of those two parts off;
- `…-t0.3` (or any `-tX`): the default at another sampling temperature (the default is 0, greedy);
- `…-c0.15` (any `-cX`): the reply guard's doubt threshold (`llm.min_confidence`; `-c0` is off);
- `…-noconf`: no logits processor reading the model's confidence (what reading it costs).

Outcomes are counted as in the spoken evaluation: right, asked again, unsure (这个我不太确定),
wrong. ``--sweep 0.1,0.2`` puts each LLM reply's recorded pieces (with the model's confidence)
through the reply guard again at each doubt threshold and judges what it lets through;
``--from-json`` does that (and the table) for an earlier run's ``--json``.

Sampling is seeded (--seed), so a run is repeatable on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.answer_eval import OUTCOMES, classify

HERE = Path(__file__).resolve().parent
MODELS = {"0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m", "1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m"}
BEFORE_PROMPT = (
    "你是“听说”，一个在本机离线运行的中文语音助手。你说的每个字都会被直接朗读给用户听。\n"
    "规则：\n"
    "1. 用简体中文，像面对面聊天一样自然、口语化。\n"
    "2. 回答不超过四十个字，先说结论；用户明确要求详细时才多说。\n"
    "3. 只输出纯文本：不要Markdown、标题、列表、编号、代码、表情符号或特殊符号。\n"
    "4. 没听清或问题不明确，就用一句话反问；不知道就直说不知道，不要编造。\n"
    "5. 报时、算数、提醒、待办、音量和设备状态由本机工具处理，你不用回答这些。\n"
    "示例：\n"
    "用户：北京是哪个国家的首都？\n听说：北京是中国的首都。\n"
    "用户：我明天要早起，有什么建议？\n听说：今晚早点睡，把闹钟放远一点，起床先喝杯水。\n"
    "用户：给我讲个很短的笑话。\n听说：铅笔问橡皮：你怎么越来越瘦了？橡皮说：都是为你擦错误擦的。"
)  # the system prompt as it was before this evaluation (examples inline, with speaker tags)


class Counted:
    """The LLM with its pieces (about one token each) counted: tokens/s after the first, per reply,
    and every reply's pieces with the model's confidence in each (for ``--sweep``)."""

    def __init__(self, llm: Any) -> None:
        self.llm, self.history, self.speeds = llm, llm.history, []  # type: list[float]
        self.last: tuple[str, list[tuple[str, float]]] = ("", [])  # (request, scored pieces) of the last reply

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None:
        self.llm.stop()

    async def scored(self, text: str) -> Any:
        times, pieces = [], []  # type: list[float], list[tuple[str, float]]
        self.last = (text, pieces)
        try:
            async for piece in self.llm.scored(text):
                times.append(time.perf_counter())
                pieces.append((piece.text, piece.confidence))
                yield piece
        finally:
            if len(times) > 4:
                self.speeds.append((len(times) - 1) / (times[-1] - times[0]))

    async def reply(self, text: str) -> Any:
        async for piece in self.scored(text):
            yield piece.text


def run_variant(variant: str, questions: Path, only: str | None, seed: int) -> dict[str, Any]:
    """(child process) Every item through one variant; outcomes and measurements as a dict."""
    from assistant import backends, respond
    from assistant.answer_eval import load_questions, run_item
    from assistant.config import load
    from assistant.text.normalize import preload
    from assistant.tools.answers import Tools, Volume
    from assistant.tools.store import Store

    size, *tweaks = variant.split("-")
    overrides = [f'llm.model="{MODELS[size]}"']
    overrides += [f"llm.temperature={t[1:]}" for t in tweaks if t.startswith("t")]
    overrides += [f"llm.min_confidence={t[1:]}" for t in tweaks if t.startswith("c")]
    if "before" in tweaks:
        overrides.append(f"llm.system_prompt={json.dumps(BEFORE_PROMPT, ensure_ascii=False)}")
        overrides.append("llm.temperature=0.7")
    cfg = load(HERE.parent / "config.toml", overrides)
    rules, items = load_questions(questions)
    items = [i for i in items if only is None or i.cat == only]
    preload()
    raw = backends.llm(cfg, backends.assets_for(cfg))
    raw.seed = seed  # type: ignore[attr-defined]
    if "noconf" in tweaks:
        raw._confidence = None  # type: ignore[attr-defined]  # no logits processor: what reading it costs
    raw.load()
    llm = Counted(raw)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "eval.sqlite3")
        tools = Tools(store, lambda: datetime.now().astimezone(), Volume(device="null"))
        responder = respond.for_config(cfg, llm, tools)
        responder.honest_limits = not ({"before", "nolimits"} & set(tweaks))
        if {"before", "nohot"} & set(tweaks):
            responder.hotwords = None
        if {"before", "noguard"} & set(tweaks):
            responder.guard = None  # the LLM's reply as it comes, to measure what the guard does

        async def all_items() -> list[Any]:
            done = []
            for item in items:
                llm.last = ("", [])
                done.append((await run_item(responder, item, rules, store), llm.last))
            return done

        outcomes = asyncio.run(all_items())
        store.close()
    raw.close()
    return {"variant": variant, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tokens_per_s": statistics.median(llm.speeds) if llm.speeds else None,
            "outcomes": [{"cat": o.item.cat, "ask": o.item.ask, "reply": o.reply, "by": o.by,
                          "first_clause_s": o.first_clause_s, "reply_s": o.reply_s, "pieces": o.pieces,
                          "outcome": classify(o.reply, o.problems)[0], "problems": o.problems,
                          "request": last[0] if o.by == "llm" else "",
                          "scored": last[1] if o.by == "llm" else []} for o, last in outcomes]}


def table(results: list[dict[str, Any]], show_failures: bool) -> None:
    cats = list(dict.fromkeys(o["cat"] for r in results for o in r["outcomes"]))
    print("| variant | " + " | ".join(cats)
          + " | **overall** | asked again | unsure | **wrong** | LLM first clause p50 / p95 (s) | tokens/s "
            "| peak RSS (MB) |")
    print("|---" * (len(cats) + 8) + "|")
    for r in results:
        by_cat: dict[str, list[bool]] = defaultdict(list)
        for o in r["outcomes"]:
            by_cat[o["cat"]].append(not o["problems"])
        rates = [f"{100 * sum(v) / len(v):.0f} %" for c in cats for v in [by_cat[c]]]
        everything = [ok for v in by_cat.values() for ok in v]
        llm = [o for o in r["outcomes"] if o["by"] == "llm"]
        first = sorted(o["first_clause_s"] for o in llm)
        p95 = first[min(len(first) - 1, round(0.95 * (len(first) - 1)))] if first else float("nan")
        timing = f"{statistics.median(first):.3f} / {p95:.3f} ({len(first)} replies)" if first else "–"
        tps = f"{r['tokens_per_s']:.0f}" if r.get("tokens_per_s") else "–"
        overall = f"**{100 * sum(everything) / len(everything):.1f} %** ({sum(everything)}/{len(everything)})"
        kinds = [f"{sum(o.get('outcome') == k for o in r['outcomes'])}" for k in ("asked", "unsure", "wrong")]
        print(f"| {r['variant']} | " + " | ".join(rates) + f" | {overall} | " + " | ".join(kinds)
              + f" | {timing} | {tps} | {r['rss_mb']:.0f} |")
    if show_failures:
        for r in results:
            print(f"\n{r['variant']}: not acceptable")
            for o in r["outcomes"]:
                if o["problems"]:
                    print(f"  [{o['cat']}] {o['ask']} → {o['reply']!r} ({o['by']}): {'; '.join(o['problems'])}")


def sweep(results: list[dict[str, Any]], questions: Path, only: str | None, thresholds: list[float]) -> None:
    """What the reply guard's doubt check would have made of each variant's LLM replies, threshold by
    threshold: the recorded pieces go through the same ``ClauseGuard`` again (it is pure), and the
    reply it lets through is judged. The outcome of a tool's answer does not change."""
    from dataclasses import replace

    from assistant.answer_eval import judge, load_questions
    from assistant.config import load
    from assistant.text.guard import ClauseGuard, GuardOptions

    cfg = load(HERE.parent / "config.toml", [])
    rules, items = load_questions(questions)
    items = [i for i in items if only is None or i.cat == only]
    base = GuardOptions(soft_chars=cfg.llm.reply_soft_chars, max_chars=cfg.llm.reply_max_chars)
    print("\n| variant | doubt below | right | asked again | unsure | wrong | right made unsure | wrong made unsure |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        plain = [o["outcome"] for o in r["outcomes"]]
        for threshold in thresholds:
            now = []
            for item, o in zip(items, r["outcomes"], strict=True):
                if o["by"] != "llm":
                    now.append(o["outcome"])
                    continue
                guard = ClauseGuard(replace(base, min_confidence=threshold), request=o["request"])
                for text, confidence in o["scored"]:
                    guard.feed(text, confidence)
                    if guard.ended:
                        break
                guard.finish()
                reply = guard.said.strip()
                now.append(classify(reply, judge(item, reply, rules))[0])
            count = {k: sum(x == k for x in now) for k in OUTCOMES}
            lost = sum(a == "right" and b == "unsure" for a, b in zip(plain, now, strict=True))
            caught = sum(a == "wrong" and b == "unsure" for a, b in zip(plain, now, strict=True))
            print(f"| {r['variant']} | {threshold:g} | {count['right']} | {count['asked']} | {count['unsure']} "
                  f"| {count['wrong']} | {lost} | {caught} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=HERE / "questions.toml")
    parser.add_argument("--variants",
                        default="0.5b-before,0.5b,0.5b-noguard,0.5b-nolimits,0.5b-t0.3,0.5b-t0.7,1.5b")
    parser.add_argument("--only", default=None, help="one category")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--show-failures", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write every outcome here")
    parser.add_argument("--sweep", default="", help="doubt thresholds to try offline on the recorded replies, "
                                                    "e.g. 0.2,0.3,0.4")
    parser.add_argument("--from-json", type=Path, default=None, help="no run: the table (and --sweep) of an earlier "
                                                                      "--json")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # the child process's variant
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_variant(args.one, args.questions, args.only, args.seed), ensure_ascii=False))
        return 0
    results = [] if args.from_json is None else json.loads(args.from_json.read_text(encoding="utf-8"))
    for variant in args.variants.split(",") if args.from_json is None else []:
        print(f"running {variant} …", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--one", variant, "--questions", str(args.questions), "--seed", str(args.seed)]
        if args.only:
            cmd += ["--only", args.only]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"answers: variant {variant} failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    if args.json is not None:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    table(results, args.show_failures)
    if args.sweep:
        sweep(results, args.questions, args.only, [float(t) for t in args.sweep.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
