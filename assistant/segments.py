"""The utterances a recording holds, as listening would cut them (for tuning ``vad.*``)."""

from __future__ import annotations

from assistant.audio.protocols import Samples
from assistant.config import Config
from models.protocols import Vad
from states.endpointer import Endpointer
from states.state import VadWindow


async def find_utterances(cfg: Config, vad: Vad, audio: Samples) -> list[tuple[int, int, str]]:
    """(start, end, why it ended) in samples, for each utterance, with the live settings."""
    chunk = cfg.audio.chunk_samples

    def endpointer() -> Endpointer:
        return Endpointer.from_config(cfg, vad.window_samples)

    found: list[tuple[int, int, str]] = []
    current, windows = endpointer(), 0
    for i in range(0, len(audio), chunk):
        for prob in await vad.accept(audio[i:i + chunk]):
            windows += 1
            _, utterance = current.feed([VadWindow(windows * vad.window_samples, prob)])
            if utterance is not None:
                found.append((utterance.start, utterance.end - utterance.trailing_silence, utterance.reason))
                current = endpointer()
    if current.onset is not None:
        found.append((current.onset, windows * vad.window_samples, "end of file"))
    return found
