"""The chunker: property tests over streamed text, plus the cases a listener would notice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant.text.chunk import Chunker
from assistant.text.normalize import normalize, protected_spans

PIECES = ["今天", "天气", "很好", "，", "。", "！", "？", "、", "我们", "去", "公园", "散步", "3", ".", "5",
          "2026-10-21", "22:05", "192.168.0.103", "12×8=96", "35%", "3~5天", "Python", "OK", " ", "\n",
          "100km", "5GB", "第2名", "-5℃", ",", ":", "1,299", "13800138000", "两个", "吧"]


def words(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def stream(chunker: Chunker, parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        out += chunker.feed(part)
    return out + chunker.flush()


def cut_points(chunks: list[str]) -> list[int]:
    points, pos = [], 0
    for chunk in chunks[:-1]:
        pos += len(chunk)
        points.append(pos)
    return points


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=40),
       first_max=st.integers(2, 30), chunk_max=st.integers(4, 60))
def test_chunks_rejoin_and_never_cut_a_protected_span(parts, first_max, chunk_max):
    text = "".join(parts)
    chunks = stream(Chunker(first_max, chunk_max, protected_spans), parts)
    assert "".join(chunks) == text
    assert all(chunks)
    spans = protected_spans(text)
    for cut in cut_points(chunks):
        assert not any(start < cut < end for start, end in spans), (text, chunks)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=40), first_max=st.integers(2, 30))
def test_first_chunk_is_short_unless_a_protected_span_forces_more(parts, first_max):
    text = "".join(parts)
    first = stream(Chunker(first_max, 40, protected_spans), parts)[0]
    if len(first) > first_max:
        spans = protected_spans(text)
        # every earlier cut point was inside a protected span (or would split off punctuation alone)
        assert any(start < first_max < end or start < len(first) <= end for start, end in spans) or \
            not any(ch.isalnum() for ch in text[:first_max]), (text, first)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=30))
def test_normalized_chunks_read_like_the_normalized_whole(parts):
    text = "".join(parts)
    chunks = stream(Chunker(8, 30, protected_spans), parts)
    # The words read out are the same; only the punctuation around a cut may be rendered differently.
    assert words("".join(normalize(c) for c in chunks)) == words(normalize(text))


def test_first_chunk_is_the_first_clause_however_short():
    c = Chunker(12, 40, protected_spans)
    assert c.feed("好的，") == ["好的，"]  # no minimum length to wait for
    assert c.feed("现在是下午三点十五分。今天") == ["现在是下午三点十五分。"]


def test_first_chunk_without_punctuation_is_cut_at_the_limit():
    c = Chunker(8, 40, protected_spans)
    assert c.feed("这是一段很长的句子没有停顿") == ["这是一段很长的句"]


def test_a_number_still_being_written_is_not_cut():
    c = Chunker(12, 20, protected_spans)
    assert c.feed("温度23.") == []  # "23." may be the start of 23.5: no cut after the "."
    assert c.feed("5度，") == ["温度23.5度，"]
    c = Chunker(4, 10, protected_spans)
    chunks = c.feed("温度23") + c.feed(".5度，好") + c.flush()
    assert chunks[0] == "温度"  # a clause too long for the first chunk is cut before the number, not in it
    assert "".join(chunks) == "温度23.5度，好" and any("23.5度" in chunk for chunk in chunks)


def test_a_code_fence_is_held_until_it_closes():
    c = Chunker(4, 10, protected_spans)
    out = c.feed("看：```print(1)，")
    assert out == ["看："]
    out = c.feed("x=2。``` 完成。")
    assert "".join(out + c.flush()) == "```print(1)，x=2。``` 完成。"


def test_later_chunks_grow_with_what_was_said_and_keep_clauses_whole():
    c = Chunker(4, 20, protected_spans)
    text = "好的。我们明天去公园，然后去吃饭。如果下雨的话，我们就在家里看电影，或者看书。"
    assert stream(c, list(text)) == ["好的。", "我们明天去公园，", "然后去吃饭。", "如果下雨的话，我们就在家里看电影，",
                                      "或者看书。"]
    c = Chunker(4, 20, protected_spans, growth=0)  # without growth: whole clauses up to chunk_max
    assert stream(c, list(text)) == ["好的。", "我们明天去公园，然后去吃饭。", "如果下雨的话，我们就在家里看电影，",
                                      "或者看书。"]
