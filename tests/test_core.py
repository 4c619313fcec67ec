"""The parts under the states: worker threads, task scopes, onset/endpoint logic, events, summary."""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading

import pytest

from assistant.events import EventBus, PlaybackFinished, StateChanged, to_record
from assistant.summary import summarize
from assistant.tasks import TaskScope
from models.worker import LOCKSTEP, Worker
from states.endpointer import Endpointer, EndpointPolicy
from states.machine import STATES, TRANSITIONS
from states.onset import OnsetDetector
from states.state import VadWindow
from tests.conftest import ROOT, make_config

W = 512
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


async def test_worker_runs_on_its_own_named_thread_with_the_callers_contextvars():
    worker = Worker("tts")
    request_id.set("turn-7")
    seen = await worker.run(lambda: (threading.current_thread().name, request_id.get()))
    worker.close()
    assert seen[0].startswith("tts") and seen[0] != threading.current_thread().name
    assert seen[1] == "turn-7"


async def test_worker_in_lockstep_blocks_the_loop_so_compute_takes_no_session_time():
    worker = Worker("asr")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    token = LOCKSTEP.set(True)
    before = ticks
    await worker.run(threading.Event().wait, 0.05)  # 50 ms of "compute"
    during = ticks - before
    LOCKSTEP.reset(token)
    task.cancel()
    worker.close()
    assert during <= 2  # the loop did not run the other task while the model computed


async def test_task_scope_cancels_owned_tasks_and_never_swallows_its_own_cancellation():
    scope = TaskScope("reply")
    cancelled = asyncio.Event()

    async def long_job() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    scope.spawn(long_job(), "job")
    await asyncio.sleep(0)
    await scope.cancel()
    assert cancelled.is_set() and not scope.active

    # A task that waits on the scope and is itself cancelled must see CancelledError.
    scope2 = TaskScope("slow")

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # slow to stop
            raise

    scope2.spawn(stubborn(), "stubborn")
    await asyncio.sleep(0)
    waiter = asyncio.create_task(scope2.cancel())
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter


def windows(pattern: str, start: int = 0) -> list[VadWindow]:
    """'#' is a speech window, '.' silence; windows of 512 samples from ``start``."""
    return [VadWindow(start + (i + 1) * W, c == "#") for i, c in enumerate(pattern)]


def test_onset_needs_enough_speech_and_reports_where_it_began():
    d = OnsetDetector(min_speech_samples=3 * W, window_samples=W)
    assert d.feed(windows("..##.##.")) is None
    assert d.feed(windows("###", start=8 * W)) == 8 * W


def test_onset_ignores_the_echo_window_but_keeps_the_true_onset():
    d = OnsetDetector(min_speech_samples=2 * W, window_samples=W, ignore_until=4 * W)
    # Speech from window 2 on: windows ending at or before 4*W do not count.
    assert d.feed(windows("..##")) is None
    assert d.feed(windows("#", start=4 * W)) is None
    assert d.feed(windows("#", start=5 * W)) == 2 * W


def test_endpointer_ends_after_the_silence_and_cuts_long_utterances():
    e = Endpointer(window=W, min_speech=2 * W, policy=EndpointPolicy(3 * W), max_utterance=100 * W)
    started, ended = e.feed(windows("..####..#.."))
    assert started == 2 * W and ended is None
    started, ended = e.feed(windows(".", start=11 * W))
    assert started is None and ended is not None
    assert (ended.start, ended.end, ended.trailing_silence, ended.reason) == (2 * W, 12 * W, 3 * W, "silence")

    e = Endpointer(window=W, min_speech=W, policy=EndpointPolicy(3 * W), max_utterance=5 * W, onset=0)
    _, ended = e.feed(windows("########"))
    assert ended is not None and ended.reason == "max_utterance" and ended.end == 5 * W


def test_quiet_in_the_echo_tail_after_a_barge_in_does_not_end_the_utterance():
    # The barge-in's run: 4 windows; then the user pauses 3 windows while the canceller still
    # suppresses the reply's tail (until window 7), and goes on.
    e = Endpointer(window=W, min_speech=W, policy=EndpointPolicy(3 * W), max_utterance=100 * W, onset=0)
    e.untrusted_until = 7 * W
    _, ended = e.feed(windows("####...####"))
    assert ended is None and e.speech_end == 11 * W
    # Quiet once the tail is over ends it as usual.
    _, ended = e.feed(windows("...", start=11 * W))
    assert ended is not None and ended.trailing_silence == 3 * W
    plain = Endpointer(window=W, min_speech=W, policy=EndpointPolicy(3 * W), max_utterance=100 * W, onset=0)
    _, ended = plain.feed(windows("####...####"))
    assert ended is not None and ended.end == 7 * W  # without the tail: cut at the pause


@pytest.mark.parametrize(("speech", "silence_needed"), [(2, 2), (5, 3), (9, 4)])
def test_the_endpoint_silence_adapts_to_the_length_of_the_speech(speech, silence_needed):
    # Under 3 windows of speech: 2 windows of silence end it; over 8: 4; in between: 3.
    policy = EndpointPolicy(3 * W, short_speech=3 * W, short_silence=2 * W, long_speech=8 * W, long_silence=4 * W)
    e = Endpointer(window=W, min_speech=W, policy=policy, max_utterance=100 * W)
    started, ended = e.feed(windows("#" * speech + "." * (silence_needed - 1)))
    assert started == 0 and ended is None
    _, ended = e.feed(windows(".", start=(speech + silence_needed - 1) * W))
    assert ended is not None and ended.trailing_silence == silence_needed * W
    assert e.speech_end == speech * W


def test_adaptive_endpoint_defaults_follow_the_config():
    from assistant.config import load

    p = EndpointPolicy.from_config(load(None))
    ms = 16
    assert p.silence_after(800 * ms) == 250 * ms
    assert p.silence_after(3000 * ms) == 300 * ms
    assert p.silence_after(6000 * ms) == 450 * ms


def test_a_primed_onset_is_kept_only_if_the_speech_goes_on():
    # The wake word's run of speech began at window 1; speech going on after the wake keeps it.
    d = OnsetDetector(min_speech_samples=3 * W, window_samples=W)
    d.prime(1 * W)
    assert d.feed(windows("###", start=10 * W)) == 1 * W
    # A pause right after the wake word: the request starts where the speaker starts again.
    d.prime(1 * W)
    assert d.feed(windows("#.###", start=10 * W)) == 12 * W


def test_onsets_count_only_windows_above_the_threshold_and_report_muted_runs():
    d = OnsetDetector(min_speech_samples=2 * W, window_samples=W, threshold=0.6)
    half = [VadWindow((i + 1) * W, 0.55) for i in range(5)]
    assert d.feed(half) is None  # above the VAD's 0.5, below the barge-in threshold
    muted = OnsetDetector(min_speech_samples=2 * W, window_samples=W, ignore_until=4 * W)
    assert muted.feed(windows("###.")) is None
    assert muted.muted_runs == 1


async def test_bus_stamps_session_time_and_names_fields_for_json():
    class Clock:
        t = 1.23456

        def now(self) -> float:
            return self.t

    bus = EventBus(Clock())
    seen = []
    bus.subscribe(lambda t, e: seen.append(to_record(t, e)))
    waiter = bus.wait_for(lambda e: isinstance(e, PlaybackFinished))
    bus.publish(StateChanged(from_="idle", to="listening", trigger="wake"))
    bus.publish(PlaybackFinished(interrupted=True))
    assert await asyncio.wait_for(waiter, 1) == PlaybackFinished(interrupted=True)
    assert seen == [{"t": 1.235, "type": "state_changed", "from": "idle", "to": "listening", "trigger": "wake"},
                    {"t": 1.235, "type": "playback_finished", "interrupted": True}]


def test_summary_measures_first_audio_rtf_and_gaps():
    records = [
        {"t": 0.5, "type": "wake_detected", "keyword": "小智"},
        {"t": 2.0, "type": "speech_ended", "audio_s": 1.2, "speech_end_t": 1.7},
        {"t": 2.2, "type": "transcript", "text": "几点了"},
        {"t": 2.4, "type": "llm_first_token"},
        {"t": 2.6, "type": "text_chunk", "text": "三点，"},
        {"t": 3.0, "type": "tts_chunk", "text": "三点，", "audio_s": 1.0, "synth_s": 0.4},
        {"t": 3.0, "type": "playback_started"},
        {"t": 3.0, "type": "chunk_queued", "index": 0, "audio_s": 1.0, "gap_s": 0.0},
        {"t": 3.1, "type": "reply_text", "text": "三点，十五分。"},
        {"t": 4.5, "type": "tts_chunk", "text": "十五分。", "audio_s": 1.0, "synth_s": 0.6},
        {"t": 4.5, "type": "chunk_queued", "index": 1, "audio_s": 1.0, "gap_s": 0.5},  # 0.5 s late
        {"t": 5.5, "type": "playback_finished", "interrupted": False},
    ]
    turn, = summarize(records)["turns"]
    assert turn["wake_t"] == 0.5 and turn["speech_end_t"] == 1.7 and turn["endpoint_t"] == 2.0
    assert turn["endpoint_wait_s"] == 0.3
    assert turn["end_of_speech_to_first_audio_s"] == 1.3  # from the last voiced sample, not the decision
    assert turn["tts_first_audio_s"] == 0.4  # first chunk's text complete -> its first sample to the sink
    assert turn["llm_first_token_s"] == 0.2
    assert turn["rtf"] == 0.5 and turn["chunk_rtf"] == [0.4, 0.6]
    assert turn["max_gap_s"] == 0.5 and turn["underruns"] == 1
    assert turn["reply"] == "三点，十五分。"
    assert turn["interrupted"] is False


def test_one_transition_table_and_no_other_code_assigns_the_state():
    assert STATES == ["idle", "listening", "thinking", "speaking"]
    triggers = {t["trigger"] for t in TRANSITIONS}
    assert {"wake", "speech_end", "no_speech_timeout", "first_audio", "reply_done", "barge_in", "error",
            "watchdog"} <= triggers
    assignment = re.compile(r"\.state\s*=[^=]|setattr\([^)]*['\"]state['\"]")
    offenders = [f"{path}:{n}" for folder in ("assistant", "states", "models")
                 for path in (ROOT / folder).rglob("*.py")
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if assignment.search(line)]
    assert offenders == []


def test_a_started_run_goes_on_above_the_hold_threshold():
    probs = [0.8, 0.5, 0.4, 0.7]  # the dips stay above hold 0.3: one run of four windows
    run = [VadWindow((i + 1) * W, p) for i, p in enumerate(probs)]
    assert OnsetDetector(4 * W, W, threshold=0.6, hold=0.3).feed(run) == 0
    assert OnsetDetector(4 * W, W, threshold=0.6).feed(run) is None
    # A run never starts below the threshold itself.
    assert OnsetDetector(W, W, threshold=0.6, hold=0.3).feed([VadWindow(W, 0.5)]) is None


def test_a_run_survives_a_short_dip_under_the_hold_threshold():
    # Measured over a reply (after_s 0.8): 0.77 0.95 0.83 0.53 0.18 0.35 0.89 … — one window under hold.
    probs = [0.77, 0.95, 0.83, 0.53, 0.18, 0.35, 0.89, 0.97]
    run = [VadWindow((i + 1) * W, p) for i, p in enumerate(probs)]
    bridged = OnsetDetector(6 * W, W, threshold=0.6, hold=0.3, max_gap_samples=2 * W)
    assert bridged.feed(run) == 0  # the onset is where the run began; the dip did not count
    assert OnsetDetector(6 * W, W, threshold=0.6, hold=0.3).feed(run) is None
    # A pause longer than the gap ends the run.
    long_dip = [VadWindow((i + 1) * W, p) for i, p in enumerate([0.9, 0.9, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9])]
    assert OnsetDetector(4 * W, W, threshold=0.6, hold=0.3, max_gap_samples=2 * W).feed(long_dip) == 5 * W


def test_plain_speech_decides_sooner_than_doubtful_speech():
    # Measured over a long reply (切换前视, 3.0 s in): 0.51 then 0.93 0.98 0.99 0.99 1.00 … decided 0.44 s after
    # the onset by the 224 ms run; four windows in a row at 0.95 decide after 128 ms.
    probs = [0.51, 0.93, 0.98, 0.99, 0.99, 1.00, 0.99, 0.96, 0.89]
    run = [VadWindow((i + 1) * W, p) for i, p in enumerate(probs)]
    sure = OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, sure=0.95, sure_samples=4 * W)
    fired = [i for i, w in enumerate(run) if sure.feed([w]) is not None]
    assert fired == [5]  # 0.98 0.99 0.99 1.00: the fourth in a row at 0.95, with the onset kept at 0.93's window
    plain = OnsetDetector(7 * W, W, threshold=0.6, hold=0.3)
    assert [i for i, w in enumerate(run) if plain.feed([w]) is not None] == [7]
    # A window under sure breaks the streak: doubtful speech still needs the whole run.
    doubtful = [VadWindow((i + 1) * W, p) for i, p in enumerate([0.96, 0.97, 0.80, 0.96, 0.97, 0.98, 0.70])]
    assert OnsetDetector(8 * W, W, threshold=0.6, sure=0.95, sure_samples=4 * W).feed(doubtful) is None
    # Windows inside the echo window never count towards the streak.
    muted = OnsetDetector(7 * W, W, threshold=0.6, sure=0.95, sure_samples=4 * W, ignore_until=3 * W)
    assert muted.feed([VadWindow((i + 1) * W, 0.99) for i in range(6)]) is None
    assert muted.feed([VadWindow(7 * W, 0.99)]) == 0


def test_double_talk_windows_count_from_the_double_talk_threshold():
    # Measured over the long reply (2.5 s in) after AEC3: the user's 告诉我 reads 0.08 0.28 0.37 0.60 0.52
    # 0.39 0.13 … while the linear canceller finds them over the echo in most windows.
    probs = [0.08, 0.28, 0.37, 0.60, 0.52, 0.39, 0.13, 0.06, 0.15, 0.59]
    talk = [True, True, True, True, False, False, False, True, True, True]
    run = [VadWindow((i + 1) * W, p, t) for i, (p, t) in enumerate(zip(probs, talk, strict=True))]
    lenient = OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, max_gap_samples=2 * W, talk=0.05)
    assert [i for i, w in enumerate(run) if lenient.feed([w]) is not None] == [7]  # 0.13 is a dip; 0.06 the 7th
    assert lenient.feed([]) is None
    strict = OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, max_gap_samples=2 * W)  # no double-talk test
    assert [i for i, w in enumerate(run) if strict.feed([w]) is not None] == []
    # The mark alone is not enough: silero must hear something (0.05 here).
    silent = [VadWindow((i + 1) * W, 0.02, True) for i in range(10)]
    assert OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, talk=0.05).feed(silent) is None


def test_in_a_double_talk_window_the_linear_cancellers_vad_counts_too():
    # A speaker quieter than the echo: AEC3 leaves 0.00-0.24; silero on the linear canceller's output
    # hears them where the canceller marks double talk, and only there.
    aec = [0.00, 0.03, 0.12, 0.24, 0.18, 0.08, 0.04, 0.03]
    heard = [VadWindow((i + 1) * W, p, True, 0.9) for i, p in enumerate(aec)]
    assert OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, talk=0.05).feed(heard) == 0
    unmarked = [VadWindow((i + 1) * W, p, False, 0.9) for i, p in enumerate(aec)]
    assert OnsetDetector(7 * W, W, threshold=0.6, hold=0.3, talk=0.05).feed(unmarked) is None
    # without the double-talk test (barge_in.double_talk off) the second VAD is not heard either
    assert OnsetDetector(7 * W, W, threshold=0.6, hold=0.3).feed(heard) is None


@pytest.mark.parametrize(("settings", "expected"), [
    ((), 0.05),
    (("barge_in.double_talk_threshold=0.2",), 0.2),
    (("barge_in.double_talk=false",), None),
])
def test_the_barge_in_detector_takes_the_double_talk_settings(settings: tuple[str, ...], expected: float | None):
    from types import SimpleNamespace

    from states.barge_in import make_detector

    detector = make_detector(SimpleNamespace(cfg=make_config(*settings), vad_window=W), None)  # type: ignore[arg-type]
    assert detector.talk == expected


@pytest.mark.parametrize(("settings", "expected"), [
    (("barge_in.sure_threshold=0.9", "barge_in.sure_ms=96"), (0.9, 96 * 16)),
    (("barge_in.sure_ms=0",), (0.95, None)),
])
def test_the_barge_in_detector_takes_the_sure_settings(settings: tuple[str, ...], expected: tuple) -> None:
    from types import SimpleNamespace

    from states.barge_in import make_detector

    detector = make_detector(SimpleNamespace(cfg=make_config(*settings), vad_window=W), None)  # type: ignore[arg-type]
    assert (detector.sure, detector.sure_samples) == expected
