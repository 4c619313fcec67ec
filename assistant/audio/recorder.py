"""``assistant run --record DIR``: keep what a live session heard and played, so that
``assistant replay`` can reproduce it (and a user can tune the echo defence for their room).

Per session a folder holds ``mic.wav`` (the microphone exactly as captured, before echo
cancellation), ``played.wav`` (what the speaker played, on the same timeline, sample for sample)
and ``events.jsonl``. The wav files are written as they grow and their headers brought up to date
every second, so a crash loses at most the last second.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import structlog

from assistant.audio.protocols import Samples
from assistant.audio.wav import to_pcm16

HEADER_BYTES = 44
MAX_DATA_BYTES = 2**32 - 1 - 36  # what a RIFF header can count: about 37 hours at 16 kHz

log = structlog.get_logger("recorder")


class GrowingWav:
    """A 16-bit mono wav file appended to chunk by chunk, always readable."""

    def __init__(self, path: Path, sample_rate: int, update_every_s: float = 1.0) -> None:
        self.path = path
        self.sample_rate = sample_rate
        self.update_every = int(update_every_s * sample_rate)
        self.samples = 0
        self.full = False
        self._since_update = 0
        self._f: BinaryIO = path.open("wb")
        self._header()

    def write(self, audio: Samples) -> None:
        if 2 * (self.samples + len(audio)) > MAX_DATA_BYTES:
            if not self.full:
                log.warning("recording full: a wav file holds at most 37 hours; the rest is not recorded",
                            path=str(self.path))
                self.full = True
            return
        self._f.write(to_pcm16(audio))
        self.samples += len(audio)
        self._since_update += len(audio)
        if self._since_update >= self.update_every:
            self._header()

    def close(self) -> None:
        if self._f.closed:
            return
        self._header()
        self._f.close()

    def _header(self) -> None:
        data = 2 * self.samples
        header = b"RIFF" + struct.pack("<I", 36 + data) + b"WAVE" + b"fmt " + struct.pack(
            "<IHHIIHH", 16, 1, 1, self.sample_rate, 2 * self.sample_rate, 2, 16) + b"data" + struct.pack("<I", data)
        end = self._f.tell()
        self._f.seek(0)
        self._f.write(header)
        self._f.seek(max(end, HEADER_BYTES))
        self._f.flush()
        self._since_update = 0


class SessionRecorder:
    """The session's tap: called by the audio pump with each microphone chunk and the played audio."""

    def __init__(self, folder: Path, sample_rate: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.mic = GrowingWav(folder / "mic.wav", sample_rate)
        self.played = GrowingWav(folder / "played.wav", sample_rate)

    def __call__(self, mic: Samples, played: Samples) -> None:
        self.mic.write(mic)
        self.played.write(played)

    def close(self) -> None:
        self.mic.close()
        self.played.close()
