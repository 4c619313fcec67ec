"""The reply as the turn's handle (``states/reply.py``): each reply's ``done`` future carries how it
ended, and its ``first_audio`` future where its first audio was queued.

Replays of real recordings, with doubles for the ASR, LLM and TTS; each reply the machine makes is
recorded by a subclass, and its outcome read from the handle after the replay.
"""

from __future__ import annotations

import pytest

from assistant.respond import NOT_HEARD
from states import thinking
from states.outcome import NEXT, Ended, Outcome
from states.reply import Reply
from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedLlm
from tests.test_replay import LONG_REPLY, barge_in_session


@pytest.fixture
def replies(monkeypatch: pytest.MonkeyPatch) -> list[Reply]:
    """Every reply thinking starts, in order."""
    made: list[Reply] = []

    class Recorded(Reply):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(thinking, "Reply", Recorded)
    return made


def outcomes(replies: list[Reply]) -> list[Outcome]:
    assert all(r.done.done() for r in replies), "a reply was left without an outcome"
    return [r.done.result() for r in replies]


async def test_a_reply_heard_to_its_end_is_spoken_with_its_request_and_its_words(run_replay, replies):
    asr = ScriptedAsr("告诉我，你是谁？你叫什么名字？")
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                         asr=asr)
    done, = outcomes(replies)
    assert done.ended is Ended.SPOKEN
    assert done.request == "告诉我，你是谁？你叫什么名字？" and done.said == "我是听说。"
    # the first-audio future holds the session sample the summary reports the first audio at
    turn, = r.summary["turns"]
    assert replies[0].first_audio.result() == done.first_audio_sample
    assert abs(done.first_audio_sample - turn["first_audio_t"] * 16000) <= 16  # the summary rounds to 1 ms


async def test_a_reply_cut_off_by_speech_is_interrupted_and_the_next_one_is_spoken(run_replay, replies):
    asr, llm = ScriptedAsr("你是谁", "切换前视"), ScriptedLlm(LONG_REPLY, "好的，已切换前视。")
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=0", asr=asr, llm=llm)
    first, second = outcomes(replies)
    assert first.ended is Ended.INTERRUPTED and first.request == "你是谁"
    assert first.first_audio_sample is not None  # it had begun to play
    assert second.ended is Ended.SPOKEN and second.request == "切换前视"
    assert ("speaking", "listening", "barge_in") in r.transitions()


async def test_a_short_utterance_with_no_words_is_silent_and_asks_for_nothing_to_be_played(run_replay, replies):
    short = real("cmd_qiehuan_1.wav")[11000:17000]  # a burst under UNHEARD_MIN_S: most likely a noise
    r = await run_replay(session_of(short, silence(1.5)), "dialog.follow_up_s=0", asr=ScriptedAsr(""))
    done, = outcomes(replies)
    assert done.ended is Ended.SILENT and done.said == "" and done.first_audio_sample is None
    assert ("thinking", "idle", NEXT[Ended.SILENT].trigger) in r.transitions()
    assert "playback_started" not in r.types()


async def test_a_long_utterance_with_no_words_is_asked_again(run_replay, replies):
    await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                     asr=ScriptedAsr(""))
    done, = outcomes(replies)
    assert done.ended is Ended.SPOKEN and done.request == "" and done.said == NOT_HEARD


async def test_a_request_that_is_a_stop_word_ends_with_the_stop_trigger(run_replay, replies):
    asr, llm = ScriptedAsr("你是谁", "别说了"), ScriptedLlm(LONG_REPLY, "好的。")
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=0", asr=asr, llm=llm)
    first, second = outcomes(replies)
    assert first.ended is Ended.INTERRUPTED
    assert second.ended is Ended.STOP_WORD and second.request == "别说了"
    assert r.transitions()[-1] == ("thinking", "idle", NEXT[Ended.STOP_WORD].trigger)
    assert len(llm.asked) == 1  # the stop word was not answered

