"""The model's own doubt: a factual answer whose first clause it guessed at is not said (这个我不太确定)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from assistant.respond import ReplyGuard
from assistant.text.guard import UNSURE, ClauseGuard, GuardOptions, asks_a_fact
from models.chat import History
from models.protocols import Confident, Scored, texts

SURE, GUESS = 0.9, 0.2
DOUBTING = GuardOptions(min_confidence=0.4)


def said(request: str, pieces: list[tuple[str, float]], options: GuardOptions = DOUBTING) -> str:
    guard = ClauseGuard(options, request=request)
    out = [s for text, confidence in pieces for s in guard.feed(text, confidence)] + guard.finish()
    return "".join(out)


@pytest.mark.parametrize("request_", ["孔子是哪个国家的人", "太阳系有几颗行星", "月亮为什么会发光", "鲸鱼是鱼吗"])
def test_a_guessed_first_clause_of_a_fact_is_not_said(request_):
    pieces = [("孔子", SURE), ("是", SURE), ("古希腊", GUESS), ("人", SURE), ("，", SURE), ("公元前", SURE),
              ("。", SURE)]
    assert said(request_, pieces) == UNSURE


def test_a_sure_answer_is_said_whole():
    pieces = [("孔子", SURE), ("是", SURE), ("中国", 0.8), ("人", SURE), ("，", 0.1), ("春秋时期", SURE), ("。", SURE)]
    assert said("孔子是哪个国家的人", pieces) == "孔子是中国人，春秋时期。"  # punctuation's own doubt is no doubt


def test_doubt_after_the_first_clause_is_said():
    pieces = [("孔子是中国人", SURE), ("，", SURE), ("生于", GUESS), ("鲁国", SURE), ("。", SURE)]
    assert said("孔子是哪个国家的人", pieces) == "孔子是中国人，生于鲁国。"


@pytest.mark.parametrize("request_", ["我今天好累", "晚饭吃什么好", "给我讲个笑话", "失眠了怎么办"])
def test_advice_stories_and_chat_are_never_doubted(request_):
    pieces = [("先", GUESS), ("深呼吸", SURE), ("，", SURE), ("歇一会儿", SURE), ("。", SURE)]
    assert said(request_, pieces) == "先深呼吸，歇一会儿。"


def test_off_by_default():
    pieces = [("孔子是", SURE), ("古希腊人", GUESS), ("。", SURE)]
    assert said("孔子是哪个国家的人", pieces, GuardOptions()) == "孔子是古希腊人。"


@pytest.mark.parametrize(("request_", "fact"), [
    ("一米等于多少厘米", True), ("谁发明了电话", True), ("长城在哪个城市", True), ("你会说英语吗", True),
    ("为什么天是蓝的", True), ("推荐一本书", False), ("帮我想个名字", False), ("你好", False),
    ("明天穿什么好", False), ("我心情不好怎么办", False),
])
def test_which_requests_ask_a_fact(request_, fact):
    assert asks_a_fact(request_) is fact


class DoubtingLlm:
    """Scripted scored pieces; ``reply`` is their text."""

    def __init__(self, pieces: list[tuple[str, float]]) -> None:
        self.pieces = pieces
        self.history = History(2)
        self.stops = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1

    def reply(self, text: str) -> AsyncIterator[str]:
        return texts(self.scored(text))

    async def scored(self, text: str) -> AsyncIterator[Scored]:
        said = []
        try:
            for piece, confidence in self.pieces:
                said.append(piece)
                yield Scored(piece, confidence)
        finally:
            self.history.remember(text, "".join(said))


async def test_the_reply_guard_reads_the_models_confidence_and_forgets_the_guess():
    llm = DoubtingLlm([("太阳系", SURE), ("有", SURE), ("五", GUESS), ("颗行星", SURE), ("，", SURE), ("分别是", SURE)])
    assert isinstance(llm, Confident)
    out = "".join([piece async for piece in ReplyGuard(llm, DOUBTING).reply("太阳系有几颗行星")])
    assert out == UNSURE
    assert llm.stops == 1  # the rest of the guess is not computed
    assert llm.history.exchanges == []  # a replaced reply teaches the next ones nothing


async def test_texts_passes_the_pieces_text_through():
    llm = DoubtingLlm([("北京", SURE), ("是中国的首都。", SURE)])
    assert [piece async for piece in llm.reply("北京是哪国的首都")] == ["北京", "是中国的首都。"]
