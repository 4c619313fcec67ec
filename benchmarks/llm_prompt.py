"""Time to first token of the local LLM with the system prompt's KV state reused, against
evaluating the whole prompt from scratch for every reply.

    .venv/bin/python benchmarks/llm_prompt.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.assets import Assets
from models.llama_llm import History, LlamaLlm

SHARED_MODELS = Path(__file__).resolve().parent.parent.parent / "shared" / "models"
QUESTIONS = ["你是谁？", "北京是哪个国家的首都？", "给我讲个很短的笑话。", "为什么天空是蓝色的？"]


def cold_first_token(llm: LlamaLlm, question: str) -> float:
    """(worker thread) Forget the KV cache, then time the prompt evaluation and the first token."""
    model = cast(Any, llm._model)
    model.reset()
    started = time.perf_counter()
    stream = model.create_chat_completion(messages=History(0).messages(llm.system_prompt, question), stream=True,
                                          max_tokens=8)
    for chunk in stream:
        if chunk["choices"][0]["delta"].get("content"):
            break
    elapsed = time.perf_counter() - started
    stream.close()
    return elapsed


async def warm_first_token(llm: LlamaLlm, question: str) -> float:
    """Time the first token with only the system prompt in the KV cache (the user turn is new)."""
    llm.history.clear()
    model = cast(Any, llm._model)
    llm._worker.call(model.load_state, llm._system_state)
    started = time.perf_counter()
    async for _ in llm.reply(question):
        elapsed = time.perf_counter() - started
        llm.stop()
        return elapsed
    return float("nan")


async def main(repeats: int) -> None:
    assets = Assets([SHARED_MODELS])
    llm = LlamaLlm(assets.path("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
                   seed=1234, max_tokens=8)
    llm.load()
    try:
        cold, warm = [], []
        for _ in range(repeats):
            for q in QUESTIONS:
                cold.append(llm._worker.call(cold_first_token, llm, q))
                warm.append(await warm_first_token(llm, q))
    finally:
        llm.close()
    print(f"system prompt: {len(llm._system_tokens)} tokens; {len(cold)} replies each way\n")
    print("| system prompt | first token p50 (s) | min (s) | max (s) |")
    print("|---|---|---|---|")
    for name, xs in (("evaluated for every reply", cold), ("KV state reused", warm)):
        print(f"| {name} | {statistics.median(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} |")
    print(f"\nsaving: {statistics.median(cold) - statistics.median(warm):.3f} s per reply (p50)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    asyncio.run(main(parser.parse_args().repeats))
