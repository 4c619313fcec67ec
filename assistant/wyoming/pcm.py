"""Wyoming's audio (16-bit little-endian PCM chunks of any rate and channel count) to and from the
float32 mono the models take."""

from __future__ import annotations

import numpy as np
import soxr
from wyoming.audio import AudioChunk, AudioFormat

from assistant.audio.protocols import Samples
from assistant.audio.wav import to_pcm16

WIDTH = 2  # bytes: every stream Tingshuo writes is 16-bit


class BadAudio(ValueError):
    """Audio in a format that cannot be read (the message says which)."""


class Incoming:
    """One stream's chunks as float32 mono at ``rate``, resampled on the way without seams."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._format: tuple[int, int, int] | None = None
        self._resampler: soxr.ResampleStream | None = None
        self._partial = b""  # the bytes of a frame a chunk cut in two (Home Assistant splits at any byte)

    def start(self, fmt: AudioFormat) -> None:
        """A new stream begins (``audio-start``): forget the last one's format and resampler state."""
        self._format, self._resampler, self._partial = None, None, b""
        self._check(fmt)

    def read(self, chunk: AudioChunk) -> Samples:
        self._check(chunk)
        data = self._partial + chunk.audio
        whole = len(data) - len(data) % (WIDTH * chunk.channels)
        data, self._partial = data[:whole], data[whole:]
        audio = np.frombuffer(data, "<i2").astype(np.float32) / 32768.0
        if chunk.channels > 1:
            audio = audio.reshape(-1, chunk.channels).mean(axis=1).astype(np.float32)
        if chunk.rate == self.rate:
            return audio
        if self._resampler is None:
            self._resampler = soxr.ResampleStream(chunk.rate, self.rate, 1, dtype="float32")
        return np.asarray(self._resampler.resample_chunk(audio), np.float32)

    def end(self) -> Samples:
        """The stream ended (``audio-stop``): what the resampler still holds."""
        resampler, self._resampler, self._format, self._partial = self._resampler, None, None, b""
        if resampler is None:
            return np.zeros(0, np.float32)
        return np.asarray(resampler.resample_chunk(np.zeros(0, np.float32), last=True), np.float32)

    def _check(self, fmt: AudioFormat) -> None:
        got = (fmt.rate, fmt.width, fmt.channels)
        if fmt.width != WIDTH:
            raise BadAudio(f"audio of {fmt.width * 8}-bit samples: only 16-bit PCM is read")
        if not (8000 <= fmt.rate <= 96000) or not (1 <= fmt.channels <= 8):
            raise BadAudio(f"audio at {fmt.rate} Hz with {fmt.channels} channels cannot be read")
        if self._format is not None and got != self._format:
            raise BadAudio(f"the audio format changed within a stream: {self._format} → {got}")
        if self._format is None:
            self._format, self._resampler = got, None


def chunks(audio: Samples, rate: int, samples_per_chunk: int = 1024) -> list[AudioChunk]:
    """``audio`` as 16-bit mono chunks of at most ``samples_per_chunk``."""
    pcm = to_pcm16(audio)
    step = samples_per_chunk * WIDTH
    return [AudioChunk(rate=rate, width=WIDTH, channels=1, audio=pcm[i:i + step]) for i in range(0, len(pcm), step)]
