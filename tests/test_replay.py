"""Replayed sessions through the real VAD and the state machine, with doubles for ASR/LLM/TTS.

Each test asserts the sequence of events (and, where it matters, session times from sample
counts) rather than sleeping or timing anything on the wall clock.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedKws, ScriptedLlm

FULL_TURN = [
    "state_changed",      # idle -> listening (wake: speech in always mode)
    "speech_started",
    "speech_ended",
    "state_changed",      # listening -> thinking
    "transcript",
    "llm_first_token",
    "text_chunk",         # the first (here the only) chunk of the reply, as it will be spoken
    "reply_text",
    "playback_started",
    "chunk_queued",
    "state_changed",      # thinking -> speaking
    "playback_finished",
    "state_changed",      # speaking -> listening (follow-up window)
    "state_changed",      # listening -> idle (nobody spoke)
]


async def test_full_turn_on_a_real_recording(run_replay):
    asr = ScriptedAsr("告诉我，你是谁？你叫什么名字？")
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=2.0",
                         asr=asr)
    assert r.types() == FULL_TURN
    assert r.transitions() == [
        ("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
        ("thinking", "speaking", "first_audio"), ("speaking", "listening", "reply_done"),
        ("listening", "idle", "no_speech_timeout")]
    assert r.first("playback_finished")["interrupted"] is False
    # The utterance handed to the ASR is the spoken request (about 3.2 s of the 3.6 s clip).
    assert len(asr.heard) == 1 and 2.5 < len(asr.heard[0]) / 16000 < 4.0
    turn, = r.summary["turns"]
    assert turn["transcript"] == "告诉我，你是谁？你叫什么名字？"
    assert turn["reply"] == "我是听说。"
    assert turn["interrupted"] is False
    assert turn["first_audio_t"] >= turn["endpoint_t"] > turn["speech_end_t"]
    # the endpoint is decided after the configured silence (250–450 ms by length) past the last voiced sample
    assert 0.25 <= turn["endpoint_wait_s"] <= 0.45 + 0.04, turn
    assert r.first("speech_ended")["speech_end_t"] == turn["speech_end_t"]
    assert r.summary["states_visited"] == ["idle", "listening", "thinking", "speaking"]
    # played.wav is on the microphone's timeline: silent before the reply, the reply after it.
    start = int(turn["first_audio_t"] * 16000)
    assert np.abs(r.played[:start - 320]).max() == 0
    assert np.abs(r.played[start:start + 16000]).max() > 0.05


def barge_in_session() -> np.ndarray:
    """A request, then (while the long reply plays from about 3.5 s) the user speaks at 5.0 s."""
    first = session_of(real("ask_who_are_you.wav"))
    gap = silence(5.0 - len(first) / 16000)
    return session_of(first, gap, real("cmd_qiehuan_1.wav"), silence(2.0))


LONG_REPLY = "我是听说，一个离线的普通话语音助手，我可以回答问题，也可以帮你设定提醒。"  # ~9 s of tone


@pytest.mark.parametrize(("sure_ms", "decided_after"), [(128, 0.128), (0, 0.2)])
async def test_barge_in_during_speaking_stops_playback_at_once(run_replay, stop_timer, sure_ms: int,
                                                                decided_after: float):
    asr, llm = ScriptedAsr("你是谁", "切换前视"), ScriptedLlm(LONG_REPLY, "好的，已切换前视。")
    r = await run_replay(barge_in_session(), "dialog.follow_up_s=1.0", f"barge_in.sure_ms={sure_ms}", asr=asr,
                         llm=llm, subscribers=(stop_timer,))

    types = r.types()
    i = types.index("barge_in")
    assert types[i:i + 4] == ["barge_in", "playback_finished", "state_changed", "speech_started"]
    barge = r.events[[e["type"] for e in r.events].index("barge_in")]
    assert barge["reason"] == "speech"
    assert r.first("playback_finished")["interrupted"] is True
    assert ("speaking", "listening", "barge_in") in r.transitions()
    assert llm.stops >= 1
    # The command's speech starts 0.74 s into its clip, at 5.74 s. Plain speech with no echo: decided
    # barge_in.sure_ms (128) later, or without that rule min_speech_ms (200) later (each within a chunk).
    assert 5.74 + decided_after - 0.02 <= barge["t"] < 5.74 + decided_after + 0.07
    # The sink was cleared within 50 ms of the decision (wall clock) and, in session time, at the
    # same chunk: nothing is played after it.
    assert stop_timer.decision_to_clear_s < 0.050
    second_reply = [e["t"] for e in r.events if e["type"] == "playback_started"][1]
    assert np.abs(r.played[int(barge["t"] * 16000) + 320:int(second_reply * 16000)]).max() == 0
    # The interrupting request is captured from its onset (5.74 s), not from the decision.
    assert asr.heard[1].size / 16000 > 1.15
    # ... and answered: a second turn after the interrupted first one.
    first, second = r.summary["turns"]
    assert first["interrupted"] is True and second["transcript"] == "切换前视"
    assert second["interrupted"] is False
    assert r.summary["barge_ins"] == [{"t": barge["t"], "reason": "speech"}]


async def test_speech_inside_the_echo_window_does_not_barge_in_and_after_it_does(run_replay):
    session = barge_in_session()  # playback starts at about 3.5 s; the user speaks from 5.0 s
    muted = await run_replay(session, "speaking.echo_window_ms=4000", "dialog.follow_up_s=0",
                             llm=ScriptedLlm(LONG_REPLY))
    assert "barge_in" not in muted.types()
    assert muted.first("playback_finished")["interrupted"] is False

    heard = await run_replay(session, "speaking.echo_window_ms=200", "dialog.follow_up_s=0",
                             llm=ScriptedLlm(LONG_REPLY))
    assert "barge_in" in heard.types()
    assert heard.first("playback_finished")["interrupted"] is True


async def test_no_speech_timeout_returns_to_idle(run_replay):
    kws = ScriptedKws("小智小智", 0.5)
    r = await run_replay(silence(6.0), "wake.mode='keyword'", "listening.no_speech_timeout_s=2.0", kws=kws)
    assert r.types() == ["wake_detected", "state_changed", "state_changed"]
    assert r.transitions() == [("idle", "listening", "wake"), ("listening", "idle", "no_speech_timeout")]
    wake, _, timeout = r.events
    assert wake["keyword"] == "小智小智"
    assert timeout["t"] - wake["t"] == pytest.approx(2.0, abs=0.021)
    assert r.summary["turns"] == []


async def test_watchdog_recovers_from_a_stuck_state(run_replay):
    llm = ScriptedLlm(hang=True)
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(5.0)), "thinking.max_s=2.0", llm=llm)
    assert r.transitions() == [("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
                               ("thinking", "idle", "watchdog")]
    thinking = r.events[3]
    watchdog = r.events[-1]
    assert watchdog["t"] - thinking["t"] == pytest.approx(2.0, abs=0.041)
    assert llm.cancelled == 1  # the stuck reply task was cancelled, not left behind
    assert r.types()[-2:] == ["transcript", "state_changed"]


class RestartingWorker:
    """A worker double that is restarting for the whole replay: no worker to answer."""

    up = False

    def attach(self, publish: object) -> None: ...

    def detach(self) -> None: ...


async def test_the_watchdog_does_not_count_the_time_a_request_waits_for_a_restarting_worker(run_replay):
    # a request waiting for the new worker waits worker.restart_wait_s for it (then the apology): the
    # watchdog used to send it back to idle at thinking.max_s with nothing said
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(8.0)), "thinking.max_s=2.0",
                         "worker.restart_wait_s=3.0", llm=ScriptedLlm(hang=True), worker=RestartingWorker())
    assert r.transitions()[-1] == ("thinking", "idle", "watchdog")
    thinking, watchdog = r.first("state_changed", to="thinking"), r.events[-1]
    assert watchdog["t"] - thinking["t"] == pytest.approx(2.0 + 3.0, abs=0.041)  # the wait is bounded too


async def test_a_failing_model_is_reported_and_the_session_goes_on(run_replay):
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)),
                         asr=ScriptedAsr(fail=RuntimeError("decoder exploded")))
    assert ("thinking", "idle", "error") in r.transitions()
    assert r.summary["errors"] == [{"t": r.first("error")["t"], "stage": "asr", "message": "decoder exploded"}]


async def test_two_replays_write_identical_events(run_replay):
    def fresh() -> dict[str, object]:
        return {"asr": ScriptedAsr("你是谁", "切换前视"), "llm": ScriptedLlm(LONG_REPLY, "好的。")}

    a = await run_replay(barge_in_session(), **fresh())
    b = await run_replay(barge_in_session(), **fresh())
    assert (a.out / "events.jsonl").read_bytes() == (b.out / "events.jsonl").read_bytes()
    assert np.array_equal(a.played, b.played)
    assert "barge_in" in a.types()


async def test_wake_word_then_request_in_keyword_mode(run_replay):
    kws = ScriptedKws("小智小智", 0.2)
    r = await run_replay(session_of(silence(0.5), real("ask_who_are_you.wav"), silence(1.0)),
                         "wake.mode='keyword'", "dialog.follow_up_s=0", kws=kws)
    assert r.types()[:3] == ["wake_detected", "state_changed", "speech_started"]
    assert r.transitions()[-1] == ("speaking", "idle", "reply_done")
    turn, = r.summary["turns"]
    assert turn["wake_t"] == r.first("wake_detected")["t"]


async def test_log_lines_inside_a_turn_carry_turn_id_and_state(run_replay, capsys):
    from assistant import logs

    logs.setup("debug", "json")
    try:
        await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0")
    finally:
        logs.setup("warning")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    in_turn = [line for line in lines if line["event"] in (
        "speech_started", "speech_ended", "utterance ended", "transcript", "reply_text", "tts_chunk",
        "playback_started", "playback_finished")]
    assert len(in_turn) >= 8
    assert all(line.get("turn_id") == "t1" for line in in_turn)
    states = {line["event"]: line["state"] for line in in_turn}
    assert states["utterance ended"] == "listening"
    assert states["transcript"] == "thinking"
    assert states["playback_finished"] == "speaking"


@pytest.mark.slow
async def test_realtime_replay_takes_wall_time_and_gives_the_same_turn(run_replay):
    """--realtime paces the mic at 1x and runs models concurrently; the conversation is the same."""
    session = session_of(real("ask_who_are_you.wav"), silence(1.0))
    started = time.perf_counter()
    r = await run_replay(session, "dialog.follow_up_s=0", realtime=True)
    elapsed = time.perf_counter() - started
    assert elapsed >= r.events[-1]["t"] - 0.1  # no faster than the session itself
    assert r.transitions() == [("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
                               ("thinking", "speaking", "first_audio"), ("speaking", "idle", "reply_done")]
    turn, = r.summary["turns"]
    assert turn["end_of_speech_to_first_audio_s"] is not None
    assert 0 <= turn["end_of_speech_to_first_audio_s"] < 1.0
