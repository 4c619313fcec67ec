"""summary.json: what a session did, per turn, computed from its events alone.

Definitions follow the published RK3576 measurements: first audio is text ready -> first audio
sample into the player; RTF is synthesis time / audio duration; the inter-chunk gap is how long the
player waited for the next chunk after the previous one ran out; end of speech -> first audio is
the whole chain, from the endpoint decision to the first sample played.
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
            turn = _new_turn(last_wake, t)
            turns.append(turn)
            last_wake = None
        elif turn is None:
            continue
        elif kind == "transcript":
            turn["transcript"] = r["text"]
        elif kind == "reply_text":
            turn["reply"] = r["text"]
            turn["_text_ready_t"] = t
        elif kind == "tts_chunk":
            turn["_chunks"].append((t, r["audio_s"], r["synth_s"]))
        elif kind == "playback_started" and turn["first_audio_t"] is None:
            turn["first_audio_t"] = t
        elif kind in ("barge_in",) or (kind == "playback_finished" and r["interrupted"]):
            turn["interrupted"] = True
    for turn in turns:
        _finish(turn)
    return {
        "turns": turns,
        "barge_ins": [{"t": r["t"], "reason": r["reason"]} for r in records if r["type"] == "barge_in"],
        "errors": [{"t": r["t"], "stage": r["stage"], "message": r["message"]}
                   for r in records if r["type"] == "error"],
        "states_visited": states,
    }


def _new_turn(wake_t: float | None, speech_end_t: float) -> dict[str, Any]:
    return {"transcript": None, "reply": None, "wake_t": wake_t, "speech_end_t": speech_end_t,
            "first_audio_t": None, "end_of_speech_to_first_audio_s": None, "tts_first_audio_s": None,
            "rtf": None, "max_gap_s": None, "interrupted": False, "_text_ready_t": None, "_chunks": []}


def _finish(turn: dict[str, Any]) -> None:
    chunks = turn.pop("_chunks")
    text_ready = turn.pop("_text_ready_t")
    first = turn["first_audio_t"]
    if first is not None:
        turn["end_of_speech_to_first_audio_s"] = round(first - turn["speech_end_t"], 3)
        if text_ready is not None:
            turn["tts_first_audio_s"] = round(first - text_ready, 3)
    if chunks:
        audio = sum(c[1] for c in chunks)
        turn["rtf"] = round(sum(c[2] for c in chunks) / audio, 3) if audio > 0 else None
        gap, play_end = 0.0, chunks[0][0]
        for ready, audio_s, _ in chunks:
            gap = max(gap, ready - play_end)
            play_end = max(play_end, ready) + audio_s
        turn["max_gap_s"] = round(gap, 3)
