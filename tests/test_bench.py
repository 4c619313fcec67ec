"""`assistant bench` and the timeline plots, driven by a scripted TTS (the TTS is not the subject)."""

from __future__ import annotations

import json

import pytest

from assistant.commands.bench import REPLIES, measure, run, side, table
from assistant.pipeline import PipelineOptions
from assistant.timeline import plot_turn, turns
from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedLlm, ToneTts


def test_measure_reads_first_audio_rtf_and_gaps_from_events():
    records = [
        {"t": 0.10, "type": "text_chunk", "text": "好的，"},
        {"t": 0.30, "type": "tts_chunk", "text": "好的，", "audio_s": 1.0, "synth_s": 0.2},
        {"t": 0.30, "type": "playback_started"},
        {"t": 0.30, "type": "chunk_queued", "index": 0, "audio_s": 1.0, "gap_s": 0.0},
        {"t": 1.50, "type": "tts_chunk", "text": "我来了。", "audio_s": 1.0, "synth_s": 0.6},
        {"t": 1.50, "type": "chunk_queued", "index": 1, "audio_s": 1.0, "gap_s": 0.2},
    ]
    m = measure(records)
    assert m == pytest.approx({"first_audio_s": 0.2, "rtf": 0.4, "max_gap_s": 0.2})
    s = side([m, {**m, "first_audio_s": 0.4}])
    assert s["first_audio_p50_s"] == pytest.approx(0.3) and s["first_audio_p95_s"] == 0.4 and s["runs"] == 2


def test_replies_cover_short_long_and_numbers():
    lengths = [len(text) for _, text in REPLIES]
    assert lengths[0] < 12 and lengths[-1] >= 80
    assert any(ch.isdigit() for ch in REPLIES[-1][1]) and "2026-12-03" in REPLIES[-1][1]


@pytest.mark.slow
def test_bench_compares_whole_reply_and_pipeline_and_draws_timelines(tmp_path):
    tts = ToneTts(seconds_per_char=0.2)
    out = json.loads(run(tts, PipelineOptions(), repeats=1, plots=tmp_path, as_json=True))
    assert set(out) == {"whole_reply", "pipelined", "ratio_first_audio_p50"}
    for mode in ("whole_reply", "pipelined"):
        assert {"first_audio_p50_s", "first_audio_p95_s", "rtf", "max_gap_s", "runs"} <= set(out[mode])
        assert out[mode]["runs"] == len(REPLIES)
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(pngs) == 2 * len(REPLIES) and all((tmp_path / p).stat().st_size > 10_000 for p in pngs)
    text = run(tts, PipelineOptions(), repeats=1, plots=None, as_json=False)
    assert "| all | pipelined |" in text and "pipelined / whole-reply first audio (p50)" in text


async def test_replay_turns_are_plotted(run_replay, tmp_path):
    r = await run_replay(session_of(real("ask_who_are_you.wav"), silence(1.0)), "dialog.follow_up_s=0",
                         llm=ScriptedLlm("好的，我来介绍一下。我叫听说。"), tts=ToneTts())
    turn, = turns(r.events)
    assert turn[0]["type"] == "speech_ended"
    png = plot_turn(turn, tmp_path / "turn1.png", "turn 1")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table_text = table({"replies": {}, "whole_reply": {"first_audio_p50_s": 1, "first_audio_p95_s": 1, "rtf": 1,
                                                       "max_gap_s": 0, "runs": 1},
                        "pipelined": {"first_audio_p50_s": 0.2, "first_audio_p95_s": 0.2, "rtf": 1, "max_gap_s": 0,
                                      "runs": 1}, "ratio_first_audio_p50": 0.2})
    assert "0.200" in table_text
