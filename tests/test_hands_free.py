"""Hands-free conversation on replayed sessions with an acoustic echo, through the real models.

The microphone hears the session's recordings plus the assistant's own reply (gain 0.5, 40 ms
late, as through a room); the VAD, keyword spotter, Whisper, Qwen and Kokoro are the real ones.
Each scenario asserts the sequence of states and the echo defence's counts, with times from the
sample clock. The sessions are laid out in tests/sessions.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant import backends
from assistant.replay import Echo
from assistant.text.echo_match import match
from models.assets import Assets
from models.llama_llm import LlamaLlm
from models.sherpa_vad import silero_model_path
from models.silero_vad import SileroVad
from tests import sessions
from tests.conftest import make_config, says
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts

pytestmark = pytest.mark.slow

ECHO = Echo(gain=0.5, delay_ms=40)
HANDS_FREE = ("wake.mode=keyword", 'wake.keywords=["小智"]', "echo.cancel=true", "dialog.follow_up_s=4.0")


@pytest.fixture(scope="module")
def models(assets: Assets, qwen_gguf: Path) -> Iterator[dict[str, Any]]:
    cfg = make_config(*HANDS_FREE)
    built = {"vad": SileroVad(silero_model_path(assets)), "kws": backends.kws(cfg, assets),
             "asr": backends.asr(cfg, assets), "tts": backends.tts(cfg, assets),
             "llm": LlamaLlm(qwen_gguf, seed=1234, max_tokens=40), "talk_vad": backends.talk_vad(cfg, assets)}
    for m in built.values():
        m.load()
    yield built
    for m in built.values():
        m.close()


@pytest.fixture
def talk(run_replay, models):
    """Replay a session through the real models, with the echo."""

    async def run(audio: np.ndarray, *overrides: str, llm: Any = None, echo: Echo = ECHO, **kw: Any):
        models["llm"].history.clear()
        return await run_replay(audio, *HANDS_FREE, *overrides, asr=models["asr"], llm=llm or models["llm"],
                                tts=models["tts"], kws=models["kws"], vad_model=models["vad"], echo=echo,
                                talk_vad=models["talk_vad"], **kw)

    return run


def transcripts(r) -> list[str]:
    return [e["text"] for e in r.events if e["type"] == "transcript"]


async def playback_start(run_replay, models, layout: sessions.Layout, *overrides: str) -> float:
    """When the reply to the session's first request starts playing (the same in every replay of
    the same audio, as model compute takes no session time): found with a quick probe run."""
    r = await run_replay(layout.audio, *HANDS_FREE, *overrides, asr=ScriptedAsr("你在吗"),
                         llm=ScriptedLlm("在的。"), tts=ToneTts(), kws=models["kws"], vad_model=models["vad"])
    return float(r.first("playback_started")["t"])


async def test_one_turn_with_echo_and_nobody_talking_over_it_has_no_barge_in(talk):
    r = await talk(sessions.one_turn().audio)
    assert "barge_in" not in r.types()
    assert r.transitions()[:4] == [
        ("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
        ("thinking", "speaking", "first_audio"), ("speaking", "listening", "reply_done")]
    assert r.transitions()[-1] == ("listening", "idle", "no_speech_timeout")
    # The request came in the same breath as the wake word: kept, and the wake word taken off.
    heard, = transcripts(r)
    assert "在" in heard and "小智" not in heard
    assert r.first("playback_finished")["interrupted"] is False
    reply_s = r.summary["turns"][0]
    assert reply_s["reply"]
    canceller = r.summary["echo_defence"]["canceller"]
    assert canceller["echo_chunks"] > 10 and canceller["erle_db"] > 10
    assert canceller["double_talk_windows"] == 0  # nobody talked over the reply


async def test_speech_over_the_reply_barges_in_from_its_onset(talk, run_replay, models, stop_timer):
    start = await playback_start(run_replay, models, sessions.one_turn())
    layout = sessions.interrupted_turn(start, after_s=1.0)
    r = await talk(layout.audio, subscribers=(stop_timer,))
    assert abs(r.first("playback_started")["t"] - start) < 0.1  # the probe found the same start
    barge = r.first("barge_in")
    onset = layout.marks["interruption"]
    assert barge["reason"] == "speech"
    # Decided on the user's audio: after the clip began (its lead-in under the residual echo can tip the
    # run before the onset measured on the clean recording; with nobody talking over it a reply is not
    # interrupted: test_one_turn_with_echo_and_nobody_talking_over_it_has_no_barge_in).
    clip_start = onset - sessions.ONSET_S["cmd_qiehuan_1.wav"]
    assert clip_start < barge["t"] <= onset + 0.4
    assert stop_timer.decision_to_clear_s < 0.050
    # The new request is transcribed from its onset (with the pre-roll), not from the decision:
    # the utterance handed to the ASR reaches back before the onset and on past the command.
    ended = [e for e in r.events if e["type"] == "speech_ended"][1]
    assert ended["t"] - ended["audio_s"] <= onset
    assert ended["t"] >= onset + 1.0  # the command lasts 1.06 s
    assert len(transcripts(r)) == 2
    assert ("speaking", "listening", "barge_in") in r.transitions()
    assert r.summary["barge_ins"] == [{"t": barge["t"], "reason": "speech"}]


async def test_a_request_over_the_loud_reply_is_heard_from_its_first_words(talk, run_replay, models):
    # The linear canceller's signal is what the ASR hears: AEC3's suppressor muffles the first
    # syllables under the reply (告诉我 came out as 老婆 or was lost).
    start = await playback_start(run_replay, models, sessions.one_turn())
    layout = sessions.double_talk_turn(start, after_s=1.0)
    r = await talk(layout.audio)
    barge = r.first("barge_in")
    onset = layout.marks["interruption"]
    assert barge["reason"] == "speech"
    assert onset - sessions.ONSET_S["ask_who_are_you.wav"] < barge["t"] <= onset + 0.4
    heard = transcripts(r)[1]
    assert match("告诉我，你是谁", [heard]).score >= 0.8, heard  # by sound: a homophone is no miss
    assert r.summary["turns"][1]["reply"]


async def test_a_request_with_a_pause_over_a_long_reply_is_one_utterance(talk, run_replay, models):
    # 告诉我，(a pause) 你是谁: the pause falls just after the barge-in, while AEC3 still suppresses the
    # reply's tail, and the user under it reads as quiet. Without echo.tail_ms the utterance ended at
    # the pause, 告诉我 was answered on its own (as 大叔), and the rest barged in again.
    request = (await sessions.spoken(models["tts"], "小智，怎么做番茄炒蛋？"), 0.0)
    start = await playback_start(run_replay, models, sessions.double_talk_turn(0.0, 0.0, request))
    layout = sessions.double_talk_turn(start, 2.5, request)
    r = await talk(layout.audio)
    assert r.first("barge_in")["t"] > layout.marks["interruption"] - sessions.ONSET_S["ask_who_are_you.wav"]
    assert [e["reason"] for e in r.events if e["type"] == "barge_in"] == ["speech"]
    first, heard = transcripts(r)
    assert match("告诉我，你是谁", [heard]).score >= 0.8, heard


RECIPE = ("番茄炒蛋很简单。先把两个番茄切块，三个鸡蛋打散，加一点盐。锅里放油，油热后倒入蛋液，"
          "炒到凝固就盛出来。再放一点油，下番茄翻炒出汁，加少许糖和盐，最后倒回鸡蛋，翻匀就可以出锅了。")


async def test_a_request_over_a_learnt_echo_is_decided_from_the_linear_canceller(talk, run_replay, models):
    # 2.5 s into a long reply (benchmarks/echo.py's recipe) AEC3 leaves the user's 告诉我 at a speech
    # probability of 0.05-0.6, too short a run to decide on, and the decision waited for 你叫什么名字
    # (1.28 s after the onset, 告诉我 lost). The linear canceller, which has learnt the room by then,
    # finds the user over the echo in those windows (barge_in.double_talk).
    request = (await sessions.spoken(models["tts"], "小智，怎么做番茄炒蛋？"), 0.0)
    start = await playback_start(run_replay, models, sessions.double_talk_turn(0.0, 0.0, request))
    layout = sessions.double_talk_turn(start, 2.5, request)
    onset = layout.marks["interruption"]
    decided = {}
    for on in ("true", "false"):
        r = await talk(layout.audio, f"barge_in.double_talk={on}", llm=ScriptedLlm(RECIPE))
        decided[on] = r.first("barge_in")["t"] - onset
        marked = r.summary["echo_defence"]["canceller"]["double_talk_windows"]
        if on == "true":
            heard = transcripts(r)[1]
            assert match("告诉我，你是谁", [heard]).score >= 0.8, heard
            assert marked > 0
        else:
            assert marked is None
    assert decided["true"] <= 0.4  # measured 0.16 s
    assert decided["true"] < decided["false"]  # measured 1.28 s


async def test_a_speaker_quieter_than_the_echo_is_heard_by_the_second_vad(talk, run_replay, models):
    # 切换前视 by a quiet speaker (cmd_qiehuan_6, 13 dB under cmd_qiehuan_1) 2.5 s into the long reply:
    # AEC3 leaves it at a speech probability of 0.00-0.24 for its whole length, and no barge-in was
    # ever decided. The linear canceller, which has learnt the room by then, marks its windows as
    # double talk, and silero on that canceller's output hears the speech there.
    request = (await sessions.spoken(models["tts"], "小智，怎么做番茄炒蛋？"), 0.0)
    start = await playback_start(run_replay, models, sessions.interrupted_turn(0.0, 0.0, request))
    layout = sessions.Layout().pause(0.5).add(request[0], "request", request[1])
    layout.pause_until(start + 2.5 - sessions.ONSET_S["cmd_qiehuan_6.wav"])
    layout = layout.clip("cmd_qiehuan_6.wav", "interruption").pause(10.0)
    onset = layout.marks["interruption"]
    with_it = await talk(layout.audio, llm=ScriptedLlm(RECIPE))
    without = await talk(layout.audio, "barge_in.double_talk_vad=false", llm=ScriptedLlm(RECIPE))
    assert 0 < with_it.first("barge_in")["t"] - onset <= 0.4  # measured 0.30 s
    assert [e["reason"] for e in with_it.events if e["type"] == "barge_in"] == ["speech"]
    late = [e["t"] - onset for e in without.events if e["type"] == "barge_in"]
    assert not late or late[0] > 0.4  # measured: never decided


async def test_a_request_with_a_pause_in_it_is_answered_as_one(talk, models):
    # 嘿，小智你在吗？ [0.28 s] 今天怎么样？: Smart Turn rightly hears 你在吗 finished and the reply starts;
    # 今天怎么样 interrupts it within listening.resume_s of the request's end, so it goes on with that
    # request (before, it was a new request, heard as nothing or as 几点怎么样, and answered alone).
    r = await talk(sessions.paused_request().audio)
    heard = transcripts(r)
    assert match("你在吗今天怎么样", [heard[-1]]).score >= 0.8, heard
    assert [e["reason"] for e in r.events if e["type"] == "barge_in"] == ["speech"]
    asked = [text for text, _ in models["llm"].history.exchanges]
    assert len(asked) == 1 and match("今天怎么样", [asked[0]]).score >= 0.8, asked  # the half is forgotten


async def test_with_resume_off_the_second_half_is_a_request_of_its_own(talk):
    r = await talk(sessions.paused_request().audio, "listening.resume_s=0")
    heard = transcripts(r)
    assert len(heard) == 2 and match("你在吗", [heard[0]]).score >= 0.8, heard
    assert match("你在吗", [heard[1]]).score < 0.5, heard


async def test_two_turns_through_the_follow_up_window_without_a_second_wake_word(talk, run_replay, models):
    probe = await run_replay(sessions.one_turn().audio, *HANDS_FREE, "dialog.follow_up_s=0",
                             asr=models["asr"], llm=models["llm"], tts=models["tts"], kws=models["kws"],
                             vad_model=models["vad"], echo=ECHO)
    models["llm"].history.clear()
    reply_end = probe.first("playback_finished")["t"]
    layout = sessions.two_turns(second_at_s=reply_end + 1.5)
    r = await talk(layout.audio)
    assert [e["trigger"] for e in r.events if e["type"] == "state_changed"].count("wake") == 1
    assert r.transitions() == [
        ("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
        ("thinking", "speaking", "first_audio"), ("speaking", "listening", "reply_done"),
        ("listening", "thinking", "speech_end"), ("thinking", "speaking", "first_audio"),
        ("speaking", "listening", "reply_done"), ("listening", "idle", "no_speech_timeout")]
    first, second = transcripts(r)
    assert says(second, "你是谁") or says(second, "名字"), second
    assert "barge_in" not in r.types()


async def test_wake_then_silence_returns_to_idle_after_the_no_speech_timeout(talk, models):
    layout = await sessions.wake_then_silence(models["tts"])
    r = await talk(layout.audio, "listening.no_speech_timeout_s=3.0")
    assert r.transitions() == [("idle", "listening", "wake"), ("listening", "idle", "no_speech_timeout")]
    wake = r.first("wake_detected")
    idle = r.first("state_changed", to="idle")
    assert idle["t"] - wake["t"] == pytest.approx(3.0, abs=0.05)
    # The earcon: played within 100 ms of the wake, under 100 ms long.
    at = int(wake["t"] * 16000)
    sound = np.flatnonzero(np.abs(r.played[at - 320:at + 16000]) > 1e-3)
    assert sound.size and (sound[0] - 320) / 16000 <= 0.1 and (sound[-1] - sound[0]) / 16000 <= 0.1


REPLY_WITH_WAKE_WORD = "我叫小智。你叫我小智，我就会听。小智随时为你服务。"


async def test_a_reply_that_says_the_wake_word_is_not_interrupted_by_its_echo(talk):
    r = await talk(sessions.one_turn().audio, llm=ScriptedLlm(REPLY_WITH_WAKE_WORD))
    assert "barge_in" not in r.types()
    assert r.first("playback_finished")["interrupted"] is False
    assert r.types().count("wake_detected") == 1


async def test_without_the_canceller_the_own_words_layer_keeps_the_wake_word_from_interrupting(talk):
    no_aec = ("echo.cancel=false", "barge_in.by_speech=false")
    r = await talk(sessions.one_turn().audio, *no_aec, llm=ScriptedLlm(REPLY_WITH_WAKE_WORD))
    assert "barge_in" not in r.types()
    assert r.summary["echo_defence"]["own_words"] >= 1
    # ... and the layer is what did it: without it the echo of 小智 interrupts the reply.
    r = await talk(sessions.one_turn().audio, *no_aec, "echo.own_words=false", llm=ScriptedLlm(REPLY_WITH_WAKE_WORD))
    assert r.first("barge_in")["reason"] == "wake_word"


async def test_the_second_stage_confirms_a_real_wake_word(talk):
    r = await talk(sessions.one_turn().audio, "wake.verify=true")
    assert "wake_rejected" not in r.types()
    assert r.transitions()[0] == ("idle", "listening", "wake")
    assert "在" in transcripts(r)[0]


async def test_a_spoken_stop_word_over_the_reply_stops_it(talk, run_replay, models):
    start = await playback_start(run_replay, models, sessions.one_turn())
    stop = await sessions.spoken(models["tts"], "别说了。")
    layout = sessions.Layout().pause(0.5).add(sessions.wake_and_request(), "request")
    layout.pause_until(start + 1.0).add(stop, "stop").pause(6.0)
    long_reply = "是的，我在。我是一个离线的普通话语音助手，可以回答问题，也可以帮你设定提醒和闹钟。"
    r = await talk(layout.audio, "barge_in.by_speech=false", llm=ScriptedLlm(long_reply))
    assert r.first("barge_in")["reason"] == "stop_word"
    assert ("speaking", "idle", "stop") in r.transitions()


async def test_a_reply_prepared_ahead_is_the_reply_made_at_the_endpoint(talk):
    """The default: the reply is prepared on the speculative transcript before the endpoint. With the
    real models and the echo, it says what the reply made at the endpoint says, and plays after it."""
    layout = sessions.one_turn()
    ahead = await talk(layout.audio, "dialog.preempt=true")
    later = await talk(layout.audio)
    assert ahead.summary["preempted"]["used"] == 1 and later.summary["preempted"]["used"] == 0
    assert transcripts(ahead) == transcripts(later)
    assert ahead.summary["turns"][0]["reply"] == later.summary["turns"][0]["reply"]
    assert ahead.first("playback_started")["t"] >= ahead.first("speech_ended")["t"]
    assert "barge_in" not in ahead.types()


async def test_with_replies_prepared_ahead_a_request_with_a_pause_is_still_answered_as_one(talk, models):
    r = await talk(sessions.paused_request().audio, "dialog.preempt=true")
    heard = transcripts(r)
    assert match("你在吗今天怎么样", [heard[-1]]).score >= 0.8, heard
    asked = [text for text, _ in models["llm"].history.exchanges]
    assert len(asked) == 1 and match("今天怎么样", [asked[0]]).score >= 0.8, asked  # the half is forgotten


async def test_a_reply_whose_echo_leaks_through_the_cold_canceller_is_not_interrupted(talk):
    """benchmarks/echo.py's quiet session 嘿，小智你在吗 → 是的，我在线运行。 interrupted itself 0.96 s
    into the reply once its pieces kept their onsets (tts.onset_frames): the cold AEC3 let the second
    piece's 我 through, and silero was sure of it. The leak check refuses that barge-in."""
    r = await talk(sessions.one_turn().audio, llm=ScriptedLlm("是的，我在线运行。"))
    assert "barge_in" not in r.types()
    assert r.first("playback_finished")["interrupted"] is False
    assert len(r.summary["turns"]) == 1 and r.summary["turns"][0]["reply"] == "是的，我在线运行。"
