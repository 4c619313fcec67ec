"""A transcript the rescoring model finds too unlikely as Mandarin is asked again, not answered by the LLM
(胎红又几种颜色 → 胎红的颜色有多种… was said before); a tool's command is still the tool's. The
likelihoods here are scripted."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from assistant.config import load
from assistant.respond import NOT_HEARD, Responder, for_config
from assistant.tools.answers import Tools
from assistant.tools.store import Store
from tests.conftest import real, session_of, silence
from tests.doubles import FixedClock, ScriptedLlm, WeighingAsr, configured_responder

CONFIG = Path(__file__).resolve().parent.parent / "config.toml"


@pytest.fixture
def responder(tmp_path: Path):
    with configured_responder(tmp_path, "正教的颜色是红色。") as found:
        yield found


def test_the_default_asks_again_below_minus_five_a_character(responder) -> None:
    r, llm, _ = responder
    assert r.min_char_logprob == -5.0
    unclear = r.answer("正教是什么颜色的", char_logprob=-6.2)
    assert (unclear.intent, unclear.source.text) == ("unclear", NOT_HEARD)
    assert llm.asked == []  # nothing was asked of the LLM


@pytest.mark.parametrize("likely", [-4.2, None])  # likely enough, or not weighed (typed text)
def test_a_likely_or_unweighed_request_is_the_llms(responder, likely) -> None:
    r, _, _ = responder
    assert r.answer("香蕉是什么颜色的", char_logprob=likely).intent is None


def test_a_command_the_tools_know_is_answered_however_unlikely_it_reads(responder) -> None:
    r, _, _ = responder
    assert r.answer("现在几点了", char_logprob=-9.0).intent == "time"  # 这样几点了 is put right by the router too
    assert r.answer("把空调调到26度", char_logprob=-9.0).intent == "no_device"


def test_the_same_unlikely_words_said_again_at_once_are_answered(responder) -> None:
    # a rare dish reads as unlikely as a near-miss (宫保鸡丁辣不辣: -5.8 a character), and asking again
    # for ever would leave the user no way through; a mishearing seldom comes out the same twice
    r, _, clock = responder
    assert r.answer("宫保鸡丁辣不辣", spoken_s=1.5, char_logprob=-5.8).intent == "unclear"
    r.finished()
    clock.t += timedelta(seconds=3)
    assert r.answer("宫保鸡丁辣不辣？", spoken_s=1.5, char_logprob=-5.8).intent is None  # the LLM's now
    r.finished()
    clock.t += timedelta(seconds=3)
    assert r.answer("宫保鸡丁辣不辣", spoken_s=1.5, char_logprob=-5.8).intent == "unclear"  # answered: a new ask
    r.finished()
    clock.t += timedelta(seconds=3)
    assert r.answer("胎红又几种颜色", spoken_s=1.5, char_logprob=-6.8).intent == "unclear"  # other words
    r.finished()
    clock.t += timedelta(minutes=5)
    assert r.answer("胎红又几种颜色", spoken_s=1.5, char_logprob=-6.8).intent == "unclear"  # long after


def test_off_with_the_lowest_setting(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.sqlite3")
    try:
        r = for_config(load(CONFIG, ["asr.min_char_logprob=-100"]), ScriptedLlm(), Tools(store, FixedClock()))
        assert r.answer("正教是什么颜色的", char_logprob=-60.0).intent is None
        assert Responder(ScriptedLlm(), None).answer("正教是什么颜色的", char_logprob=-60.0).intent is None  # bare
    finally:
        store.close()


async def test_in_a_session_the_unlikely_transcript_is_asked_again(run_replay) -> None:
    llm = ScriptedLlm("正教的颜色是红色。")
    asr = WeighingAsr("正教是什么颜色的", likely={"正教是什么颜色的": -6.5})
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), "dialog.follow_up_s=0",
                         asr=asr, llm=llm)
    assert [e["text"] for e in r.events if e["type"] == "reply_text"] == [NOT_HEARD]
    assert asr.weighed == ["正教是什么颜色的"] and llm.asked == []
    assert {"type": "tool_answered", "intent": "unclear"}.items() <= r.first("tool_answered").items()
    # the same words found likely enough are answered
    llm = ScriptedLlm("香蕉是黄色的。")
    asr = WeighingAsr("香蕉是什么颜色的", likely={"香蕉是什么颜色的": -3.0})
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), "dialog.follow_up_s=0",
                         asr=asr, llm=llm)
    assert llm.asked == ["香蕉是什么颜色的"]
