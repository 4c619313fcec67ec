"""summary.json: what a session did, per turn, computed from its events alone.

Definitions follow the published RK3576 measurements: first audio (``tts_first_audio_s``) is the
first chunk's text complete -> its first sample handed to the sink; RTF is synthesis time / audio
duration (per chunk and per turn); the inter-chunk gap is how long the sink ran dry before a chunk
arrived (each such gap is an underrun); end of speech -> first audio is the whole chain, from the
endpoint decision to the first sample handed to the sink; the LLM's time to first token is counted
from the transcript.

``echo_defence`` counts how often each layer of the echo defence acted: the canceller (chunks that
held played audio, chunks where it removed at least 6 dB, and its echo return loss enhancement),
the echo window, the transcript filter and the own-words check; ``noise_rejected`` counts onsets
refused as noise.
"""

from __future__ import annotations

from typing import Any

from assistant.events import Event, to_record


class SummaryBuilder:
    """A bus subscriber that keeps every event record and reduces them to a summary."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def __call__(self, t: float, event: Event) -> None:
        self.records.append(to_record(t, event))

    def summary(self) -> dict[str, Any]:
        return summarize(self.records)


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None
    last_wake: float | None = None
    states = ["idle"]
    for r in records:
        kind, t = r["type"], r["t"]
        if kind == "state_changed" and r["to"] not in states:
            states.append(r["to"])
        elif kind == "wake_detected":
            last_wake = t
        elif kind == "speech_ended":
            turn = _new_turn(last_wake, r.get("speech_end_t", t), t)
            turns.append(turn)
            last_wake = None
        elif turn is None:
            continue
        elif kind == "preempted" and r["used"]:
            turn["preempted"] = True  # prepared before the endpoint: its earlier parts are stamped before it
        elif kind == "transcript":
            turn["transcript"] = r["text"]
            turn["_transcript_t"] = t
        elif kind == "llm_first_token" and turn["_first_token_t"] is None:
            turn["_first_token_t"] = t
        elif kind == "reply_text":
            turn["reply"] = r["text"]
        elif kind == "text_chunk" and turn["_text_ready_t"] is None:
            turn["_text_ready_t"] = t
        elif kind == "tts_chunk":
            turn["_chunks"].append((r["audio_s"], r["synth_s"]))
        elif kind == "chunk_queued":
            turn["_gaps"].append(r["gap_s"])
        elif kind == "playback_started" and turn["first_audio_t"] is None:
            turn["first_audio_t"] = t
        elif kind in ("barge_in",) or (kind == "playback_finished" and r["interrupted"]):
            turn["interrupted"] = True
    for turn in turns:
        _finish(turn)
    return {
        "turns": turns,
        "barge_ins": [{"t": r["t"], "reason": r["reason"]} for r in records if r["type"] == "barge_in"],
        "echo_defence": _echo_defence(records),
        "noise_rejected": sum(1 for r in records if r["type"] == "noise_rejected"),
        "preempted": {"used": sum(1 for r in records if r["type"] == "preempted" and r["used"]),
                      "dropped": sum(1 for r in records if r["type"] == "preempted" and not r["used"])},
        "errors": [{"t": r["t"], "stage": r["stage"], "message": r["message"]}
                   for r in records if r["type"] == "error"],
        "states_visited": states,
    }


def _echo_defence(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"canceller": None, "echo_window": 0, "leak": 0, "transcript": 0, "own_words": 0}
    for r in records:
        if r["type"] == "echo_ignored":
            out[r["layer"]] += 1
        elif r["type"] == "echo_cancelled":
            out["canceller"] = {k: r.get(k) for k in ("chunks", "echo_chunks", "acted_chunks", "erle_db",
                                                       "double_talk_windows", "linear_learnt", "room_recalled")}
    return out


def _new_turn(wake_t: float | None, speech_end_t: float, endpoint_t: float) -> dict[str, Any]:
    """A turn from its end of speech (the last voiced sample) and its endpoint decision."""
    return {"transcript": None, "reply": None, "wake_t": wake_t, "speech_end_t": speech_end_t,
            "endpoint_t": endpoint_t, "endpoint_wait_s": round(endpoint_t - speech_end_t, 3),
            "first_audio_t": None, "end_of_speech_to_first_audio_s": None, "tts_first_audio_s": None,
            "llm_first_token_s": None, "rtf": None, "chunk_rtf": [], "max_gap_s": None, "underruns": 0,
            "interrupted": False, "preempted": False, "_transcript_t": None, "_first_token_t": None,
            "_text_ready_t": None, "_chunks": [], "_gaps": []}


def _finish(turn: dict[str, Any]) -> None:
    chunks, gaps = turn.pop("_chunks"), turn.pop("_gaps")
    text_ready, asked, first_token = turn.pop("_text_ready_t"), turn.pop("_transcript_t"), turn.pop("_first_token_t")
    first = turn["first_audio_t"]
    if first is not None:
        turn["end_of_speech_to_first_audio_s"] = round(first - turn["speech_end_t"], 3)
        if text_ready is not None:
            turn["tts_first_audio_s"] = round(first - text_ready, 3)
    if first_token is not None and asked is not None:
        turn["llm_first_token_s"] = round(first_token - asked, 3)
    if chunks:
        audio = sum(c[0] for c in chunks)
        turn["rtf"] = round(sum(c[1] for c in chunks) / audio, 3) if audio > 0 else None
        turn["chunk_rtf"] = [round(c[1] / c[0], 3) if c[0] > 0 else None for c in chunks]
    if gaps:
        turn["max_gap_s"] = max(gaps)
        turn["underruns"] = sum(1 for g in gaps if g > 0)
