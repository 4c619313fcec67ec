"""The reply pipeline in replayed sessions: speaking starts with the first clause, synthesis runs
ahead of playback, a starved sink is reported as a gap, and a barge-in leaves no task behind."""

from __future__ import annotations

import asyncio

from assistant.clock import SampleClock
from tests.conftest import real, session_of, silence
from tests.doubles import PacedTts, ScriptedLlm

THREE_SENTENCES = "好的，我来介绍一下。我叫听说，是一个离线的普通话语音助手。我可以回答问题，也可以帮你设定提醒和闹钟。"


def turn_of(r):
    turn, = r.summary["turns"]
    return turn


async def test_synthesis_overlaps_playback_with_no_gaps_when_rtf_is_below_one(run_replay):
    clock = SampleClock(16000)
    tts = PacedTts(clock, rtf=0.5)
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                         "llm.reply_max_chars=0", "llm.reply_soft_chars=2000",  # a long reply on purpose
                         llm=ScriptedLlm(THREE_SENTENCES), tts=tts, clock=clock)
    turn = turn_of(r)
    assert turn["max_gap_s"] == 0 and turn["underruns"] == 0
    assert len(tts.calls) >= 4
    # Overlap: each later chunk was synthesized while the earlier ones were still playing.
    first_audio = turn["first_audio_t"]
    queued = [e for e in r.events if e["type"] == "chunk_queued"]
    assert queued[0]["t"] == first_audio
    play_end = first_audio + queued[0]["audio_s"]
    for (_, started, finished), q in zip(tts.calls[1:], queued[1:], strict=True):
        assert started < play_end and finished <= play_end  # synthesized while the sink still had audio
        play_end += q["audio_s"]
    # The first chunk is the first clause: first audio = its synthesis time, not the whole reply's.
    assert tts.calls[0][0] == "好的，"
    assert turn["tts_first_audio_s"] <= 0.5 * 3 * 0.25 + 0.04
    assert turn["reply"] == THREE_SENTENCES
    assert turn["rtf"] is not None and 0.45 <= turn["rtf"] <= 0.55


async def test_a_slow_tts_starves_the_sink_and_the_gaps_are_reported(run_replay):
    clock = SampleClock(16000)
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                         llm=ScriptedLlm(THREE_SENTENCES), tts=PacedTts(clock, rtf=1.5), clock=clock)
    turn = turn_of(r)
    assert turn["underruns"] >= 1 and turn["max_gap_s"] > 0.2


async def test_whole_reply_synthesis_waits_for_the_whole_text(run_replay):
    clock = SampleClock(16000)
    pipelined_clock = SampleClock(16000)
    session = session_of(real("ask_who_are_you.wav"), silence(1.0))
    whole = await run_replay(session, "dialog.follow_up_s=0", "tts.streaming=false",
                             llm=ScriptedLlm(THREE_SENTENCES), tts=PacedTts(clock, rtf=0.5), clock=clock)
    piped = await run_replay(session, "dialog.follow_up_s=0", llm=ScriptedLlm(THREE_SENTENCES),
                             tts=PacedTts(pipelined_clock, rtf=0.5), clock=pipelined_clock)
    assert turn_of(piped)["tts_first_audio_s"] < turn_of(whole)["tts_first_audio_s"] / 4


async def test_barge_in_mid_reply_stops_llm_tts_and_playback_and_leaves_no_task(run_replay):
    clock = SampleClock(16000)
    tts = PacedTts(clock, rtf=0.5)
    llm = ScriptedLlm(THREE_SENTENCES * 3, "好的。")
    first = real("ask_who_are_you.wav")
    session = session_of(first, silence(6.0 - len(first) / 16000), real("cmd_qiehuan_1.wav"), silence(2.0))
    r = await run_replay(session, "dialog.follow_up_s=0", llm=llm, tts=tts, clock=clock)
    assert "barge_in" in r.types()
    assert r.first("playback_finished")["interrupted"] is True
    assert tts.stops >= 1 and llm.stops >= 1
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def test_a_cached_phrase_is_played_without_synthesis(run_replay, tmp_path):
    from assistant.phrase_cache import PhraseCache, tts_key

    session = session_of(real("ask_who_are_you.wav"), silence(1.0))
    cache = PhraseCache(tmp_path / "phrases", tts_key("model-sha", "zf_xiaoxiao", 1.0))
    first_clock, second_clock = SampleClock(16000), SampleClock(16000)
    first_tts, second_tts = PacedTts(first_clock, rtf=0.5), PacedTts(second_clock, rtf=0.5)
    first = await run_replay(session, "dialog.follow_up_s=0", llm=ScriptedLlm(THREE_SENTENCES), tts=first_tts,
                             clock=first_clock, phrase_cache=cache)
    second = await run_replay(session, "dialog.follow_up_s=0", llm=ScriptedLlm(THREE_SENTENCES), tts=second_tts,
                              clock=second_clock, phrase_cache=cache)
    assert [c[0] for c in first_tts.calls][:2] == ["好的，", "我来介绍一下。"]
    assert "好的，" not in [c[0] for c in second_tts.calls]  # short phrases came from the cache
    assert turn_of(second)["tts_first_audio_s"] == 0.0 < turn_of(first)["tts_first_audio_s"]
