"""Wav files: reading any PCM wav as 16 kHz mono float32, a wav source, a wav sink, a null sink."""

from __future__ import annotations

import os
import tempfile
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from assistant.audio.pacing import Pacer
from assistant.audio.protocols import Samples
from assistant.audio.resample import resample
from assistant.clock import SampleClock


class BadAudioFile(ValueError):
    """A file that is not a usable recording; the message is one line for the user."""


def read_wav(path: Path | str, sample_rate: int) -> Samples:
    """Read a PCM wav of any rate, width and channel count as mono float32 at ``sample_rate``."""
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            raw = w.readframes(w.getnframes())
    except FileNotFoundError:
        raise BadAudioFile(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadAudioFile(f"{path}: is a folder, not a wav file") from None
    except (wave.Error, EOFError, OSError) as exc:
        raise BadAudioFile(f"{path}: not a readable PCM wav file ({exc})") from None
    if width not in (1, 2, 3, 4) or channels < 1 or rate <= 0:
        raise BadAudioFile(f"{path}: unsupported wav format ({width * 8}-bit, {channels} channels)")
    frames = len(raw) // (width * channels)
    if frames == 0:
        raise BadAudioFile(f"{path}: the recording is empty")
    audio = _pcm_to_float(raw[: frames * width * channels], width).reshape(frames, channels).mean(axis=1)
    return resample(audio.astype(np.float32), rate, sample_rate)


def _pcm_to_float(raw: bytes, width: int) -> Samples:
    if width == 1:  # 8-bit wav is unsigned
        return ((np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0).astype(np.float32)
    if width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = (b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8  # sign-extend 24 bits
        return (ints / float(1 << 23)).astype(np.float32)
    ints = np.frombuffer(raw, "<i2" if width == 2 else "<i4").astype(np.float64)
    return (ints / float(1 << (8 * width - 1))).astype(np.float32)


def to_pcm16(audio: Samples) -> bytes:
    return (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def write_wav(path: Path, audio: Samples, sample_rate: int) -> None:
    """Write 16-bit mono PCM; the file is written whole to a temporary name of its own (two writers
    of the same path never share one), then renamed."""
    fd, name = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as raw, wave.open(raw, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sample_rate)
            w.writeframes(to_pcm16(audio))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class WavFileSource:
    """A recording played as if it were the microphone, chunk by chunk, driving the session clock.

    Without ``realtime`` the chunks come as fast as the consumer takes them; with it they are paced
    at one second of audio per wall-clock second.
    """

    def __init__(self, path: Path | str, clock: SampleClock, chunk_samples: int, *,
                 realtime: bool = False) -> None:
        self.sample_rate = clock.sample_rate
        self.chunk_samples = chunk_samples
        self.clock = clock
        self.realtime = realtime
        self.audio = read_wav(path, self.sample_rate)
        self._closed = False

    async def chunks(self) -> AsyncIterator[Samples]:
        n = self.chunk_samples
        padded = np.concatenate([self.audio, np.zeros(-len(self.audio) % n, np.float32)])
        pacer = Pacer(self.sample_rate, realtime=self.realtime)
        for i in range(0, len(padded), n):
            if self._closed:
                return
            await pacer.until(i + n)
            self.clock.advance(n)
            yield padded[i:i + n]

    def close(self) -> None:
        self._closed = True


class NullSink:
    """Discards audio at once, counting what it was given: playback is instantaneous."""

    def __init__(self, sample_rate: int) -> None:
        from assistant.audio.reference import PlayedAudio

        self.sample_rate = sample_rate
        self.reference = PlayedAudio(sample_rate)  # nobody listens to a file: never fed
        self._played = 0

    async def write(self, samples: Samples) -> None:
        self._played += len(samples)

    def clear(self) -> None:
        """Nothing is ever queued: written audio has already been played."""

    async def wait_playout(self) -> None:
        return None

    @property
    def position(self) -> int:
        return self._played

    def close(self) -> None:
        """Nothing to release."""


class WavFileSink(NullSink):
    """Collects everything played into a wav file, written whole when the sink is closed."""

    def __init__(self, path: Path, sample_rate: int) -> None:
        super().__init__(sample_rate)
        self.path = path
        self._parts: list[Samples] = []

    async def write(self, samples: Samples) -> None:
        self._parts.append(samples.astype(np.float32, copy=True))
        await super().write(samples)

    def close(self) -> None:
        audio = np.concatenate(self._parts) if self._parts else np.zeros(0, np.float32)
        write_wav(self.path, audio, self.sample_rate)
