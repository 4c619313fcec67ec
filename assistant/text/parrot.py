"""Is the reply only the request said back? A small model, given a garbled transcript, often answers
with the transcript itself (今天有什么新玩 → "今天有什么新玩？"; 把空桥架到二十六度 → "好的，把空桥架到
二十六度。"): that is not an answer, and said aloud it sounds like one. The reply guard asks again
instead.

The first clause of a reply is compared with the request as toneless pinyin syllables
(``echo_match.syllables``), so a homophone or a digit written for a numeral is the same syllable. It
restates the request when nearly all of it comes from the request, in order (at most one syllable
of its own), and it covers at least half the request: "一天有二十四个小时" adds 二十四 and passes;
"明天是几号？" adds nothing and does not. A clause under three syllables never counts (好, 在呢), and
neither does a greeting or a wish said back (早上好！, 新年快乐！, 晚安), which is the right answer to one.
Nor does a question's echo that drops its question words: Mandarin answers 你会说英语吗 with 会说英语,
the request's own words as a statement; a parrot keeps the question (几号, 多少, 冷不冷, 吗). A choice
question is answered by one of its choices (猫喜欢吃鱼还是吃肉 → 猫喜欢吃鱼); its parrot keeps the 还是.
"""

from __future__ import annotations

import re

from assistant.text.echo_match import syllables

MIN_SYLLABLES = 3  # a clause shorter than this is never a parrot
MAX_OWN = 1  # syllables of its own that a restating clause may add
MIN_COVER = 0.5  # the share of the request a restating clause must say back

GREETING = re.compile(r"(你好|您好|早上好|早安|中午好|午安|下午好|晚上好|晚安|再见|拜拜|谢谢|谢谢你|快乐|新年好|过年好|"
                      r"辛苦了|加油|晚安安)[呀啊吧哦嘛啦了～~！!。.，,\s]*$")
QUESTION = re.compile(r"吗|么|呢|什么|多少|几|哪|谁|怎|为啥|还是|(.)不\1|(.)没\2")


def restates(request: str, clause: str) -> bool:
    """Does ``clause`` (a reply's first clause) only say ``request`` back?"""
    said = syllables(clause)
    if len(said) < MIN_SYLLABLES or GREETING.search(request.strip()):
        return False
    asked = syllables(request)
    if not asked:
        return False
    if QUESTION.search(request) and not QUESTION.search(clause):
        return False  # the question's words said as a statement: an answer (会说英语)
    shared = _common(asked, said)
    return len(said) - shared <= MAX_OWN and shared >= MIN_COVER * len(asked)


def _common(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two syllable lists."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]
