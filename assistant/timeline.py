"""Timeline pictures of a turn: where the time between the end of speech and the sound goes.

Drawn from event records alone (the JSONL form), so a replay and the bench plot the same way: one
row for the user (speech end, transcript), one for the LLM (first token, reply complete), one bar
per chunk's synthesis, one bar per chunk's playback, and every gap in playback in red.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_turn(records: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Write a PNG of one turn's events to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    marks = {"speech_ended": "end of speech", "transcript": "transcript (ASR done)",
             "llm_first_token": "LLM first token", "reply_text": "LLM done", "playback_started": "first audio"}
    fig, ax = plt.subplots(figsize=(11, 3.6), dpi=100)
    rows = {"user / LLM": 3, "synthesis": 2, "playback": 1}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (kind, label) in enumerate(marks.items()):
        for r in records:
            if r["type"] == kind:
                ax.axvline(r["t"], color=colors[i % len(colors)], linestyle="--", linewidth=1, label=label)
                break
    for i, r in enumerate(r for r in records if r["type"] == "tts_chunk"):
        start = r["t"] - r["synth_s"]
        ax.broken_barh([(start, max(r["synth_s"], 0.005))], (rows["synthesis"] - 0.35, 0.7), color="#4c72b0",
                       edgecolor="white")
        ax.text(start, rows["synthesis"] + 0.4, f"{i + 1}", fontsize=7)
    play_end: float | None = None
    for r in (r for r in records if r["type"] == "chunk_queued"):
        start = r["t"] if play_end is None else max(r["t"], play_end)
        if r["gap_s"] > 0 and play_end is not None:
            ax.broken_barh([(play_end, r["gap_s"])], (rows["playback"] - 0.35, 0.7), color="#d62728")
        ax.broken_barh([(start, r["audio_s"])], (rows["playback"] - 0.35, 0.7), color="#55a868",
                       edgecolor="white")
        play_end = start + r["audio_s"]
    ax.set_yticks(list(rows.values()), list(rows.keys()))
    ax.set_ylim(0.3, 3.8)
    ax.set_xlabel("session time (s)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=7, ncol=3)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def turns(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The records of a session split into turns, each from its speech end to the next one."""
    out: list[list[dict[str, Any]]] = []
    for r in records:
        if r["type"] == "speech_ended":
            out.append([])
        if out:
            out[-1].append(r)
    return out
