"""The worker RPC's messages and both sides' dispatchers, without starting a worker process."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator
from multiprocessing import Pipe
from typing import Any, get_args

import numpy as np
import pytest

from assistant.worker import messages
from assistant.worker.child import Server
from assistant.worker.messages import (
    Call,
    Cancel,
    Done,
    Exit,
    Failed,
    FromWorker,
    Item,
    LoadFailed,
    Lost,
    Next,
    Ready,
    Stop,
    ToWorker,
)
from assistant.worker.process import InferenceProcess, _Call
from models.protocols import ModelError, Scored, WorkerLost
from tests.conftest import make_config

SAMPLES = np.linspace(-1, 1, 480, dtype=np.float32)
EXAMPLES = [
    Call(1, "asr", "transcribe", (SAMPLES,)), Call(2, "llm", "scored", ("你好", [("问", "答")])), Next(2), Cancel(2),
    Stop("tts"), Exit(),
    Ready(4242, {"asr": 16000, "tts": 24000}, SAMPLES), LoadFailed("rkllm: none.so not found"),
    Item(2, Scored("你", 0.9)), Item(3, SAMPLES), Done(1, "你好"), Done(2, None), Failed(1, "worker: no call asr.x"),
    Lost(1, "the worker exited (code -9)"),
]


def same(a: object, b: object) -> bool:
    """Equal values, sample arrays (also inside messages and tuples) compared by dtype and value."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))  # type: ignore[arg-type]
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b


def test_the_examples_cover_every_message() -> None:
    classes = {*get_args(ToWorker), *get_args(FromWorker), Lost}
    assert {type(m) for m in EXAMPLES} == classes
    assert set(get_args(messages.Answer)) == {Item, Done, Failed, Lost}


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_crosses_a_pipe_unchanged_and_is_frozen(msg: Any) -> None:
    here, there = Pipe()
    here.send(msg)  # the same pickling as the worker's connection
    back = there.recv()
    assert back is not msg and same(back, msg), (back, msg)
    for f in dataclasses.fields(msg):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(msg, f.name, None)


# -- the worker's side ---------------------------------------------------------------------------
class Sent:
    """The worker's connection, as the loop's thread writes to it."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[FromWorker] = asyncio.Queue()

    def send(self, msg: FromWorker) -> None:
        self.messages.put_nowait(msg)

    async def next(self) -> FromWorker:
        return await asyncio.wait_for(self.messages.get(), 2.0)


class FakeAsr:
    async def transcribe(self, samples: np.ndarray) -> str:
        return f"{samples.size} samples"


class FakeTts:
    def __init__(self) -> None:
        self.stopped_on: list[str] = []
        self.closed = asyncio.Event()

    async def synthesize(self, text: str) -> AsyncIterator[np.ndarray]:
        try:
            for n in range(1, 10):
                yield np.full(n, 0.5, np.float32)
        finally:
            self.closed.set()

    def stop(self) -> None:
        self.stopped_on.append(threading.current_thread().name)


@pytest.mark.parametrize("msg", [("call", 1, "asr", "transcribe", ()), ("exit",), Stop("tts"), Done(1, None)],
                         ids=["old call tuple", "old exit tuple", "stop", "an answer"])
def test_the_workers_dispatcher_refuses_a_message_outside_its_set(msg: Any) -> None:
    # a Stop never reaches the dispatcher: the reading thread runs it at once
    with pytest.raises(TypeError, match=rf"worker RPC: unknown message {type(msg).__name__}"):
        Server(Sent(), {})._dispatch(msg)  # type: ignore[arg-type]


async def test_the_worker_answers_calls_streams_item_by_item_and_cancels() -> None:
    sent, tts = Sent(), FakeTts()
    server = Server(sent, {"asr": FakeAsr(), "tts": tts})  # type: ignore[arg-type]
    server._dispatch(Call(1, "asr", "transcribe", (SAMPLES,)))
    assert await sent.next() == Done(1, "480 samples")
    server._dispatch(Call(2, "asr", "no_such_method", ()))
    assert await sent.next() == Failed(2, "worker: no call asr.no_such_method")

    server._dispatch(Call(3, "tts", "synthesize", ("你好",)))
    first = await sent.next()
    assert isinstance(first, Item) and first.id == 3 and first.value.size == 1
    for _ in range(20):  # turns of the loop: nothing more comes until it is asked for
        await asyncio.sleep(0)
    assert sent.messages.empty()
    server._dispatch(Next(3))
    second = await sent.next()
    assert isinstance(second, Item) and second.value.size == 2
    task = server.tasks[3]
    server._dispatch(Cancel(3))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2.0)
    assert tts.closed.is_set() and sent.messages.empty()  # the backend's clean-up ran; nothing more is sent
    assert server.tasks == {} and server.pulls == {}
    server._dispatch(Next(3))  # late: the stream is gone, so nothing happens
    server._dispatch(Cancel(3))
    assert sent.messages.empty()


def test_the_workers_reading_thread_runs_a_stop_at_once_and_ends_at_exit() -> None:
    here, there = Pipe()
    tts = FakeTts()
    server = Server(there, {"tts": tts})
    loop = asyncio.new_event_loop()  # never run: the stop must not wait for it
    try:
        reader = threading.Thread(target=server._read, args=(loop,), name="worker-read")
        reader.start()
        here.send(Stop("tts"))
        here.send(Exit())
        reader.join(5.0)
        assert not reader.is_alive()
        assert tts.stopped_on == ["worker-read"]
        reader = threading.Thread(target=server._read, args=(loop,), name="worker-read")
        reader.start()
        here.close()  # the main process is gone: the same as an Exit
        reader.join(5.0)
        assert not reader.is_alive()
    finally:
        loop.close()


# -- the main process's side ---------------------------------------------------------------------
class FakeProc:
    exitcode = None

    def join(self, timeout: float | None = None) -> None:
        pass


class FakeLink:
    def __init__(self, conn: Any) -> None:
        self.conn, self.proc, self.kill_reason = conn, FakeProc(), None
        self.kills: list[str] = []

    def end(self) -> None:
        pass

    def kill(self, reason: str) -> None:
        self.kills.append(reason)


def test_the_main_process_hands_answers_to_their_calls_and_kills_a_worker_that_says_something_else() -> None:
    w = InferenceProcess(make_config())
    here, there = Pipe()
    link = FakeLink(here)
    call = _Call(1)
    w._calls[1] = call
    for msg in (Item(1, "a"), Done(9, None), Failed(1, "bad"), Ready(1, {}, SAMPLES), Done(1, "z")):
        there.send(msg)
    there.close()
    w._read(link)  # type: ignore[arg-type]  # until the pipe ends; the link is not the current one, so no restart
    answers = []
    while not call.answers.empty():
        answers.append(call.answers.get())
    assert answers == [Item(1, "a"), Failed(1, "bad"), Done(1, "z")]  # the answer to call 9 (given up) dropped
    assert link.kills == ["the worker sent an unexpected Ready"]


@pytest.mark.parametrize(("answer", "error", "match"), [
    (Lost(1, "the worker exited (code -9)"), WorkerLost, r"asr\.transcribe: the worker exited \(code -9\)"),
    (Failed(1, "out of memory"), ModelError, "out of memory"),
    (Exit(), TypeError, "worker RPC: unknown message Exit"),
])
async def test_a_calls_answer_is_its_result_or_its_error(answer: Any, error: type[Exception], match: str) -> None:
    w = InferenceProcess(make_config())
    call = _Call(1, loop=asyncio.get_running_loop(), wake=asyncio.Event())
    call.put(Done(1, "你好"))
    assert await w._answer(call, "asr.transcribe") == Done(1, "你好")
    call.put(answer)
    with pytest.raises(error, match=match):
        await w._answer(call, "asr.transcribe")
