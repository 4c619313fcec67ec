"""Whisper's transcript mended where the second ear heard other syllables (assistant.text.ear_repair)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.text import ear_repair
from assistant.text.ear_repair import Lexicon, Mender, disagreements, mend, pinyin

COUNTS = {"怎么": 27339, "环节": 1626, "缓解": 1111, "紧张": 8000, "等": 9000, "摩": 300, "为什么": 9561,
          "月亮": 2000, "会": 50000, "发光": 800, "冷": 3000, "不": 90000, "北京": 9000, "后天": 900,
          "点": 8000, "线": 3000, "里": 20000, "的": 300000, "谢谢": 5000, "你": 80000, "帮助": 6000,
          "香蕉": 526, "橡胶": 949, "相交": 740, "是": 200000, "什么": 59317, "颜色": 3000}
LEXICON = Lexicon.from_counts(COUNTS)


def syl(text: str) -> list[str]:
    return text.split()


class Sentences:
    """A language-model double: the sentences a person would say score −1 a character, anything else −8."""

    def __init__(self, *said: str) -> None:
        self.said = set(said)
        self.asked: list[str] = []

    def __call__(self, texts: list[str]) -> list[float]:
        self.asked += texts
        bare = ["".join(ch for ch in t if ch.isalnum()) for t in texts]
        return [-1.0 * len(b) if b in self.said else -8.0 * len(b) for b in bare]


def test_a_span_the_second_ear_heard_otherwise_is_spelled_as_it_heard_it() -> None:
    lm = Sentences("怎么缓解紧张")
    mended = mend("等摩环节紧张？", syl("zen me huan jie jin zhang"), LEXICON, lm)
    assert mended.text == "怎么缓解紧张？"  # the punctuation kept; 缓解 chosen over 环节 by the model
    assert "怎么环节紧张？" in mended.tried


def test_a_word_the_ears_split_differently_is_spelled_whole() -> None:
    # Whisper dropped a syllable (未神 for 为什么): the span is spelled with its neighbours
    lm = Sentences("月亮为什么会发光")
    assert mend("月亮未神会发光。", syl("yue liang wei shen me hui fa guang"), LEXICON, lm).text == "月亮为什么会发光。"
    lm = Sentences("后天北京冷不冷")
    assert mend("后天北京能布朗", syl("hou tian bei jing leng bu leng"), LEXICON, lm).text == "后天北京冷不冷"


def test_syllables_the_second_ear_missed_are_not_dropped_from_the_transcript() -> None:
    # the streaming ear often misses a request's first syllables: 鲁迅 is not mended away, though the
    # rest alone reads as a likelier sentence; one syllable Whisper added may still go
    lexicon = Lexicon.from_counts({**COUNTS, "哪": 5000, "国": 8000, "人": 40000, "用": 30000, "呼吸": 900})
    lm = Sentences("是哪国人", "用什么呼吸")
    assert mend("无讯是哪国人", syl("shi na guo ren"), lexicon, lm).text == "无讯是哪国人"
    assert mend("以用什么呼吸", syl("yong shen me hu xi"), lexicon, lm).text == "用什么呼吸"


def test_whisper_keeps_its_words_where_the_model_does_not_find_the_ears_likelier() -> None:
    lm = Sentences("谢谢你的帮助")  # the second ear is wrong here: 点线里的帮助 is no sentence
    assert mend("谢谢你的帮助。", syl("dian xian li de bang zhu"), LEXICON, lm).text == "谢谢你的帮助。"
    nothing = Sentences()  # neither reads as a sentence: a mended text must be clearly likelier
    assert mend("等摩环节紧张", syl("zen me huan jie jin zhang"), LEXICON, nothing).text == "等摩环节紧张"


def test_a_homophone_lower_in_the_word_list_is_weighed_too() -> None:
    lm = Sentences("香蕉是什么颜色的")
    assert mend("正教是什么颜色的", syl("xiang jiao shi shen me yan se de"), LEXICON, lm).text == "香蕉是什么颜色的"


def test_what_the_ears_agree_on_or_cannot_compare_is_left_as_it_is() -> None:
    lm = Sentences("怎么缓解紧张")
    assert mend("怎么环节紧张", syl("zen me huan jie jin zhang"), LEXICON, lm).text == "怎么环节紧张"
    assert lm.asked == []  # no disagreement: the model is not asked
    assert mend("15加27等于多少", syl("shi wu jia er shi qi deng yu duo shao"), LEXICON, lm).text == "15加27等于多少"
    assert mend("等摩环节紧张", [], LEXICON, lm).text == "等摩环节紧张"  # the second ear heard nothing
    # the ears heard different things altogether (a noise, another talker): no mending
    assert mend("等摩环节紧张", syl("ni hao"), LEXICON, Sentences("你好")).text == "等摩环节紧张"
    assert mend("", syl("zen me"), LEXICON, lm).text == ""
    long = "等摩环节紧张" * 5  # past a request's length: kept as heard, no forward pass spent on it
    assert mend(long, syl("zen me huan jie jin zhang " * 5), LEXICON, Sentences("怎么缓解紧张" * 5)).text == long


def test_disagreements_are_the_spans_between_agreeing_syllables() -> None:
    heard, ear = pinyin("后天北京能布朗"), syl("hou tian bei jing leng bu leng")
    assert heard == ["hou", "tian", "bei", "jing", "neng", "bu", "lang"]
    assert disagreements(heard, ear) == [(4, 5, 4, 5), (6, 7, 6, 7)]
    assert disagreements(pinyin("月亮未神会发光"), syl("yue liang wei shen me hui fa guang")) == [(4, 4, 4, 5)]
    assert disagreements(["ni", "hao"], ["ni", "hao"]) == []


def test_spellings_follow_the_word_frequencies() -> None:
    assert [s for s, _ in LEXICON.spellings(syl("xiang jiao"))] == ["橡胶", "相交", "香蕉"]
    spelled = LEXICON.spellings(syl("wei shen me"))
    assert spelled[0][0] == "为什么" and spelled[0][1] < 0
    assert LEXICON.spellings(syl("qiang")) == []  # no word for it: nothing to spell


def test_the_word_list_is_read_once_and_kept(tmp_path: Path) -> None:
    words = tmp_path / "dict.txt"
    words.write_text("怎么 27339 r\n缓解 1111 v\n稀罕 3 a\nAT&T 3 nz\n为什么 9561 r\n", encoding="utf-8")
    cache = tmp_path / "cache" / "lexicon.json"
    lexicon = Lexicon.from_word_list(words, cache)
    assert [s for s, _ in lexicon.spellings(["zen", "me"])] == ["怎么"]
    assert lexicon.spellings(["xi", "han"]) == []  # below the frequency kept
    kept = json.loads(cache.read_text(encoding="utf-8"))
    assert set(kept["words"]) == {"zen me", "huan jie", "wei shen me"}
    kept["words"]["zen me"] = [["怎末", 5]]
    cache.write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    assert [s for s, _ in Lexicon.from_word_list(words, cache).spellings(["zen", "me"])] == ["怎末"]  # the cache
    cache.write_text("{not json", encoding="utf-8")
    assert [s for s, _ in Lexicon.from_word_list(words, cache).spellings(["zen", "me"])] == ["怎么"]  # rebuilt
    words.write_text("怎么 27339 r\n", encoding="utf-8")  # the word list changed: the cache is stale
    assert Lexicon.from_word_list(words, cache).spellings(["huan", "jie"]) == []


def test_the_mender_reads_its_word_list_at_load(tmp_path: Path) -> None:
    words = tmp_path / "dict.txt"
    words.write_text("".join(f"{w} {f} n\n" for w, f in COUNTS.items()), encoding="utf-8")
    mender = Mender(words)
    with pytest.raises(RuntimeError, match="before load"):
        mender("等摩环节紧张", ["zen"], Sentences())
    mender.load()
    assert mender("等摩环节紧张", syl("zen me huan jie jin zhang"), Sentences("怎么缓解紧张")) == "怎么缓解紧张"


def test_jiebas_word_list_is_found_as_data() -> None:
    found = ear_repair.jieba_word_list()
    assert found is not None and found.name == "dict.txt" and found.stat().st_size > 1_000_000
