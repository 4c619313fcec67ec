"""OpenAiLlm against a real OpenAI-compatible server on loopback: llama-cpp-python's own server
(``python -m llama_cpp.server``) serving the Qwen2.5-Coder-0.5B-Instruct GGUF."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.files import verified
from models.llama_llm import QWEN_05B_SHA256
from models.openai_llm import OpenAiLlm
from models.protocols import ModelError

HAN = re.compile(r"[\u4e00-\u9fff]")
QUESTION = "你好，请用一句话介绍你自己。"
LONG_QUESTION = "请详细介绍一下中国古代的四大发明，每一项都说清楚。"
SERVER_START_SECONDS = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(qwen_gguf: Path) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port; its base URL."""
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("the test server needs llama-cpp-python[server] installed in this environment")
    model = verified(qwen_gguf, QWEN_05B_SHA256, "llm")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--n_threads_batch", "2",
         "--seed", "1234", "--verbose", "False"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )
    log: list[str] = []
    ready = threading.Event()

    def drain() -> None:  # keeps the pipe from filling, and notices when uvicorn is listening
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)
            if "Uvicorn running on" in line:
                ready.set()
        ready.set()  # the server exited: stop waiting

    threading.Thread(target=drain, name="llama-server-log", daemon=True).start()
    try:
        if not ready.wait(SERVER_START_SECONDS) or proc.poll() is not None:
            pytest.fail(f"llama_cpp.server did not start within {SERVER_START_SECONDS} s:\n" + "".join(log[-20:]))
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def llm(server: str) -> Iterator[OpenAiLlm]:
    model = OpenAiLlm(server, max_tokens=64)  # bounded: this shared machine is sometimes slow
    model.load()
    yield model
    model.close()


async def collect(llm: OpenAiLlm, text: str) -> list[str]:
    return [piece async for piece in llm.reply(text)]


@pytest.mark.parametrize("url", ["http://192.168.1.20:8080/v1", "https://api.openai.com/v1", "http://example.com"])
def test_a_remote_server_is_refused_unless_allowed(url: str) -> None:
    with pytest.raises(ModelError, match="offline by design"):
        OpenAiLlm(url)
    OpenAiLlm(url, allow_remote=True).close()


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.2:8080/v1", "http://[::1]:8080/v1"])
def test_loopback_servers_are_accepted(url: str) -> None:
    OpenAiLlm(url).close()


def test_no_server_is_a_one_line_model_error() -> None:
    llm = OpenAiLlm(f"http://127.0.0.1:{free_port()}/v1", timeout=5)
    with pytest.raises(ModelError, match="no OpenAI-compatible server reachable") as caught:
        llm.load()
    assert "\n" not in str(caught.value)
    llm.close()


@pytest.mark.slow
def test_a_wrong_path_is_a_model_error(server: str) -> None:
    llm = OpenAiLlm(server.removesuffix("/v1") + "/nope")
    with pytest.raises(ModelError, match="HTTP 404"):
        llm.load()
    llm.close()


@pytest.mark.slow
async def test_a_mandarin_question_gets_a_chinese_reply_in_several_pieces(llm: OpenAiLlm) -> None:
    pieces = await asyncio.wait_for(collect(llm, QUESTION), 60)
    reply = "".join(pieces)
    assert len(pieces) >= 3, pieces
    assert len(HAN.findall(reply)) >= 5, reply
    assert llm.history.exchanges == [(QUESTION, reply)]


@pytest.mark.slow
async def test_stop_mid_reply_closes_the_stream(llm: OpenAiLlm) -> None:
    pieces: list[str] = []
    three = asyncio.Event()

    async def consume() -> None:
        async for piece in llm.reply(LONG_QUESTION):
            pieces.append(piece)
            if len(pieces) == 3:
                three.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three.wait(), 60)
    llm.stop()  # from another task, while the worker may be blocked reading the next event
    await asyncio.wait_for(task, 2)
    assert 3 <= len(pieces) <= 4, pieces  # a long answer would have run to max_tokens=160
    assert llm.history.exchanges == [(LONG_QUESTION, "".join(pieces))]

    again = "".join(await asyncio.wait_for(collect(llm, QUESTION), 60))  # the server took the hint
    assert HAN.search(again), again


@pytest.mark.slow
async def test_a_cancelled_reply_leaves_the_backend_usable(llm: OpenAiLlm) -> None:
    pieces: list[str] = []
    two = asyncio.Event()

    async def consume() -> None:
        async for piece in llm.reply(LONG_QUESTION):
            pieces.append(piece)
            if len(pieces) == 2:
                two.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(two.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    again = "".join(await asyncio.wait_for(collect(llm, QUESTION), 60))
    assert HAN.search(again), again


@pytest.mark.slow
async def test_a_follow_up_uses_the_previous_turn(server: str) -> None:
    introduce, ask = "我的名字叫李雷，请记住。", "我叫什么名字？"
    for turns in (3, 0):
        llm = OpenAiLlm(server, temperature=0.3, history_turns=turns)
        llm.load()
        try:
            await asyncio.wait_for(collect(llm, introduce), 60)
            answer = "".join(await asyncio.wait_for(collect(llm, ask), 60))
        finally:
            llm.close()
        if turns:
            assert "李雷" in answer, answer
        else:
            assert "李雷" not in answer, answer  # the name can only come from the history
