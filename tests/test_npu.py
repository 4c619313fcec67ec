"""The NPU scheduler: pinned per-core threads, one turn at a time when serialised, hand-over between tokens."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from models.npu import NpuScheduler, core_mask


def test_core_masks_name_the_two_cores_and_refuse_core_2() -> None:
    assert (core_mask(0), core_mask(1)) == (1, 2)
    with pytest.raises(ValueError, match="cores 0 and 1, not 2"):
        core_mask(2)
    with pytest.raises(ValueError, match="mode"):
        NpuScheduler("parallel")


def test_each_core_has_its_own_thread() -> None:
    npu = NpuScheduler()
    try:
        names = {core: npu.worker(core).call(lambda: threading.current_thread().name) for core in (0, 1, 0)}
        assert names[0].startswith("npu0") and names[1].startswith("npu1")
        assert npu.worker(0) is npu.worker(0)
    finally:
        npu.close()


async def _overlap(mode: str) -> int:
    """Run two 50 ms jobs on the two cores at once; the most that were inside a job together."""
    npu = NpuScheduler(mode)
    inside, most = 0, 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with lock:
            inside -= 1

    try:
        await asyncio.gather(npu.run(0, "tts", job), npu.run(1, "tts", job))
    finally:
        npu.close()
    return most


def test_serialised_runs_one_job_at_a_time_and_concurrent_overlaps() -> None:
    assert asyncio.run(_overlap("serialised")) == 1
    assert asyncio.run(_overlap("concurrent")) == 2


def test_a_long_job_hands_over_between_steps_to_a_waiting_job() -> None:
    """The LLM holds the turn for a whole reply; a TTS job that asks gets it at the next token."""
    npu = NpuScheduler("serialised")
    order: list[str] = []
    tts_asked = threading.Event()

    def llm() -> None:
        with npu.turn("llm"):
            for token in range(6):
                order.append(f"token{token}")
                if token == 1:
                    threading.Thread(target=tts).start()
                    while npu.waiting() == 0:
                        time.sleep(0.001)
                    tts_asked.set()
                npu.hand_over("llm")

    def tts() -> None:
        with npu.turn("tts"):
            order.append("tts")

    llm()
    assert tts_asked.is_set()
    assert order == ["token0", "token1", "tts", "token2", "token3", "token4", "token5"]
    assert npu.waited_s["tts"] > 0


def test_hand_over_is_free_when_nobody_waits_or_when_concurrent() -> None:
    for mode in ("serialised", "concurrent"):
        npu = NpuScheduler(mode)
        with npu.turn("llm"):
            assert npu.hand_over("llm") == 0.0
        assert npu.waiting() == 0


def test_turns_are_served_in_the_order_they_were_asked() -> None:
    npu = NpuScheduler("serialised")
    served: list[int] = []
    threads = []

    def job(i: int) -> None:
        with npu.turn(f"job{i}"):
            served.append(i)

    with npu.turn("first"):
        for i in range(4):
            t = threading.Thread(target=job, args=(i,))
            t.start()
            threads.append(t)
            while npu.waiting() < i + 1:
                time.sleep(0.001)
    for t in threads:
        t.join(timeout=5)
    assert served == [0, 1, 2, 3]
