"""Listening and barge-in details on replayed sessions: the noise guard, the speculative ASR, stop
words, the transcript echo filter and the wake word's second stage. The VAD is the real one; the
other models are doubles where they are not what is tested."""

from __future__ import annotations

import numpy as np

from assistant.clock import SampleClock
from models.sherpa_vad import silero_model_path
from models.silero_vad import SileroVad
from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedKws, ScriptedLlm, ScriptedTurn
from tests.test_replay import LONG_REPLY, barge_in_session


def white_noise(seconds: float, dbfs: float) -> np.ndarray:
    x = np.random.default_rng(7).standard_normal(int(seconds * 16000))
    return (x * 10 ** (dbfs / 20)).astype(np.float32)


async def test_a_burst_of_flat_noise_is_not_taken_for_speech(run_replay, assets):
    vad = SileroVad(silero_model_path(assets))
    vad.load()
    session = session_of(silence(1.0), white_noise(1.0, -20), silence(3.0))
    # A very sensitive VAD (threshold 0.05) takes white noise for speech; the guard refuses its onset.
    sensitive = ("vad.threshold=0.05", "dialog.follow_up_s=0")
    guarded = await run_replay(session, *sensitive, vad_model=vad)
    assert guarded.transitions() == []
    assert guarded.summary["noise_rejected"] >= 1
    unguarded = await run_replay(session, *sensitive, "vad.noise_guard=false", vad_model=vad)
    assert unguarded.transitions()[0] == ("idle", "listening", "wake")
    # Real speech after silence passes the guard.
    speech = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                              vad_model=vad)
    assert speech.summary["noise_rejected"] == 0 and len(speech.summary["turns"]) == 1
    vad.close()


async def test_the_speculative_transcript_is_used_when_no_more_speech_comes(run_replay):
    session = session_of(real("cmd_qiehuan_1.wav"), silence(2.0))
    asr = ScriptedAsr("切换前视")
    r = await run_replay(session, "dialog.follow_up_s=0", asr=asr)
    ended = r.first("speech_ended")
    # One ASR run, started before the endpoint on the speech so far: shorter than the utterance.
    assert asr.calls == 1 and len(asr.heard[0]) / 16000 < ended["audio_s"] - 0.05
    assert r.first("transcript")["text"] == "切换前视" and r.first("transcript")["t"] == ended["t"]
    off = ScriptedAsr("切换前视")
    r = await run_replay(session, "dialog.follow_up_s=0", "vad.speculative_silence_ms=0", asr=off)
    assert off.calls == 1 and len(off.heard[0]) / 16000 == r.first("speech_ended")["audio_s"]


async def test_a_speculation_is_dropped_when_the_speaker_goes_on(run_replay):
    # 告诉我，你是谁？你叫什么名字？ has pauses longer than the speculative silence, shorter than the endpoint.
    asr = ScriptedAsr("告诉我，你是谁？你叫什么名字？")
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0", asr=asr)
    assert asr.calls >= 2  # speculations started in the pauses, then again at the end
    assert len(asr.heard) == 1  # all on the one utterance, none used for a part of it
    assert len(r.summary["turns"]) == 1


async def test_a_stop_word_heard_over_the_reply_ends_it_without_an_answer(run_replay):
    asr, llm = ScriptedAsr("你是谁", "别说了"), ScriptedLlm(LONG_REPLY, "好的。")
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=0", asr=asr, llm=llm)
    assert r.transitions()[-3:] == [("speaking", "listening", "barge_in"), ("listening", "thinking", "speech_end"),
                                    ("thinking", "idle", "stop")]
    assert r.types().count("playback_started") == 1 and len(llm.asked) == 1


async def test_a_stop_word_from_the_keyword_spotter_stops_the_reply(run_replay):
    kws = ScriptedKws("别说了", 5.0)
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=0", "barge_in.by_speech=false",
                         llm=ScriptedLlm(LONG_REPLY), kws=kws)
    assert r.first("barge_in")["reason"] == "stop_word"
    assert ("speaking", "idle", "stop") in r.transitions()
    assert r.first("playback_finished")["interrupted"] is True


async def test_an_utterance_that_is_the_reply_heard_back_is_dropped(run_replay):
    asr = ScriptedAsr("你是谁", "一个离线的普通话语音助手")  # what Whisper makes of the reply's echo
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=0", asr=asr, llm=ScriptedLlm(LONG_REPLY))
    assert r.first("echo_ignored")["layer"] == "transcript"
    assert r.summary["echo_defence"]["transcript"] == 1
    assert r.types().count("playback_started") == 1  # nothing said in reply to itself
    # The same words long after the assistant spoke are the user's, and answered.
    later = session_of(real("ask_who_are_you.wav"), silence(10.0), real("cmd_qiehuan_1.wav"), silence(1.0))
    asr = ScriptedAsr("你是谁", "一个离线的普通话语音助手")
    r = await run_replay(later, "dialog.follow_up_s=12", asr=asr, llm=ScriptedLlm("我是听说。", "对。"))
    assert r.summary["echo_defence"]["transcript"] == 0 and r.types().count("playback_started") == 2


async def test_the_second_stage_refuses_a_wake_the_asr_does_not_hear(run_replay):
    session = session_of(silence(0.5), real("ask_who_are_you.wav"), silence(2.0))
    verify = ("wake.mode='keyword'", "wake.verify=true", "dialog.follow_up_s=0")
    rejected = await run_replay(session, *verify, kws=ScriptedKws("小智小智", 1.0), asr=ScriptedAsr("告诉我"))
    assert rejected.first("wake_rejected") == {"t": rejected.first("wake_rejected")["t"], "type": "wake_rejected",
                                               "keyword": "小智小智", "heard": "告诉我"}
    assert rejected.transitions() == []
    confirmed = await run_replay(session, *verify, kws=ScriptedKws("小智小智", 0.4),
                                 asr=ScriptedAsr("小志小志", "你是谁"))
    assert confirmed.transitions()[0] == ("idle", "listening", "wake")
    assert [e["text"] for e in confirmed.events if e["type"] == "transcript"] == ["你是谁"]


async def test_speech_the_asr_cannot_make_out_is_asked_again_not_guessed(run_replay):
    llm = ScriptedLlm("不该有这句。")
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), "dialog.follow_up_s=1.0",
                         asr=ScriptedAsr(""), llm=llm)
    assert [e["text"] for e in r.events if e["type"] == "reply_text"] == ["没听清，请再说一遍。"]
    assert llm.asked == []
    assert r.transitions()[2:4] == [("thinking", "speaking", "first_audio"), ("speaking", "listening", "reply_done")]
    # A short burst with no words in it (a cough, a knock) gets no answer at all.
    short = await run_replay(session_of(real("cmd_qiehuan_1.wav")[11000:17000], silence(2.0)),
                             "dialog.follow_up_s=0", asr=ScriptedAsr(""), llm=llm)
    assert "transcript" in short.types() and "reply_text" not in short.types()


async def endpoint_wait(run_replay, turn: ScriptedTurn, *overrides: str) -> float:
    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(2.0)), "dialog.follow_up_s=0", *overrides,
                         asr=ScriptedAsr("切换前视"), turn=turn)
    assert len(r.summary["turns"]) == 1
    return r.summary["turns"][0]["endpoint_wait_s"]


async def test_the_turn_model_ends_a_finished_turn_at_its_first_check(run_replay):
    finished = ScriptedTurn(0.9)
    wait = await endpoint_wait(run_replay, finished, "vad.turn_check_ms=200")
    assert len(finished.heard) == 1
    assert 0.2 <= wait < 0.3  # the check after 200 ms of quiet, plus at most a VAD window and a chunk
    assert wait < await endpoint_wait(run_replay, ScriptedTurn(0.9), "vad.turn_check_ms=400")


async def test_a_turn_model_slower_than_its_checks_is_let_finish_and_ends_the_turn(run_replay):
    # A call takes 250 ms of session time, the checks are 100 ms apart: cancelled and asked again at
    # each check, it would never answer, and the 1 s of silence would end every turn.
    clock = SampleClock(16000)
    slow = ScriptedTurn(0.9, clock=clock, seconds=0.25)
    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(2.0)), "dialog.follow_up_s=0",
                         "vad.turn_check_ms=100", "vad.turn_max_silence_ms=1000", asr=ScriptedAsr("切换前视"),
                         turn=slow, clock=clock)
    assert len(slow.heard) == 1 and slow.answered == 1  # asked once, and heard out
    assert 0.35 <= r.summary["turns"][0]["endpoint_wait_s"] < 0.5  # its answer, not the silence, ended it


async def test_an_unfinished_turn_is_given_up_to_the_long_silence(run_replay):
    unsure = ScriptedTurn(0.1)
    wait = await endpoint_wait(run_replay, unsure, "vad.turn_check_ms=200", "vad.turn_max_silence_ms=900")
    assert 0.9 <= wait < 1.0
    assert len(unsure.heard) >= 3  # asked again after each further 200 ms: 200, 400, 600, 800 ms


async def test_a_failing_turn_model_leaves_the_silence_to_decide(run_replay):
    broken = ScriptedTurn(0.9, error=RuntimeError("onnxruntime fell over"))
    wait = await endpoint_wait(run_replay, broken, "vad.turn_max_silence_ms=700")
    assert broken.heard and 0.7 <= wait < 0.8


async def test_a_turn_heard_finished_early_still_waits_for_the_least_silence(run_replay):
    finished = ScriptedTurn(0.9)
    wait = await endpoint_wait(run_replay, finished, "vad.turn_check_ms=100", "vad.turn_min_silence_ms=300")
    assert len(finished.heard) == 1  # asked once, at 100 ms: not again while waiting for the 300 ms
    assert 0.3 <= wait < 0.4


# No turn model here: the silence ends an utterance, after half a second (not inside 嘿，小智你在吗).
SLOW_END = ("vad.endpoint_silence_ms=500", "vad.short_endpoint_silence_ms=500", "dialog.follow_up_s=2")


def paused_request(pause_s: float) -> np.ndarray:
    """hey_xiaozhi.wav's two questions with ``pause_s`` of quiet between them."""
    from tests.sessions import HEY_XIAOZHI_FIRST_QUESTION_S

    clip = real("hey_xiaozhi.wav")
    cut = int(HEY_XIAOZHI_FIRST_QUESTION_S * 16000)
    return session_of(silence(0.5), clip[:cut], silence(pause_s), clip[cut:], silence(6.0))


def heard_s(r) -> list[float]:
    return [e["audio_s"] for e in r.events if e["type"] == "speech_ended"]


async def test_speech_right_after_the_request_goes_on_with_it(run_replay):
    r = await run_replay(paused_request(0.4), *SLOW_END, asr=ScriptedAsr("你在吗"),
                         llm=ScriptedLlm(LONG_REPLY, "在的。"))
    assert [e["reason"] for e in r.events if e["type"] == "barge_in"] == ["speech"]
    first, whole = heard_s(r)
    assert whole > first + 1.0  # heard again from the first half's start, with the pause and 今天怎么样


async def test_after_a_reply_that_did_something_the_speech_is_a_new_request(run_replay, tmp_path):
    from assistant.tools.answers import Tools
    from assistant.tools.store import Store
    from tests.doubles import FixedClock

    store = Store(tmp_path / "t.sqlite3")
    r = await run_replay(paused_request(0.4), *SLOW_END, asr=ScriptedAsr("添加待办买牛奶", "今天怎么样"),
                         llm=ScriptedLlm("在的。"), tools=Tools(store, FixedClock()))
    assert [e["reason"] for e in r.events if e["type"] == "barge_in"] == ["speech"]  # over 已记下待办…
    first, then = heard_s(r)
    assert then < first  # only the new speech
    assert [t.text for t in store.todos()] == ["买牛奶"]  # added once
    store.close()


async def test_speech_long_after_the_request_is_a_new_one(run_replay):
    r = await run_replay(paused_request(0.4), *SLOW_END, "listening.resume_s=0.1", asr=ScriptedAsr("你在吗", "今天"),
                         llm=ScriptedLlm(LONG_REPLY, "在的。"))
    assert [e["reason"] for e in r.events if e["type"] == "barge_in"] == ["speech"]
    first, then = heard_s(r)
    assert then < first
