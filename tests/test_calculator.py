"""The spoken calculator: utterances in, exactly the Chinese reply out; no eval anywhere."""

from __future__ import annotations

import re
from fractions import Fraction

import cn2an  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant.tools.calculator import CalcError, Calculation, calculate, parse_expression, say_number

ANSWERS = [
    ("12乘以8等于多少", "十二乘以八等于九十六"),
    ("帮我算一下三加五", "三加五等于八"),
    ("一百除以七是多少", "一百除以七约等于十四点二九"),
    ("一百除以四是多少", "一百除以四等于二十五"),
    ("三加五等于几", "三加五等于八"),
    ("帮我算一下二十减七", "二十减七等于十三"),
    ("(3+4)*5", "三加四的和乘以五等于三十五"),
    ("（3＋4）×（5－2）", "三加四的和乘以五减二的差等于二十一"),
    ("10-(3+2)", "十减三加二的和等于五"),
    ("10/(2*5)", "十除以二乘以五的积等于一"),
    ("(3*4)+5", "三乘以四加五等于十七"),
    ("左括号一加二右括号乘以三", "一加二的和乘以三等于九"),
    ("负三减二", "负三减二等于负五"),
    ("3*-2", "三乘以负二等于负六"),
    ("3--2", "三减负二等于五"),
    ("3.5加2.25", "三点五加二点二五等于五点七五"),
    ("三点五乘以二", "三点五乘以二等于七"),
    ("0.1+0.2", "零点一加零点二等于零点三"),
    ("二的三次方", "二的三次方等于八"),
    ("三的平方加四的平方", "三的平方加四的平方等于二十五"),
    ("二的立方", "二的立方等于八"),
    ("二的负一次方", "二的负一次方等于零点五"),
    ("负三的平方", "负三的平方等于九"),
    ("十除二", "十除以二等于五"),  # A除B is A÷B, and the reply says 除以
    ("十除以二", "十除以二等于五"),
    ("1除以3", "一除以三约等于零点三三"),
    ("二除以三", "二除以三约等于零点六七"),
    ("一除以三百", "一除以三百约等于零点零零三三"),
    ("两千加五百", "两千加五百等于两千五百"),
    ("一百零五减三千零二十", "一百零五减三千零二十等于负两千九百一十五"),
    ("一万五千除以12", "一万五千除以十二等于一千二百五十"),
    ("一万五加五千", "一万五千加五千等于两万"),
    ("12万除以3", "十二万除以三等于四万"),
    ("五千乘以两万", "五千乘以两万等于一亿"),
    ("12乘八", "十二乘以八等于九十六"),
    ("7x6", "七乘以六等于四十二"),
    ("9÷4", "九除以四等于二点二五"),
    ("八减去三", "八减三等于五"),
    ("八加上三", "八加三等于十一"),
    ("请问3乘4等于多少？", "三乘以四等于十二"),
    ("你能帮我算一下十五除以四吗", "十五除以四等于三点七五"),
    ("计算：7-10", "七减十等于负三"),
    ("三加五的结果是多少", "三加五等于八"),
    ("12乘以8＝？", "十二乘以八等于九十六"),
    ("三乘以四加五乘以六减七除以二", "三乘以四加五乘以六减七除以二等于三十八点五"),
    ("一千万加一千万", "一千万加一千万等于两千万"),
]


@pytest.mark.parametrize(("text", "answer"), ANSWERS)
def test_the_spoken_answer(text: str, answer: str) -> None:
    result = calculate(text)
    assert result.answer == answer
    assert result.answer.startswith(result.expression) or result.answer.startswith("结果")
    assert not re.search("[0-9]", result.answer)


def test_the_table_is_big_enough() -> None:
    assert len(ANSWERS) >= 30


def test_the_value_is_exact() -> None:
    assert calculate("0.1+0.2").value == Fraction(3, 10)
    assert calculate("一百除以七").value == Fraction(100, 7)
    assert calculate("12乘以8") == Calculation("十二乘以八", Fraction(96), "十二乘以八等于九十六")


def test_a_long_expression_is_answered_with_the_result_only() -> None:
    answer = calculate("一千二百三十四乘以五千六百七十八加九千八百七十六乘以五千四百三十二").answer
    assert answer == "结果是六千零六十五万三千零八十四"
    assert len(answer) <= 40
    assert calculate("一除以七的平方").answer == "一除以七的平方约等于零点零二"


ERRORS = [
    ("十除以零", "不能除以零哦。"),
    ("5/0", "不能除以零哦。"),
    ("三除以(三减三)", "不能除以零哦。"),
    ("零的负一次方", "不能除以零哦。"),
    ("三加", "算式好像不完整，请再说一遍。"),
    ("加三", "算式好像不完整，请再说一遍。"),
    ("(3+4", "算式好像不完整，请再说一遍。"),
    ("3乘以", "算式好像不完整，请再说一遍。"),
    ("三加乘五", "这个算式我没听懂，请再说一遍。"),
    ("3+4)", "这个算式我没听懂，请再说一遍。"),
    ("十十加一", "这个算式我没听懂，请再说一遍。"),
    ("万加一", "这个算式我没听懂，请再说一遍。"),
    ("一亿乘以一亿", "这个数太大了，我说不出来。"),
    ("十的十六次方", "这个数太大了，我说不出来。"),
    ("99999999999999999加1", "这个数太大了，我说不出来。"),
    ("二的一万次方", "这个次方我算不了，请换一个试试。"),
    ("二的零点五次方", "这个次方我算不了，请换一个试试。"),
    ("打开蓝牙", "这好像不是一个算式，请再说一遍。"),
    ("(" * 2000 + "1+1" + ")" * 2000, "这个算式我没听懂，请再说一遍。"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_errors_are_polite_sentences(text: str, message: str) -> None:
    with pytest.raises(CalcError) as caught:
        calculate(text)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_the_biggest_sayable_number() -> None:
    assert calculate("十的十五次方").answer == "十的十五次方等于一千万亿"
    assert calculate("9999999999999998+1").value == 10**16 - 1


NUMBERS = [
    (96, "九十六"), (-3, "负三"), (0, "零"), (2, "二"), (10, "十"), (12, "十二"), (105, "一百零五"),
    (3020, "三千零二十"), (10000, "一万"), (15000, "一万五千"), (20000, "两万"), (2000, "两千"), (200, "二百"),
    (100000000, "一亿"), (100010, "十万零一十"), (0.5, "零点五"), (-2.5, "负二点五"), (0.1, "零点一"),
    (Fraction(7, 2), "三点五"), (Fraction(1, 8), "零点一二五"), (Fraction(1, 16), "零点零六二五"),
    (Fraction(1, 3), "约等于零点三三"), (1 / 3, "约等于零点三三"), (Fraction(-1, 3), "约等于负零点三三"),
    (Fraction(2, 3), "约等于零点六七"), (Fraction(1, 64), "约等于零点零一六"), (Fraction(1, 300), "约等于零点零零三三"),
    (Fraction(100, 7), "约等于十四点二九"), (Fraction(1, 10**9), "约等于零"), (Fraction(2999, 1000), "二点九九九"),
    (Fraction(29999, 10000) + Fraction(1, 10**6), "约等于三"),
]


@pytest.mark.parametrize(("value", "said"), NUMBERS)
def test_say_number(value: Fraction | float, said: str) -> None:
    assert say_number(value) == said


@pytest.mark.parametrize("value", [10**16, -(10**16), 1e300, float("inf"), float("nan")])
def test_numbers_too_big_to_say(value: Fraction | float) -> None:
    with pytest.raises(CalcError, match="太大"):
        say_number(value)


NOT_CALCULATIONS = [
    "打开蓝牙", "现在几点", "二十分钟后提醒我吃药", "今天星期几", "待办里加上给妈妈打电话", "音量调到五十", "加油",
    "十分钟后叫我", "我想减肥", "内存还剩多少", "CPU占用多少", "我的IP地址是多少", "今天几号", "三点", "三点半",
    "二十一点", "二十", "负三", "两个加三", "(3)", "x", "", "。", "你是谁", "乘车去北京", "除了你还有谁",
]


@pytest.mark.parametrize("text", NOT_CALCULATIONS)
def test_not_a_calculation(text: str) -> None:
    assert parse_expression(text) is None


@pytest.mark.parametrize(("text", "expression"), [
    ("12乘以8等于多少", "12乘以8"), ("帮我算一下三加五", "三加五"), ("一百除以七是多少", "一百除以七"),
    ("(3+4)*5", "(3+4)*5"), ("负三减二", "负三减二"), ("3.5加2.25", "3.5加2.25"), ("二的三次方", "二的三次方"),
    ("三加", "三加"), ("请问 3 + 4 等于几？", "3+4"), ("（3＋4）×5", "(3+4)×5"),
])
def test_parse_expression_extracts_the_arithmetic(text: str, expression: str) -> None:
    assert parse_expression(text) == expression


WORDS = {"+": ["加", "加上", "+"], "-": ["减", "减去", "-", "−"], "*": ["乘", "乘以", "*", "x", "×"]}


@given(st.lists(st.integers(-999, 999), min_size=2, max_size=5), st.data())
def test_calculate_agrees_with_python_arithmetic(numbers: list[int], data: st.DataObject) -> None:
    ops = [data.draw(st.sampled_from("+-*")) for _ in numbers[1:]]
    spoken = []
    for n in numbers:
        chinese = data.draw(st.booleans())
        spoken.append(("负" if n < 0 else "") + cn2an.an2cn(abs(n)) if chinese else str(n))
    text = spoken[0]
    for op, operand in zip(ops, spoken[1:], strict=True):
        text += data.draw(st.sampled_from(WORDS[op])) + operand
    text += data.draw(st.sampled_from(["", "等于多少", "是多少", "等于几？"]))
    terms = [numbers[0]]  # × before + and −, left to right, in plain ints
    for op, n in zip(ops, numbers[1:], strict=True):
        if op == "*":
            terms[-1] *= n
        else:
            terms.append(n if op == "+" else -n)
    expected = sum(terms)

    result = calculate(text)

    assert result.value == expected, text
    assert result.answer.endswith(say_number(expected))
    assert not re.search("[0-9]", result.answer)
