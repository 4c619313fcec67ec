"""The board timing PREDICTION: replays paced by an RK3576's timing table.

The real VAD on real recordings; scripted ASR, LLM and TTS (the models are not the subject, the
pacing is). Session times come from sample counts, never the wall clock.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from assistant.board_pace import BoardTime, Layout, PacedClock, Prediction
from assistant.board_timing import Timings, from_file, load, tts_windows
from assistant.config import ConfigError
from tests.conftest import ROOT, real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedLlm, ScriptedTurn, ToneTts
from tests.test_cli import assistant, empty_wav, one_line_error

TABLE = Timings(asr_s_per_window_s=0.05, turn_s=0.2, llm_first_token_s=0.3, llm_tokens_per_s=20.0,
                tts_acoustic_s=0.25, tts_vocoder_s=0.06, tts_cpu_s=0.04)
ONE_TURN = ("vad.speculative_silence_ms=0", "vad.turn_model=false", "asr.window_s=15.0",
            "tts.phrase_cache=false", "dialog.follow_up_s=1.0")


def at(r, kind):  # r: the Replayed record of tests/conftest.py
    return r.first(kind)["t"]


async def test_each_stage_takes_exactly_the_tables_time(run_replay):
    """End of speech → transcript is Whisper's window × its time, the first token the LLM's first-token
    time, first audio one acoustic + vocoder + ISTFT after the chunk: nothing rounded to chunks."""
    asr, llm = ScriptedAsr("你是谁"), ScriptedLlm("我是听说。")  # two pieces: 我是听 | 说。
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), *ONE_TURN,
                         asr=asr, llm=llm, predict=Prediction(TABLE))
    utterance_s = len(asr.heard[-1]) / 16000
    assert 2.5 < utterance_s < 14.0  # so the window is the least one, 15 s
    assert at(r, "transcript") - at(r, "speech_ended") == pytest.approx(0.05 * 15.0, abs=1e-3)
    # the reply guard passes whole clauses: this one is complete at the second piece, a token (50 ms)
    # after the first token
    assert at(r, "llm_first_token") - at(r, "transcript") == pytest.approx(0.3 + 0.05, abs=1e-3)
    assert at(r, "text_chunk") == at(r, "llm_first_token")
    assert at(r, "playback_started") - at(r, "text_chunk") == pytest.approx(0.25 + 0.06 + 0.04, abs=1e-3)
    assert r.summary["prediction"]["label"] == "PREDICTION"
    turn, = r.summary["turns"]
    assert turn["end_of_speech_to_first_audio_s"] == pytest.approx(
        turn["endpoint_wait_s"] + 0.75 + 0.3 + 0.05 + 0.35, abs=2e-3)


async def test_without_a_prediction_the_models_take_no_session_time(run_replay):
    """The same replay in plain lockstep: the stages above take nothing, so the pacing is what adds them."""
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), *ONE_TURN,
                         asr=ScriptedAsr("你是谁"), llm=ScriptedLlm("我是听说。"))
    assert at(r, "playback_started") - at(r, "speech_ended") < 0.021  # within the chunk


async def test_the_turn_model_takes_its_time_before_the_endpoint(run_replay):
    turn = ScriptedTurn(0.99)
    paced = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), "vad.turn_model=true",
                             "vad.speculative_silence_ms=0", asr=ScriptedAsr("你是谁"), turn=turn,
                             predict=Prediction(TABLE))
    free = await run_replay(session_of(real("ask_who_are_you.wav"), silence(2.0)), "vad.turn_model=true",
                            "vad.speculative_silence_ms=0", asr=ScriptedAsr("你是谁"), turn=ScriptedTurn(0.99))
    later = paced.summary["turns"][0]["endpoint_wait_s"] - free.summary["turns"][0]["endpoint_wait_s"]
    # later by the model's 0.2 s, less the part of it that overlaps the least silence the verdict waits for
    assert 0.05 < later <= 0.2 + 0.001


async def test_two_predicted_replays_give_identical_events(run_replay):
    recording = session_of(silence(0.5), real("hey_xiaozhi.wav"), silence(3.0))
    runs = [await run_replay(recording, "tts.phrase_cache=false", asr=ScriptedAsr("你在吗"),
                             llm=ScriptedLlm("在的，今天很好，你呢？"), tts=ToneTts(),
                             predict=Prediction(Timings(), Layout("serialised", "separate")))
            for _ in range(2)]
    assert runs[0].events == runs[1].events
    assert runs[0].first("playback_started")  # it did answer


async def drive(board: BoardTime, clock: PacedClock, until_s: float) -> None:
    """The microphone's part: 20 ms chunks through the board's pacer."""
    n = clock.sample_rate // 50
    while clock.samples < until_s * clock.sample_rate:
        await board.until(clock.samples + n)
        clock.advance(n)


async def finish_times(layout: Layout) -> dict[str, float]:
    """An LLM writing 10 tokens of 30 ms while a 100 ms TTS call arrives 40 ms in (a chunk boundary)."""
    clock = PacedClock(16000)
    board = BoardTime(layout, clock)
    done: dict[str, float] = {}

    async def llm() -> None:
        for _ in range(10):
            await board.spend("llm", 0.03)
        done["llm"] = clock.now()

    async def tts() -> None:
        while clock.now() < 0.035:  # noqa: ASYNC110 - the sample clock has no event
            await asyncio.sleep(0)
        started = clock.now()
        await board.spend("tts", 0.1)
        done["tts"] = clock.now() - started

    tasks = [asyncio.ensure_future(llm()), asyncio.ensure_future(tts())]
    await drive(board, clock, 1.0)
    await asyncio.gather(*tasks)
    return done


async def test_the_npu_layouts():
    # serialised: the TTS waits for the token in flight, the LLM pauses for the TTS call
    serial = await finish_times(Layout("serialised", "separate"))
    assert serial == pytest.approx({"tts": 0.02 + 0.1, "llm": 0.3 + 0.1}, abs=1e-6)
    assert await finish_times(Layout("serialised", "shared")) == serial  # one turn: the cores do not matter
    apart = await finish_times(Layout("concurrent", "separate"))
    assert apart == pytest.approx({"llm": 0.3, "tts": 0.1}, abs=1e-6)
    shared = await finish_times(Layout("concurrent", "shared"))  # both at half speed while both run
    assert shared["tts"] == pytest.approx(0.2, abs=1e-6)
    assert shared["llm"] == pytest.approx(0.4, abs=1e-6)


async def test_a_cancelled_call_that_has_started_still_holds_the_npu():
    clock = PacedClock(16000)
    board = BoardTime(Layout("serialised", "separate"), clock)
    first = asyncio.ensure_future(board.spend("tts", 0.1))
    await drive(board, clock, 0.04)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    waited = asyncio.ensure_future(board.spend("llm", 0.03))
    await drive(board, clock, 0.5)
    await waited
    assert board.busy_s["npu"] == pytest.approx(0.13, abs=1e-6)


def test_tts_windows_follow_the_acoustic_models_capacity():
    assert tts_windows("你好。") == 1
    assert tts_windows("一" * 15) == 1  # 30 tokens of 31
    assert tts_windows("一" * 16) == 2


@pytest.mark.parametrize(("text", "says"), [
    ("llm_first_token_s = 'fast'\n", "llm_first_token_s must be a number"),
    ("tts_acoustic_s = -1\n", "tts_acoustic_s must be a number"),
    ("asr_rtf = 0.2\n", "unknown field asr_rtf"),
    ("llm_first_token_s = \n", "not valid TOML"),
    ("llm_tokens_per_s = 0\n", "llm_tokens_per_s must be above 0"),
])
def test_a_bad_timing_file_is_named_in_one_line(tmp_path, text, says):
    path = tmp_path / "board.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=says) as caught:
        from_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_boards_own_json_replaces_what_it_measured(tmp_path):
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"machine": "rk3576 test", "llm_first_token_s": 0.5, "llm_tokens_per_s": 25}),
                    encoding="utf-8")
    timings = load(f"rk3576:{path}")
    assert (timings.llm_first_token_s, timings.llm_tokens_per_s) == (0.5, 25.0)
    assert timings.tts_acoustic_s == Timings().tts_acoustic_s
    assert "rk3576 test" in timings.source
    with pytest.raises(ConfigError, match="rk3576"):
        load("rk3588")


def test_the_cli_says_a_bad_timing_file_in_one_line(tmp_path):
    bad = tmp_path / "board.toml"
    bad.write_text("llm_first_token_s = 'soon'\n", encoding="utf-8")
    wav = empty_wav(tmp_path / "empty.wav")
    result = assistant("replay", str(wav), "--out", str(tmp_path / "out"), "--predict", f"rk3576:{bad}", cwd=ROOT)
    one_line_error(result, "llm_first_token_s", str(bad))
