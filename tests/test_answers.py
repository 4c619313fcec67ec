"""The answer evaluation: its question set, its judge, and the rules on real model output."""

from __future__ import annotations

import re
import tempfile
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant.answer_eval import Item, QuestionSetError, judge, load_questions, run_item
from assistant.respond import Responder
from assistant.tools.answers import Tools, Volume
from assistant.tools.store import Store
from models.chat import EXAMPLES

QUESTIONS = Path(__file__).resolve().parent.parent / "benchmarks" / "questions.toml"
CATEGORIES = {"identity", "network", "device", "facts", "tools", "advice", "feelings", "social", "followup", "garbled"}


def test_the_question_set_has_every_category_and_at_least_120_items():
    rules, items = load_questions(QUESTIONS)
    assert len(items) >= 120 and {i.cat for i in items} == CATEGORIES
    assert rules.max_chars == 50 and rules.never


def test_no_prompt_example_is_a_question_of_the_evaluation():
    _, items = load_questions(QUESTIONS)
    asked = {i.ask for i in items} | {i.before for i in items}
    assert not asked & {question for question, _ in EXAMPLES}


def test_the_judge_applies_the_global_and_the_item_rules():
    rules, _ = load_questions(QUESTIONS)
    weather = Item("network", "明天会下雨吗？", say=re.compile("联网"), never=re.compile("晴"))
    assert judge(weather, "我没有联网，查不了天气。", rules) == []
    assert judge(weather, "听说：明天晴。", rules)  # tag, no honest limit, an invented forecast
    assert any("global rule" in p for p in judge(weather, "我是百度，我没有联网。", rules))
    assert any("too long" in p for p in judge(weather, "我没有联网，" + "查不了" * 20, rules))
    timer = Item("tools", "设一个十分钟的计时器", stores="reminder")
    assert judge(timer, "好的，十分钟后叫你。", rules) == ["no reminder was saved"]
    assert judge(timer, "好的，十分钟后叫你。", rules, stored=["reminder"]) == []


def test_a_bad_question_set_is_one_clear_error(tmp_path):
    bad = tmp_path / "q.toml"
    bad.write_text('[[q]]\ncat = "x"\nask = "y"\nsay = "("\n', encoding="utf-8")
    with pytest.raises(QuestionSetError, match="q.toml"):
        load_questions(bad)


@pytest.fixture
def responder_with(qwen_gguf):
    from models.llama_llm import LlamaLlm

    llm = LlamaLlm(qwen_gguf, seed=1234, max_tokens=64)
    llm.load()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "t.sqlite3")
        tools = Tools(store, lambda: datetime(2026, 12, 1, 15, 0, tzinfo=ZoneInfo("Asia/Shanghai")),
                      Volume(device="null"))
        yield Responder(llm, tools), store
        store.close()
    llm.close()


@pytest.mark.slow
async def test_identity_limits_and_no_speaker_tags_on_real_model_output(responder_with):
    """The categories where a small model invents: most of it is answered by the honest limits, the rest
    by the real 0.5B behind the reply guard. Judged by the evaluation's rules; the model's chat may miss an
    item's wording now and then (tolerance), but never a global rule (tag, other name, Markdown, length)."""
    responder, store = responder_with
    rules, items = load_questions(QUESTIONS)
    picked = [i for i in items if i.cat in ("identity", "network", "device", "social")]
    outcomes = [await run_item(responder, item, rules, store) for item in picked]
    global_breaks = [(o.item.ask, o.reply, o.problems) for o in outcomes
                     if any(p.startswith(("global rule", "too long", "no Chinese")) for p in o.problems)]
    assert not global_breaks
    assert all(o.acceptable for o in outcomes if o.item.cat in ("identity", "network"))
    assert sum(o.acceptable for o in outcomes) >= 0.9 * len(outcomes), [
        (o.item.ask, o.reply, o.problems) for o in outcomes if not o.acceptable]
    assert any(o.by == "llm" for o in outcomes)  # the real model did answer some of them
