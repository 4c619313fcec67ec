"""The echo filter: transcripts of the assistant's own voice are caught, the user's requests are not."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from assistant.text.echo_match import EchoMatch, is_echo, match, syllables

HELPER = "我是你的语音助手，有什么可以帮你的吗？"
TIME = "现在是三点十五分。"
WEATHER = "今天天气很好，气温二十度，适合出门散步。"
CAMERA = "好的，已经为你切换到后视摄像头。"
CALL = "她说明天下午会给你回电话。"
REMIND = "好的，我会在五分钟后提醒你。"
WIFI = "已经为你打开 Wi-Fi。"

# (transcript, what the assistant spoke, is it an echo)
CASES = [
    # echoes: the reply, or the fragment of it the microphone heard, as Whisper wrote it
    ("我是你的语音助手", [HELPER], True),  # exact fragment
    ("我是你的语音主手", [HELPER], True),  # homophone 助/主
    ("我事你的语音助手", [HELPER], True),  # homophone 是/事
    ("我是你的語音助手", [HELPER], True),  # traditional characters
    ("我是你语音助手", [HELPER], True),  # one character dropped
    ("有什么可以帮助你的吗", [HELPER], True),  # one character inserted
    ("语音助手有什么可以", [HELPER], True),  # cut at both ends, across the comma
    ("现在是3点15分", [TIME], True),  # digits vs words
    ("现在是3点", [TIME], True),
    ("今天天气很好气温20度", [WEATHER], True),  # digits, punctuation dropped
    ("今天天气很好，气温二十度，适合出门散步。", [WEATHER], True),  # the whole reply
    ("天气很好。气温二十度!", [WEATHER], True),  # other punctuation
    ("已经为你切换到后四摄像头", [CAMERA], True),  # accent: shi/si costs half
    ("他说明天下午会给你回电话", [CALL], True),  # 他/她
    ("我会再5分钟后提醒你", [REMIND], True),  # 再/在 and a digit
    ("已經為你打開WiFi", [WIFI], True),  # traditional, Latin word spelled differently
    ("有什么可以帮你的吗", [WEATHER, HELPER], True),  # the second of the spoken texts
    # not echoes: the user speaking over or after the reply
    ("切换前视", [WEATHER], False),  # unrelated request
    ("切换前视", [CAMERA], False),  # shares 切换 and 视 with the reply: 0.5
    ("天气怎么样", [WEATHER], False),  # shares 天气 only: 2 of 5 syllables
    ("今天天气怎么样", [WEATHER], False),  # shares 今天天气: 4 of 7 syllables
    ("现在几点了", [TIME], False),
    ("帮我设置一个闹钟", [HELPER], False),
    ("打开客厅的灯", [WIFI], False),
    ("好", [CAMERA], False),  # one syllable: never echo, even though the reply has 好
    ("停", [CAMERA], False),
    ("", [HELPER], False),  # empty transcript
    ("。。。", [HELPER], False),  # nothing to hear
    ("我是你的语音助手", [], False),  # nothing spoken
    ("ok", [HELPER], False),
]


@pytest.mark.parametrize(("transcript", "spoken", "echo"), CASES)
def test_echo_table(transcript: str, spoken: list[str], echo: bool) -> None:
    assert is_echo(transcript, spoken) is echo, match(transcript, spoken)


def test_threshold_sits_in_the_gap_of_the_table() -> None:
    scored = [(match(t, s).score, echo) for t, s, echo in CASES if len(syllables(t)) >= 2]
    assert min(score for score, echo in scored if echo) >= 0.85
    assert max(score for score, echo in scored if not echo) <= 0.6


def test_syllables() -> None:
    assert syllables("現在是3点15分！") == ["xian", "zai", "shi", "san", "dian", "shi", "wu", "fen"]
    assert syllables("打开 Wi-Fi, OK?") == ["da", "kai", "wifi", "ok"]
    assert syllables("RK3576") == ["rk", "san", "wu", "qi", "liu"]  # a model number, digit by digit
    assert syllables("2026年") == ["er", "ling", "er", "liu", "nian"]
    assert syllables("0755") == ["ling", "qi", "wu", "wu"]
    assert syllables("105") == ["yi", "bai", "ling", "wu"]
    assert syllables("3.50元") == ["san", "dian", "wu", "yuan"]
    assert syllables("50%") == ["bai", "fen", "zhi", "wu", "shi"]
    assert syllables("，。！ ") == []


def test_match_reports_the_span_of_spoken_text() -> None:
    found = match("语音组手有什么", [WEATHER, HELPER])  # zu for zhu: half a substitution in 7 syllables
    assert found.span == "语音助手，有什么"
    assert found.score == pytest.approx(1 - 0.5 / 7)
    assert match("现在是3点", [TIME]) == EchoMatch(score=1.0, span="现在是三点")
    assert match("", [HELPER]) == EchoMatch(score=0.0, span="")
    assert match("你好", []) == EchoMatch(score=0.0, span="")


def test_min_syllables_and_threshold_are_the_callers() -> None:
    assert is_echo("好的", [CAMERA])  # two syllables the reply says: echo at the default
    assert not is_echo("好的", [CAMERA], min_syllables=3)
    assert is_echo("天气怎么样", [WEATHER], threshold=0.4)


HAN = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5)
ANY = st.text(st.one_of(HAN, st.sampled_from("，。！？ ,.!?0123456789abcXYZ%-")), max_size=20)


@given(prefix=ANY, core=st.text(HAN, min_size=4, max_size=15), suffix=ANY)
def test_a_stretch_of_chinese_characters_matches_itself(prefix: str, core: str, suffix: str) -> None:
    assume(syllables(core))
    assert match(core, [prefix + core + suffix]).score == 1.0


@given(transcript=ANY, spoken=st.lists(ANY, max_size=3))
def test_score_is_between_0_and_1(transcript: str, spoken: list[str]) -> None:
    assert 0.0 <= match(transcript, spoken).score <= 1.0


@given(transcript=st.text(st.one_of(HAN, st.sampled_from("，。 ")), max_size=15), spoken=ANY)
def test_no_syllable_in_common_is_never_echo(transcript: str, spoken: str) -> None:
    said = set(syllables(spoken))
    heard = "".join(c for c in transcript if not said & set(syllables(c)))
    assert not is_echo(heard, [spoken])
    assert match(heard, [spoken]).score <= 0.5  # every syllable costs at least half a substitution
