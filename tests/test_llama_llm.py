"""LlamaLlm on the real Qwen2.5-Coder-0.5B-Instruct GGUF: streaming, stop, cancel, history, bad files."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from models.llama_llm import QWEN_05B_SHA256, History, LlamaLlm
from models.protocols import ModelError

HAN = re.compile(r"[\u4e00-\u9fff]")
QUESTION = "你好，请用一句话介绍你自己。"
LONG_QUESTION = "请详细介绍一下中国古代的四大发明，每一项都说清楚。"


@pytest.fixture
def llm(qwen_gguf: Path) -> Iterator[LlamaLlm]:
    model = LlamaLlm(qwen_gguf, seed=1234, max_tokens=64)  # bounded: this shared machine is sometimes slow
    model.load()
    yield model
    model.close()


async def collect(llm: LlamaLlm, text: str) -> list[str]:
    return [piece async for piece in llm.reply(text)]


@pytest.mark.slow
async def test_a_mandarin_question_gets_a_chinese_reply_in_several_pieces(llm: LlamaLlm) -> None:
    pieces = await collect(llm, QUESTION)
    reply = "".join(pieces)
    assert len(pieces) >= 3, pieces
    assert len(HAN.findall(reply)) >= 5, reply
    assert llm.history.exchanges == [(QUESTION, reply)]


@pytest.mark.slow
async def test_stop_mid_reply_ends_the_stream_at_the_next_token(llm: LlamaLlm) -> None:
    pieces: list[str] = []
    three = asyncio.Event()

    async def consume() -> None:
        async for piece in llm.reply(LONG_QUESTION):
            pieces.append(piece)
            if len(pieces) == 3:
                three.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(three.wait(), 60)
    llm.stop()  # from another task, as barge-in does, while the next token may be in flight
    await asyncio.wait_for(task, 2)
    assert 3 <= len(pieces) <= 4, pieces  # a long answer would have run to max_tokens=160
    assert llm.history.exchanges == [(LONG_QUESTION, "".join(pieces))]  # kept as far as it got


@pytest.mark.slow
async def test_a_cancelled_reply_leaves_the_backend_usable(llm: LlamaLlm) -> None:
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
    assert llm.history.exchanges[0][1].startswith("".join(pieces[:2]))

    again = "".join(await asyncio.wait_for(collect(llm, QUESTION), 60))
    assert HAN.search(again), again


@pytest.mark.slow
async def test_a_follow_up_uses_the_previous_turn(qwen_gguf: Path) -> None:
    introduce, ask = "我的名字叫李雷，请记住。", "我叫什么名字？"
    remembering = LlamaLlm(qwen_gguf, seed=1234, temperature=0.3)
    forgetting = LlamaLlm(qwen_gguf, seed=1234, temperature=0.3, history_turns=0)
    for model in (remembering, forgetting):
        model.load()
        try:
            await collect(model, introduce)
            answer = "".join(await collect(model, ask))
        finally:
            model.close()
        if model is remembering:
            assert "李雷" in answer, answer
        else:
            assert "李雷" not in answer, answer  # the name can only come from the history


def test_history_keeps_the_last_exchanges_and_drops_silent_ones() -> None:
    history = History(2)
    for i in range(3):
        history.remember(f"问{i}", f"答{i}")
    history.remember("问3", "  ")  # interrupted before anything was said
    assert history.messages("系统", "新问题") == [
        {"role": "system", "content": "系统"},
        {"role": "user", "content": "问1"}, {"role": "assistant", "content": "答1"},
        {"role": "user", "content": "问2"}, {"role": "assistant", "content": "答2"},
        {"role": "user", "content": "新问题"},
    ]


def test_a_missing_gguf_is_refused(tmp_path: Path) -> None:
    llm = LlamaLlm(tmp_path / "absent.gguf")
    with pytest.raises(ModelError, match="not found"):
        llm.load()
    llm.close()


def test_a_corrupt_gguf_is_refused_before_llama_cpp_sees_it(qwen_gguf: Path, tmp_path: Path) -> None:
    copy = tmp_path / "corrupt.gguf"
    shutil.copyfile(qwen_gguf, copy)
    with copy.open("r+b") as f:
        f.seek(copy.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    model = LlamaLlm(copy, expected_sha256=QWEN_05B_SHA256)
    with pytest.raises(ModelError, match="corrupt") as caught:
        model.load()
    assert "\n" not in str(caught.value)
    model.close()


def test_a_file_llama_cpp_cannot_read_is_a_model_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    model = LlamaLlm(junk, expected_sha256=hashlib.sha256(junk.read_bytes()).hexdigest())
    with pytest.raises(ModelError, match="could not load") as caught:
        model.load()
    assert "\n" not in str(caught.value)
    model.close()


@pytest.mark.slow
async def test_a_chat_too_long_for_the_context_is_a_model_error(qwen_gguf: Path) -> None:
    llm = LlamaLlm(qwen_gguf, n_ctx=512)
    llm.load()
    try:
        with pytest.raises(ModelError, match="context window"):
            await collect(llm, "你好" * 600)
        assert HAN.search("".join(await collect(llm, QUESTION)))  # still answers what fits
    finally:
        llm.close()


@pytest.mark.slow
async def test_the_system_prompt_is_evaluated_once_and_its_state_restored(llm: LlamaLlm) -> None:
    assert llm._worker.call(llm.system_prompt_cached)  # evaluated at load
    assert len(llm._system_tokens) > 100  # the rules and examples
    llm._worker.call(llm._model.reset)  # the KV cache lost it (e.g. another use of the model)
    assert not llm._worker.call(llm.system_prompt_cached)
    reply = "".join(await collect(llm, QUESTION))
    assert len(HAN.findall(reply)) >= 2, reply
    assert llm._worker.call(llm.system_prompt_cached)  # loaded back, and the reply followed it


@pytest.mark.xfail(reason="on an AMD EPYC (2026-12-02; it passes on an Intel Xeon) llama.cpp's greedy "
                          "reply after a prefill differs from "
                          "the one without (北京是中华人民共和国首都 / 北京是北京市的首都), as on the code before this "
                          "session: the prefilled KV state is not bit-identical here", strict=False)
async def test_a_prefilled_prompt_is_in_the_cache_and_the_reply_is_the_same(llm: LlamaLlm) -> None:
    question = "北京是哪个国家的首都？"
    plain = "".join(await collect(llm, question))
    llm.history.clear()
    llm.prefill(question)
    prompt = llm.history.messages(llm.system_prompt, question, llm.examples)

    def cached() -> int:
        model = llm._model
        assert model is not None
        tokens = model.tokenize(llm._format(model, prompt).encode(), add_bos=False, special=True)
        return model.n_tokens if list(model.input_ids[: model.n_tokens]) == tokens[:-1] else -1

    assert llm._worker.call(cached) > 0  # queued behind the prefill: all but the last prompt token are in
    assert "".join(await collect(llm, question)) == plain
    llm.history.clear()
    llm.prefill("完全不同的问题是什么？")  # a prompt that is not asked costs nothing but its evaluation
    assert "".join(await collect(llm, question)) == plain


async def test_the_conversation_so_far_is_evaluated_ahead_of_the_next_request(llm: LlamaLlm) -> None:
    # history_turns = 2: from the third exchange on the oldest one leaves the prompt, and everything
    # after the examples differs from what the KV cache holds; prefill_history (once a reply has been
    # heard out) evaluates it before the next request comes, up to that request's text
    from models.llama_llm import _shared

    llm.history.clear()
    for ask in ("我今天好累。", "我想早点睡觉。"):
        assert HAN.search("".join(await collect(llm, ask)))
    pieces = llm.reply("睡前看书好吗？")
    assert await anext(pieces)
    await pieces.aclose()  # cut short, as the reply guard cuts a reply that runs on
    question = "喝牛奶能帮助睡眠吗？"
    prompt = llm.history.messages(llm.system_prompt, question, llm.examples)

    def held() -> tuple[int, int, int]:
        """(what the cache shares with the next prompt, what the cache holds, the prompt's length)"""
        model = llm._model
        assert model is not None
        tokens = model.tokenize(llm._format(model, prompt).encode(), add_bos=False, special=True)
        return _shared(list(model.input_ids[: model.n_tokens]), tokens), model.n_tokens, len(tokens)

    before, _, length = llm._worker.call(held)
    llm.prefill_history()
    after, holding, _ = llm._worker.call(held)  # queued behind the prefill
    assert after == holding  # the cache holds the next prompt's start and nothing else ...
    assert before < after and length - after <= 12  # ... all of it but the request's text and the turn's end
    assert HAN.search("".join(await collect(llm, question)))


async def test_a_reply_under_way_keeps_its_cache_when_the_history_is_evaluated_ahead(llm: LlamaLlm) -> None:
    plain = "".join(await collect(llm, QUESTION))
    llm.history.clear()
    pieces = llm.reply(QUESTION)
    got = [await anext(pieces)]
    llm.prefill_history()  # queued between two of the reply's steps: it must not touch the reply's cache
    got += [piece async for piece in pieces]
    assert "".join(got) == plain


@pytest.mark.slow
async def test_each_piece_comes_with_the_models_confidence_in_it(qwen_gguf: Path) -> None:
    greedy = LlamaLlm(qwen_gguf, temperature=0.0, max_tokens=24, history_turns=0)
    blind = LlamaLlm(qwen_gguf, temperature=0.0, max_tokens=24, history_turns=0, confidence=False)
    greedy.load()
    blind.load()
    try:
        scored = [piece async for piece in greedy.scored(QUESTION)]
        assert scored and all(0.0 < p.confidence <= 1.0 for p in scored)
        assert min(p.confidence for p in scored) < 1.0  # a real distribution, not the 1.0 of "none given"
        # reading the confidence changes nothing the model writes
        assert "".join(p.text for p in scored) == "".join([piece async for piece in blind.reply(QUESTION)])
        assert {p.confidence async for p in blind.scored(QUESTION)} == {1.0}  # none read: 1.0 each
    finally:
        greedy.close()
        blind.close()



@pytest.mark.slow
async def test_the_default_llm_is_the_1_5b_and_knows_a_fact_the_0_5b_gets_wrong() -> None:
    # the default follows the spoken evaluation (README "Seventh sitting"); the other tests run on the 0.5B
    from assistant import backends
    from assistant.config import load
    from models.llama_llm import QWEN_15B_SHA256

    cfg = load(None, ["llm.max_tokens=48"])
    llm = backends.llm(cfg, backends.assets_for(cfg))
    assert isinstance(llm, LlamaLlm) and llm.expected_sha256 == QWEN_15B_SHA256
    llm.load()  # checks the file against that sha256
    try:
        reply = "".join(await collect(llm, "冬天过后是什么季节？"))  # the 0.5B says 秋天
    finally:
        llm.close()
    assert "春" in reply, reply
