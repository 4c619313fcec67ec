"""A reply prepared before the user has finished (``dialog.preempt``): started on the speculative
transcript before the endpoint, it plays, posts and acts on nothing until the endpoint confirms the
same words; if the speaker goes on, it is dropped unheard and its answer undone.

Replays of real recordings with doubles for the ASR, LLM and TTS, and the parts on their own: the
held pipeline, the held events, the responder's answer ahead and its retraction.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import numpy as np

from assistant.clock import SampleClock
from assistant.events import EventBus, Held, Transcript, TtsChunk
from assistant.pipeline import FixedText, PipelineOptions, SpeechPipeline
from assistant.respond import Responder
from assistant.tools.answers import Tools
from assistant.tools.store import Store
from models.chat import History
from tests.conftest import RATE, make_config, real, session_of, silence
from tests.doubles import FixedClock, PacedTts, ScriptedAsr, ScriptedLlm, ToneTts
from tests.test_listening import SLOW_END, heard_s, paused_request

PREEMPT = ("dialog.preempt=true", "dialog.follow_up_s=0")


class RememberingLlm(ScriptedLlm):
    """A scripted LLM that remembers each exchange it finished, as the real ones do."""

    def __init__(self, *replies: str, turns: int = 2) -> None:
        super().__init__(*replies)
        self.history = History(turns)

    async def reply(self, text: str) -> AsyncIterator[str]:
        said = []
        async for piece in super().reply(text):
            said.append(piece)
            yield piece
        self.history.remember(text, "".join(said))


def first_loud_s(played: np.ndarray) -> float:
    loud = np.flatnonzero(np.abs(played) > 0.01)
    assert loud.size, "nothing was played"
    return loud[0] / RATE


async def test_a_reply_prepared_ahead_plays_only_once_the_endpoint_confirms_its_words(run_replay):
    llm = ScriptedLlm("我是听说。")
    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(3.0)), *PREEMPT,
                         asr=ScriptedAsr("你是谁"), llm=llm)
    assert r.summary["preempted"] == {"used": 1, "dropped": 0}
    turn, = r.summary["turns"]
    assert turn["preempted"] and turn["reply"] == "我是听说。" and llm.asked == ["你是谁"]
    ended, transcript, started = r.first("speech_ended"), r.first("transcript"), r.first("playback_started")
    assert transcript["t"] < ended["t"] <= started["t"]  # heard and answered ahead, played after
    assert first_loud_s(r.played) >= ended["t"]
    # its kept events follow the commit in the order they happened, stamped when they happened
    order = [e["type"] for e in r.events]
    assert order.index("preempted") < order.index("transcript") < order.index("llm_first_token")
    assert r.transitions() == [("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
                               ("thinking", "speaking", "first_audio"), ("speaking", "idle", "reply_done")]


async def test_the_prepared_reply_reaches_the_speaker_sooner_than_one_started_at_the_endpoint(run_replay):
    """The TTS double takes session time to speak: prepared ahead, that time is before the endpoint."""
    recording = session_of(real("cmd_qiehuan_1.wav"), silence(3.0))
    runs = []
    for overrides in (PREEMPT, ("dialog.follow_up_s=0",)):
        clock = SampleClock(RATE)
        runs.append(await run_replay(recording, *overrides, clock=clock,
                                     tts=PacedTts(clock, rtf=0.5)))
    ahead, later = runs
    (a,), (b,) = ahead.summary["turns"], later.summary["turns"]
    assert a["endpoint_t"] == b["endpoint_t"] and a["reply"] == b["reply"]
    assert a["end_of_speech_to_first_audio_s"] < b["end_of_speech_to_first_audio_s"]


async def test_speech_that_goes_on_drops_the_prepared_reply_unheard_and_the_llm_forgets_it(run_replay):
    # 告诉我，[pause] 你是谁？[pause] 你叫什么名字？: each pause is long enough for a transcript and a
    # reply to be prepared, and too short for the endpoint
    llm = RememberingLlm(*["我是听说。"] * 4)
    request = "告诉我，你是谁？你叫什么名字？"
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(3.0)), *PREEMPT,
                         asr=ScriptedAsr(request), llm=llm)
    assert r.summary["preempted"] == {"used": 1, "dropped": 2}
    assert "barge_in" not in r.types() and r.types().count("playback_started") == 1  # nothing else played
    [whole] = heard_s(r)  # one request, from its first onset
    assert whole > 3.0
    assert llm.asked == [request] * 3
    assert llm.history.exchanges == [(request, "我是听说。")]  # the dropped ones undone
    assert first_loud_s(r.played) >= r.first("speech_ended")["t"]


async def test_two_replays_with_replies_prepared_ahead_are_identical(run_replay):
    recording = paused_request(0.4)  # a reply prepared ahead, one dropped, and a barge-in that goes on
    a = await run_replay(recording, *SLOW_END, *PREEMPT, llm=ScriptedLlm(*["在的。"] * 4))
    b = await run_replay(recording, *SLOW_END, *PREEMPT, llm=ScriptedLlm(*["在的。"] * 4))
    assert a.summary["preempted"]["dropped"] and "barge_in" in a.types()
    assert (a.out / "events.jsonl").read_bytes() == (b.out / "events.jsonl").read_bytes()
    assert np.array_equal(a.played, b.played)


async def test_a_todo_prepared_ahead_is_saved_once_and_only_after_the_endpoint(run_replay, tmp_path):
    store = Store(tmp_path / "t.sqlite3")
    seen: list[int] = []

    def watch(t: float, event: object) -> None:
        if getattr(event, "type", "") in ("speech_ended", "tool_answered"):
            seen.append(len(store.todos()))

    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(3.0)), *PREEMPT,
                         asr=ScriptedAsr("添加待办买牛奶"), tools=Tools(store, FixedClock()), subscribers=(watch,))
    assert [t.text for t in store.todos()] == ["买牛奶"]
    assert seen[0] == 0  # not saved before the endpoint
    assert r.first("tool_answered")["intent"] == "todo_add" and r.summary["preempted"]["used"] == 1
    store.close()


async def test_a_tool_and_an_honest_limit_are_prepared_ahead_the_same_way(run_replay, tmp_path):
    store = Store(tmp_path / "t.sqlite3")
    recording = session_of(real("cmd_qiehuan_1.wav"), silence(4.0), real("cmd_qiehuan_2.wav"), silence(3.0))
    llm = ScriptedLlm()
    r = await run_replay(recording, *PREEMPT, asr=ScriptedAsr("现在几点了", "换一首歌"), llm=llm,
                         tools=Tools(store, FixedClock()))
    assert r.summary["preempted"] == {"used": 2, "dropped": 0} and llm.asked == []  # no LLM for either
    time, song = r.summary["turns"]
    assert time["preempted"] and time["reply"].startswith("现在是")
    assert song["preempted"] and "音乐" in song["reply"]  # the honest limit: no music here
    assert [e["intent"] for e in r.events if e["type"] == "tool_answered"] == ["time", "no_music"]
    store.close()


# -- the parts ------------------------------------------------------------------------------------
class Collected:
    """A sink that keeps what is written to it (and plays it at once)."""

    sample_rate = RATE

    def __init__(self) -> None:
        self.written: list[np.ndarray] = []

    async def write(self, samples: np.ndarray) -> None:
        self.written.append(samples)

    def clear(self) -> None: ...

    async def wait_playout(self) -> None: ...


class CountedTts(ToneTts):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def synthesize(self, text: str) -> AsyncIterator[np.ndarray]:
        self.calls.append(text)
        async for piece in super().synthesize(text):
            yield piece


async def test_a_held_pipeline_makes_its_first_audio_but_plays_it_only_once_released():
    bus, sink, tts = EventBus(SampleClock(RATE)), Collected(), CountedTts()
    started: list[bool] = []
    pipeline = SpeechPipeline(FixedText("好的。"), tts, sink, bus, PipelineOptions(), lambda: started.append(True),
                              held=True)
    synthesized = bus.wait_for(lambda event: isinstance(event, TtsChunk))
    run = asyncio.create_task(pipeline.run(""))
    await asyncio.wait_for(synthesized, 5)
    assert tts.calls == ["好的。"] and not sink.written and not started  # made, and nothing played
    pipeline.release()
    await asyncio.wait_for(run, 5)
    assert sink.written and started == [True]


def test_held_events_are_published_on_release_with_the_times_they_happened():
    clock = SampleClock(RATE)
    bus = EventBus(clock)
    got: list[tuple[float, str]] = []
    bus.subscribe(lambda t, event: got.append((t, event.text)))
    held = Held(bus)
    held.publish(Transcript(text="一"))
    clock.advance(RATE // 2)
    ran: list[str] = []
    held.later(lambda: ran.append("effect"))
    held.publish(Transcript(text="二"))
    clock.advance(RATE // 2)
    assert got == [] and ran == []
    held.release()
    assert got == [(0.0, "一"), (0.5, "二")] and ran == ["effect"]
    held.publish(Transcript(text="三"))  # released: straight through
    assert got[-1] == (1.0, "三")
    dropped = Held(bus)
    dropped.publish(Transcript(text="四"))
    dropped.drop()
    dropped.release()
    assert got[-1] == (1.0, "三")


def responder(tmp_path: Path, llm: ScriptedLlm | None = None) -> tuple[Responder, Store, FixedClock]:
    store, clock = Store(tmp_path / "t.sqlite3"), FixedClock()
    return Responder(llm, Tools(store, clock), now=clock), store, clock


def test_an_answer_ahead_that_would_act_is_not_made(tmp_path):
    answers, store, _ = responder(tmp_path)
    assert answers.answer_ahead("添加待办买牛奶") is None
    assert answers.answer_ahead("二十分钟后提醒我吃药") is None
    assert store.todos() == [] and store.pending() == []
    assert answers.answer("添加待办买牛奶").intent == "todo_add"  # at the endpoint: done, once
    assert [t.text for t in store.todos()] == ["买牛奶"]
    store.close()


def test_a_retracted_answer_leaves_the_conversation_as_it_was(tmp_path):
    llm = RememberingLlm("你好！")
    answers, store, clock = responder(tmp_path, llm)
    llm.history.remember("你叫什么名字", "我是听说。")
    answers.said("我是听说。")
    clock.t += timedelta(minutes=5)  # a new conversation: an answer forgets the last one
    ahead = answers.answer_ahead("你好")
    assert ahead is not None and ahead.intent is None and llm.history.exchanges == []
    answers.retract()
    assert llm.history.exchanges == [("你叫什么名字", "我是听说。")]
    assert answers.last_reply == "我是听说。" and answers.reply_ended == clock.t - timedelta(minutes=5)
    store.close()


def test_a_retracted_question_asked_back_is_no_longer_pending(tmp_path):
    answers, store, _ = responder(tmp_path)
    asked = answers.answer_ahead("铃铭是几号", spoken_s=1.5)  # a date question whose day is no day
    assert asked is not None and asked.intent == "confirm" and answers.pending is not None
    answers.retract()
    assert answers.pending is None
    answers.answer("铃铭是几号", spoken_s=1.5)  # at the endpoint: asked back for good
    answers.retract()  # nothing ahead to undo
    assert answers.pending == "明天是几号"
    store.close()


def test_the_preempt_setting_is_on_by_default():
    assert make_config().dialog.preempt is False  # the tests' base turns it off (see make_config)
    from assistant.config import load

    assert load(None, []).dialog.preempt is True


class PrefillingLlm(RememberingLlm):
    """A remembering LLM that notes what it is asked to evaluate ahead (``Prefill``)."""

    def __init__(self, *replies: str) -> None:
        super().__init__(*replies)
        self.prefilled: list[str] = []
        self.ahead: list[list[tuple[str, str]]] = []  # the history each prefill_history found

    def prefill(self, text: str) -> None:
        self.prefilled.append(text)

    def prefill_history(self) -> None:
        self.ahead.append(self.history.exchanges)


async def test_a_reply_heard_out_has_the_llm_evaluate_the_conversation_so_far(run_replay):
    # once the reply has played out (the user has not spoken yet), the LLM evaluates what the next
    # prompt begins with: the conversation as remembered, the reply guard's amendments included
    llm = PrefillingLlm("我是听说。听说：很高兴认识你。")
    r = await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(3.0)), "dialog.follow_up_s=0",
                         asr=ScriptedAsr("你是谁"), llm=llm)
    turn, = r.summary["turns"]
    assert turn["reply"] == "我是听说。很高兴认识你。"  # the speaker tag the guard took out
    assert llm.ahead == [[("你是谁", "我是听说。很高兴认识你。")]]
    quiet = PrefillingLlm("我是听说。")
    await run_replay(session_of(real("cmd_qiehuan_1.wav"), silence(3.0)), "dialog.follow_up_s=0", "llm.prefill=false",
                     asr=ScriptedAsr("你是谁"), llm=quiet)
    assert quiet.ahead == []  # llm.prefill = false: nothing evaluated ahead
