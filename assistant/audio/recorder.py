"""``assistant run --record DIR``: keep what a live session heard and played, so that
``assistant replay`` can reproduce it (and a user can tune the echo defence for their room).

Per session a folder holds ``mic.wav`` (the microphone exactly as captured, before echo
cancellation), ``played.wav`` (what the speaker played, on the same timeline, sample for sample)
and ``events.jsonl``. The wav files are written as they grow and their headers brought up to date
every second, so a crash loses at most the last second.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import structlog

from assistant.audio.protocols import Samples
from assistant.audio.wav import to_pcm16
from assistant.events import Event, JsonlRecorder

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
    """The session's tap: called by the audio pump with each microphone chunk and the played audio,
    and a bus subscriber for the events.

    With ``max_s`` the recording is rotated: when the microphone file reaches it, the folder is
    closed and the next one (``next_folder()``) begins, each a session ``assistant replay`` takes on
    its own; beyond ``keep`` folders the oldest is deleted, so a box left recording never fills its
    disk.
    """

    def __init__(self, folder: Path, sample_rate: int, *, max_s: float = 0.0, keep: int = 0,
                 next_folder: Callable[[], Path] | None = None) -> None:
        self.sample_rate = sample_rate
        self.max_samples = int(max_s * sample_rate) if next_folder is not None else 0
        self.keep = keep
        self.next_folder = next_folder
        self.folders: list[Path] = []
        self._open(folder)

    @property
    def folder(self) -> Path:
        return self.folders[-1]

    def _open(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folders.append(folder)
        self.mic = GrowingWav(folder / "mic.wav", self.sample_rate)
        self.played = GrowingWav(folder / "played.wav", self.sample_rate)
        self.events = JsonlRecorder(folder / "events.jsonl")

    def __call__(self, mic: Samples, played: Samples) -> None:
        if self.max_samples and self.mic.samples + len(mic) > self.max_samples and self.next_folder is not None:
            self._rotate(self.next_folder())
        self.mic.write(mic)
        self.played.write(played)

    def event(self, t: float, event: Event) -> None:
        self.events(t, event)

    def _rotate(self, folder: Path) -> None:
        self.close()
        log.info("recording rotated", closed=str(self.folder), next=str(folder))
        self._open(folder)
        while self.keep and len(self.folders) > self.keep:
            shutil.rmtree(self.folders.pop(0), ignore_errors=True)

    def close(self) -> None:
        self.mic.close()
        self.played.close()
        self.events.close()
