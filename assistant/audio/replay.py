"""The microphone and speaker of a replayed session, sharing one sample clock.

The session wav is what the microphone hears. Whatever the assistant plays goes onto a timeline
aligned sample for sample with the microphone (silence where it was quiet), and with an echo
``gain``/``delay`` the microphone also hears that played audio, as through a real room: an acoustic
loop, so self-interruption and barge-in can be tested without hardware.

The echo canceller's reference is what the speaker played at each microphone chunk. A session
recorded in a real room (``assistant run --record``) brings its own: the microphone then holds the
echo of the replies played back then, so the recorded playback is the reference, not the new one.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

import numpy as np

from assistant.audio.pacing import Pacer, Pacing
from assistant.audio.protocols import Samples
from assistant.audio.reference import PlayedAudio
from assistant.clock import SampleClock


class ReplaySpeaker:
    """The sink side: audio queued here is played out one microphone chunk at a time."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self.reference = PlayedAudio(sample_rate)
        self._pending: deque[Samples] = deque()
        self._pending_samples = 0
        self._played = 0
        self._drained = asyncio.Event()
        self._drained.set()

    async def write(self, samples: Samples) -> None:
        if len(samples):
            self._pending.append(samples.astype(np.float32, copy=True))
            self._pending_samples += len(samples)
            self._drained.clear()

    def clear(self) -> None:
        self._pending.clear()
        self._pending_samples = 0
        self._drained.set()

    async def wait_playout(self) -> None:
        await self._drained.wait()

    @property
    def position(self) -> int:
        return self._played

    @property
    def queued(self) -> int:
        """Samples written but not yet played."""
        return self._pending_samples

    def close(self) -> None:
        self.clear()

    def play(self, n: int) -> Samples:
        """Take the next ``n`` samples off the queue, padded with silence."""
        out = np.zeros(n, np.float32)
        filled = 0
        while filled < n and self._pending:
            head = self._pending[0]
            take = min(n - filled, len(head))
            out[filled:filled + take] = head[:take]
            filled += take
            if take == len(head):
                self._pending.popleft()
            else:
                self._pending[0] = head[take:]
        self._pending_samples -= filled
        self._played += filled
        if not self._pending:
            self._drained.set()
        return out


class ReplayDevice:
    """A full-duplex device for replay: ``mic`` (an AudioSource) and ``speaker`` (an AudioSink).

    After the recording ends the microphone goes on with silence while ``keep_going()`` is true
    (for instance until the assistant is idle again), for at most ``max_tail_s``. A ``pacer`` other
    than the default one (as fast as possible, or real time) decides when each chunk is handed out.
    """

    def __init__(self, recording: Samples, clock: SampleClock, chunk_samples: int, *,
                 echo_gain: float = 0.0, echo_delay_ms: float = 0.0, realtime: bool = False,
                 max_tail_s: float = 300.0, recorded_reference: Samples | None = None,
                 pacer: Pacing | None = None) -> None:
        self.sample_rate = clock.sample_rate
        self.chunk_samples = chunk_samples
        self.clock = clock
        self.recording = recording
        self.echo_gain = echo_gain
        self.echo_delay = int(round(echo_delay_ms * self.sample_rate / 1000))
        self.realtime = realtime
        self.max_tail_samples = int(max_tail_s * self.sample_rate)
        self.keep_going: Callable[[], bool] = lambda: False
        self.speaker = ReplaySpeaker(self.sample_rate)
        self.recorded_reference = recorded_reference
        self.pacer = pacer
        self._timeline = np.zeros(len(recording) + chunk_samples, np.float32)
        self._timeline_len = 0
        self._closed = False

    def played(self) -> Samples:
        """What the speaker played, on the microphone's timeline."""
        return self._timeline[:self._timeline_len].copy()

    def heard(self, start: int, n: int) -> Samples:
        """The recording from ``start`` for ``n`` samples, silence past its end."""
        return _window(self.recording, start, n)

    async def chunks(self) -> AsyncIterator[Samples]:
        n, pos = self.chunk_samples, 0
        pacer = self.pacer or Pacer(self.sample_rate, realtime=self.realtime)
        end = len(self.recording)
        while not self._closed:
            if pos >= end and (not self.keep_going() or pos >= end + self.max_tail_samples):
                return
            await pacer.until(pos + n)
            played = self.speaker.play(n)
            self._append_played(played)
            if self.recorded_reference is None:
                self.speaker.reference.push(played)
            else:
                self.speaker.reference.push(_window(self.recorded_reference, pos, n))
            chunk = self.heard(pos, n)
            if self.echo_gain:
                chunk += self.echo_gain * self._played_window(pos - self.echo_delay, n)
            pos += n
            self.clock.advance(n)
            yield chunk

    def _append_played(self, audio: Samples) -> None:
        end = self._timeline_len + len(audio)
        if end > len(self._timeline):
            grown = np.zeros(max(end, 2 * len(self._timeline)), np.float32)
            grown[:self._timeline_len] = self._timeline[:self._timeline_len]
            self._timeline = grown
        self._timeline[self._timeline_len:end] = audio
        self._timeline_len = end

    def _played_window(self, start: int, n: int) -> Samples:
        """Played samples ``[start, start + n)`` of the timeline, silence before its beginning."""
        out = np.zeros(n, np.float32)
        lo, hi = max(start, 0), min(start + n, self._timeline_len)
        if lo < hi:
            out[lo - start:hi - start] = self._timeline[lo:hi]
        return out

    def close(self) -> None:
        self._closed = True


def _window(audio: Samples, start: int, n: int) -> Samples:
    out = np.zeros(n, np.float32)
    part = audio[start:start + n]
    out[:len(part)] = part
    return out
