"""A spoken calculator: "12乘以8等于多少" → "十二乘以八等于九十六", answered without the LLM.

A small recursive-descent parser (no eval) reads Arabic and Chinese numerals (12, 3.5, 三点五, 两, 一万五千, 3万),
+ - × ÷ and their words (加, 加上, 减, 减去, 乘, 乘以, 除, 除以, x, *, /), negatives (负三, -3), parentheses
((), （）, 左括号/右括号) and powers (的平方, 的立方, 的N次方). Arithmetic is exact (``Fraction``).

Decisions:
- "A除B" is read as A÷B, the everyday spoken sense (十除二 = 5), not the formal "B divided into A"; the
  reply says 除以 so the listener hears which reading was taken.
- 负 binds tighter than a power: 负三的平方 = (−3)² = 9, as it is said.
- The reply reads an operand exactly, a result exactly when it has at most 4 decimals, else rounded to
  2 decimals (more for small numbers, to keep 2 significant digits) and said with 约等于.
- 2 is 二, but a leading 二 before 千/万/亿 is said 两 (两千, 两万); results of 10^16 or more are too big to say.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

import cn2an  # type: ignore[import-untyped]

TOO_BIG = 10**16
_NUM = r"[0-9零〇一二两三四五六七八九十百千万亿]+(?:[.点][0-9零〇一二三四五六七八九]+)?"
_TOKEN = re.compile(
    rf"(?P<num>{_NUM})|(?P<op>乘以|除以|加上|减去|乘|除|加|减|[-+*/×÷xX−])|(?P<neg>负)"
    rf"|(?P<pow>的平方|的立方|的(?P<exp>负?{_NUM})次方)|(?P<lp>\(|左括号)|(?P<rp>\)|右括号)"
)
_OPS = {"加": "+", "加上": "+", "减": "-", "减去": "-", "−": "-", "乘": "*", "乘以": "*", "×": "*", "x": "*",
        "X": "*", "除": "/", "除以": "/", "÷": "/"}
_SAID = {"+": "加", "-": "减", "*": "乘以", "/": "除以"}
_GROUP = {"+": "和", "-": "差", "*": "积", "/": "商"}  # (3+4)×5 is said 三加四的和乘以五
_PREFIX = re.compile(r"^(?:请问|请你|请|麻烦你?|你能|能不能|可以)?(?:帮我|帮忙|给我|替我)?"
                     r"(?:算一下|算一算|计算一下|计算|算算|算|求)?[:,，：]?")
_SUFFIX = re.compile(r"(?:的结果|的答案)?(?:等于|是|得|为|=)?(?:多少|几|啥|什么)?(?:呢|啊|呀|吗|嘛)?[?!.。,，!~～]*$")
_DIGITS = str.maketrans("零〇一二三四五六七八九", "00123456789")

INCOMPLETE = "算式好像不完整，请再说一遍。"
UNCLEAR = "这个算式我没听懂，请再说一遍。"


class CalcError(ValueError):
    """A calculation that cannot be answered; the message is a polite spoken sentence."""


@dataclass(frozen=True)
class Calculation:
    expression: str  # as it will be said: "十二乘以八"
    value: Fraction | float  # exact where possible
    answer: str  # the full spoken reply: "十二乘以八等于九十六"


@dataclass(frozen=True)
class _Node:
    value: Fraction
    said: str
    group: str | None = None  # 和/差/积/商 of the top-level operator, for saying a parenthesized part

    def grouped(self) -> str:
        return f"{self.said}的{self.group}" if self.group else self.said


def _number(text: str) -> Fraction:
    whole, _, decimals = text.replace("点", ".").partition(".")
    try:
        integer = int(whole) if whole.isascii() else int(cn2an.cn2an(whole, "smart"))
    except (ValueError, KeyError, TypeError) as e:
        raise CalcError(UNCLEAR) from e
    return integer + Fraction("0." + decimals.translate(_DIGITS)) if decimals else Fraction(integer)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, str]]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> tuple[str, str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "", "")

    def take(self) -> tuple[str, str, str]:
        token = self.peek()
        if token[0] == "end":
            raise CalcError(INCOMPLETE)
        self.pos += 1
        return token

    def parse(self) -> _Node:
        node = self.sum()
        if self.pos < len(self.tokens):
            raise CalcError(UNCLEAR)
        return node

    def sum(self) -> _Node:
        node = self.product()
        while self.peek()[0] == "op" and self.peek()[1] in "+-":
            op = self.take()[1]
            right = self.product()
            said = right.grouped() if right.group in ("和", "差") else right.said
            value = node.value + right.value if op == "+" else node.value - right.value
            node = _Node(value, node.said + _SAID[op] + said, _GROUP[op])
        return node

    def product(self) -> _Node:
        node = self.power()
        while self.peek()[0] == "op" and self.peek()[1] in "*/":
            op = self.take()[1]
            right = self.power()
            left = node.grouped() if node.group in ("和", "差") else node.said
            wrap = right.group in ("和", "差") or (op == "/" and right.group in ("积", "商"))
            if op == "/" and right.value == 0:
                raise CalcError("不能除以零哦。")
            value = node.value * right.value if op == "*" else node.value / right.value
            node = _Node(value, left + _SAID[op] + (right.grouped() if wrap else right.said), _GROUP[op])
        return node

    def power(self) -> _Node:
        node = self.unary()
        while self.peek()[0] == "pow":
            word, exponent = self.take()[1:]
            sign = -1 if exponent.startswith("负") else 1
            power = {"的平方": Fraction(2), "的立方": Fraction(3)}.get(word) or sign * _number(exponent.lstrip("负"))
            if power.denominator != 1 or abs(power) > 1000:
                raise CalcError("这个次方我算不了，请换一个试试。")
            if node.value == 0 and power < 0:
                raise CalcError("不能除以零哦。")
            size = math.log10(abs(node.value.numerator)) - math.log10(node.value.denominator) if node.value else 0
            if power * size > 100:
                raise CalcError("这个数太大了，我说不出来。")
            node = _Node(node.value ** int(power), node.grouped() + word)
        return node

    def unary(self) -> _Node:
        kind, text, _ = self.take()
        if kind == "neg" or (kind == "op" and text == "-"):
            inner = self.unary()
            return _Node(-inner.value, "负" + inner.grouped())
        if kind == "num":
            value = _number(text)
            return _Node(value, _read(value))
        if kind == "lp":
            node = self.sum()
            if self.take()[0] != "rp":
                raise CalcError(UNCLEAR)
            return node
        raise CalcError(INCOMPLETE if kind == "op" and self.pos == 1 else UNCLEAR)


def _tokens(expression: str) -> list[tuple[str, str, str]]:
    out = []
    for m in _TOKEN.finditer(expression):
        kind = m.lastgroup or ""  # for 的三次方 the outer group, pow
        out.append((kind, _OPS.get(m[0], m[0]) if kind == "op" else m[0], m["exp"] or ""))
    return out


def _clean(text: str) -> str:
    text = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))
    text = _PREFIX.sub("", text, count=1)
    tail = _SUFFIX.search(text)
    return text[: tail.start()] if tail else text


def parse_expression(text: str) -> str | None:
    """The arithmetic part of an utterance ("帮我算一下三加五" → "三加五"), or None when it is not a calculation.

    Everything left after the polite prefix and the question tail must be numbers and operators, with at least
    one operator: "二十分钟后提醒我吃药" and a lone number are not calculations; "三加" is (an incomplete one)."""
    expression = _clean(text)
    if not expression or not re.fullmatch(f"(?:{_TOKEN.pattern})+", expression):
        return None
    kinds = {kind for kind, _, _ in _tokens(expression)}
    return expression if "num" in kinds and kinds & {"op", "pow"} else None


def calculate(text: str) -> Calculation:
    """Parse, evaluate and phrase the reply; raises ``CalcError`` with a spoken message when it cannot."""
    expression = parse_expression(text)
    if expression is None:
        raise CalcError("这好像不是一个算式，请再说一遍。")
    try:
        node = _Parser(_tokens(expression)).parse()
    except RecursionError as e:  # hundreds of nested parentheses
        raise CalcError(UNCLEAR) from e
    reading = say_number(node.value)
    answer = node.said + ("" if reading.startswith("约") else "等于") + reading
    if len(answer) > 40:  # too long to listen to: just the result
        answer = "结果" + ("" if reading.startswith("约") else "是") + reading
    return Calculation(node.said, node.value, answer)


def say_number(value: Fraction | float) -> str:
    """The Chinese reading: 96 → 九十六, -3 → 负三, 0.5 → 零点五, 1/3 → 约等于零点三三, 10000 → 一万."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CalcError("这个数太大了，我说不出来。")
        value = Fraction(repr(value))  # the decimal the float prints as: 0.1 is 1/10
    value = Fraction(value)
    if (value * 10**4).denominator == 1:  # at most 4 decimals: said exactly
        return _read(value)
    places = 2
    while places < 6 and abs(value) * 10 ** (places - 1) < 1:  # keep 2 significant digits of a small number
        places += 1
    rounded = Fraction(math.floor(abs(value) * 10**places + Fraction(1, 2)), 10**places)
    return "约等于" + _read(rounded if value > 0 else -rounded)


def _read(value: Fraction) -> str:
    """The exact reading of a finite decimal."""
    if abs(value) >= TOO_BIG:
        raise CalcError("这个数太大了，我说不出来。")
    whole, rest = divmod(abs(value), 1)
    decimals = ""
    while rest:
        digit, rest = divmod(rest * 10, 1)
        decimals += str(digit)
    said = cn2an.an2cn(f"{whole}.{decimals}" if decimals else str(whole))
    said = re.sub(r"^二(?=[千万亿])", "两", said)
    return ("负" if value < 0 else "") + said
