"""The decision (``assistant/decide.py``) is one pure function, routed once, and the responder acts on
it at one commit point: deciding saves nothing and changes nothing, committing does it once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from assistant import decide as decide_module
from assistant.decide import Conversation, Decision, Kind, Request, Rules, decide
from assistant.respond import NOT_HEARD
from assistant.tools import router
from tests.doubles import configured_responder


@pytest.fixture
def responder(tmp_path: Path):
    with configured_responder(tmp_path, "香蕉是黄色的。") as found:
        yield found


def fresh(r, **kwargs) -> Conversation:
    return Conversation(r.now(), continued=False, **kwargs)


def test_deciding_saves_nothing_and_the_commit_saves_once(responder) -> None:
    r, _, _ = responder
    store = r.tools.store
    conversation = fresh(r)
    first = decide(Request("十分钟后提醒我喝水"), conversation, r.rules)
    again = decide(Request("十分钟后提醒我喝水"), conversation, r.rules)
    assert first == again and first.kind is Kind.TOOL and first.intent.name == "reminder_set"
    assert store.pending() == []  # decided twice, nothing saved
    answer = r.commit(first, conversation)
    assert answer.intent == "reminder_set" and [x.text for x in store.pending()] == ["喝水"]


def test_a_request_is_routed_once(responder, monkeypatch: pytest.MonkeyPatch) -> None:
    r, _, _ = responder
    routed: list[str] = []
    real_route = router.route

    def counting(text, now, **kwargs):
        routed.append(text)
        return real_route(text, now, **kwargs)

    monkeypatch.setattr(router, "route", counting)
    assert decide(Request("现在几点了"), fresh(r), r.rules).kind is Kind.TOOL
    assert decide(Request("香蕉是什么颜色的", spoken_s=1.5), fresh(r), r.rules).kind is Kind.LLM
    assert routed == ["现在几点了", "香蕉是什么颜色的"]
    # with the ASR's other readings, each text is routed once: the chosen one as corrected (周成 → 周乘),
    # the other readings once each, and a reading that corrects to the chosen one not again
    routed.clear()
    readings = ("周成以七十多少", "九乘以七是多少", "九乘以七是多少。")
    decide(Request("周成以七十多少", spoken_s=1.5, readings=readings), fresh(r), r.rules)
    assert sorted(routed) == sorted(["周乘以七十多少", "九乘以七是多少", "九乘以七是多少。"])


def test_a_question_asked_back_is_settled_by_yes_only_within_the_conversation(responder) -> None:
    r, _, _ = responder
    asked = decide(Request("打开电视吧", spoken_s=1.0), fresh(r, pending="打开电视"), r.rules)
    assert asked.kind is not Kind.SAY_AGAIN  # no conversation: the pending question is not the context
    yes = decide(Request("是的", spoken_s=0.6), Conversation(r.now(), True, pending="现在几点了"), r.rules)
    assert (yes.kind, yes.text, yes.intent.name) == (Kind.TOOL, "现在几点了", "time")
    no = decide(Request("不是", spoken_s=0.6), Conversation(r.now(), True, pending="现在几点了"), r.rules)
    assert no.kind is Kind.SAY_AGAIN
    stale = decide(Request("是的", spoken_s=0.6), fresh(r, pending="现在几点了"), r.rules)
    assert stale.kind is Kind.LLM  # the question belonged to another conversation


def test_an_unlikely_transcript_is_asked_again_unless_it_was_asked_again_just_before(responder) -> None:
    r, _, _ = responder
    heard = Request("正教是什么颜色的", spoken_s=1.5, char_logprob=-6.2)
    first = decide(heard, fresh(r), r.rules)
    assert first.kind is Kind.UNCLEAR
    assert decide(heard, Conversation(r.now(), True, doubted="正教是什么颜色的"), r.rules).kind is Kind.LLM
    assert decide(heard, fresh(r, doubted="正教是什么颜色的"), r.rules).kind is Kind.UNCLEAR  # too late


def test_the_commit_keeps_the_question_asked_back_and_the_doubt_for_the_next_request(responder) -> None:
    r, _, clock = responder
    unclear = r.answer("正教是什么颜色的", spoken_s=1.5, char_logprob=-6.2)
    assert unclear.source.text == NOT_HEARD and r.doubted == "正教是什么颜色的"
    r.said(NOT_HEARD)
    clock.t += timedelta(seconds=3)
    assert r.answer("正教是什么颜色的", spoken_s=1.5, char_logprob=-6.2).intent is None  # meant: the LLM's
    assert r.doubted is None and r.pending is None
    confirm = r.commit(Decision(Kind.CONFIRM, "打开电势", meant="打开电视"), fresh(r))
    assert confirm.source.text == "你是说“打开电视”吗？" and r.pending == "打开电视"


def test_the_decision_module_reads_no_clock_and_saves_nothing() -> None:
    # what it may touch: the router, the tools' readings and phrasings, the slips (all pure) and cer
    source = Path(decide_module.__file__).read_text(encoding="utf-8")
    for name in ("datetime.now", "time.time", ".store", "Tools", "history", "log."):
        assert name not in source, name


@pytest.mark.parametrize("limits", [True, False])
def test_a_device_command_is_home_assistants_whether_or_not_the_limits_are_on(limits) -> None:
    from datetime import datetime

    rules = Rules(tools=False, home=True, honest_limits=limits)
    evening = Conversation(datetime(2026, 12, 6, 19, 0), continued=False)
    decided = decide(Request("打开客厅灯"), evening, rules)
    assert (decided.kind, decided.device) == (Kind.HOME, "灯")
    assert decide(Request("香蕉是什么颜色的"), evening, rules).kind is Kind.LLM


def test_a_primed_reading_does_not_outvote_the_whole_sound(responder) -> None:
    # near room, pooled decoding: 今天是星期几 heard 今天是惊奇解; the decoding given the command words
    # wrote 今天是惊起几点 among the readings, the only reading that is a command. The chosen transcript
    # sounds like 今天是星期几 throughout: the date is answered, not the time.
    r, _, _ = responder
    readings = ("今天是惊奇几", "今天是惊起几", "今天是惊起解。", "今天是惊起几点")
    heard = decide(Request("今天是惊奇解。", spoken_s=1.6, char_logprob=-5.16, readings=readings), fresh(r), r.rules)
    assert heard.kind is Kind.TOOL and heard.intent is not None and heard.intent.name == "date", heard
    # where the sound names no other command, the readings still answer (今天有什么新闻 under 新玩)
    news = decide(Request("今天有什么新玩", spoken_s=1.5, readings=("今天有什么新闻",)), fresh(r), r.rules)
    assert news.kind is Kind.TOOL and news.intent is not None and news.intent.name != "date", news
