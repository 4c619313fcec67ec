"""Hot-word correction: near-miss spans become configured commands; exact hot words and everyday speech stay put."""

from __future__ import annotations

import pytest

from assistant.text.hotwords import Correction, HotwordCorrector

HOTWORDS = ["客厅", "卧室灯", "卧室灯带", "切换前视", "切换后视", "打开蓝牙", "空调"]

# (transcript, corrected transcript)
CASES = [
    ("打开客停的灯", "打开客厅的灯"),  # homophone 停/厅
    ("客听", "客厅"),
    ("千万前世", "切换前视"),  # two slips: qian/qie, wan/huan (score 0.81)
    ("切换全式", "切换前视"),  # quan/qian
    ("切换后世", "切换后视"),
    ("切换后视", "切换后视"),  # exact
    ("打开卧室灯", "打开卧室灯"),  # exact: never becomes 卧室灯带
    ("打开卧室灯带", "打开卧室灯带"),
    ("卧室等", "卧室灯"),
    ("卧室等带", "卧室灯带"),  # the longer hot word explains the span best
    ("打开蓝雅", "打开蓝牙"),
    ("打开空条", "打开空调"),  # hot words read as phrases: 调 is tiao here
    ("开空调", "开空调"),
    ("今天天气怎么样", "今天天气怎么样"),
    ("你是谁", "你是谁"),
    ("给我讲个笑话", "给我讲个笑话"),
    ("北京是哪个国家的首都", "北京是哪个国家的首都"),
    ("客人停车了吗？", "客人停车了吗？"),  # 人停: another initial, 0.5
    ("客户停机", "客户停机"),
    ("客灵", "客灵"),  # one syllable with another initial: 0.75
    ("切换前面", "切换前面"),  # 0.75, below the threshold
    ("打开蓝色", "打开蓝色"),
    ("关闭蓝牙", "关闭蓝牙"),
    ("我是等你", "我是等你"),  # a pure homophone of 卧室灯 sharing no character: not anchored
    ("客，停", "客，停"),  # not one run of adjacent characters
    ("打开ke停", "打开ke停"),  # Latin letters are not touched
    ("", ""),
]


@pytest.mark.parametrize(("heard", "expected"), CASES)
def test_correct(heard: str, expected: str) -> None:
    text, corrections = HotwordCorrector(HOTWORDS).correct(heard)
    assert text == expected
    assert bool(corrections) == (heard != expected)


def test_corrections_report_what_changed() -> None:
    text, corrections = HotwordCorrector(HOTWORDS).correct("先打开客停的灯，再切换全式")
    assert text == "先打开客厅的灯，再切换前视"
    assert [(c.heard, c.word) for c in corrections] == [("客停", "客厅"), ("切换全式", "切换前视")]
    assert corrections[0] == Correction("客停", "客厅", 1.0)
    assert 0.8 <= corrections[1].score < 1.0


@pytest.mark.parametrize("heard", [text for text, _ in CASES])
def test_no_hotwords_no_change(heard: str) -> None:
    assert HotwordCorrector([]).correct(heard) == (heard, [])


def test_ties_change_nothing() -> None:
    # 切换前世 is equally close to two hot words that differ only in the last syllable's characters
    corrector = HotwordCorrector(["切换前视", "切换前式"])
    assert corrector.correct("切换前世") == ("切换前世", [])


def test_unanchored_homophones_and_non_chinese_hotwords() -> None:
    assert HotwordCorrector(["卧室灯"], anchored=False).correct("我是等你")[0] == "卧室灯你"
    assert HotwordCorrector(["WiFi", "蓝牙"]).correct("打开WiFi和蓝雅")[0] == "打开WiFi和蓝牙"
