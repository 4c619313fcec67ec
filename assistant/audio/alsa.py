"""ALSA capture and playback through pyalsaaudio.

Each direction owns one device thread, the only thread that touches its PCM handle (ALSA handles
are not thread-safe). Capture hands exact chunks to the event loop; playback writes one period at a
time so that ``clear()`` (barge-in) reaches the device within one period: it discards the software
queue at once and the thread drops the device buffer (``pcm.drop()``) before its next write.
Over- and underruns are recovered (pyalsaaudio re-prepares the stream) and counted. A device that
goes away (unplugged, a driver reset) is opened again with back-off: meanwhile capture hands on
silence in real time (the pump, its timers and the watchdog go on) and playback lets its audio go
in real time (a reply still ends). Capture is held to real time even when a device reads faster.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import errno
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any

import numpy as np
import structlog

from assistant.audio.protocols import AudioDeviceError, Samples
from assistant.audio.reference import PlayedAudio
from assistant.audio.wav import to_pcm16
from assistant.clock import SampleClock

log = structlog.get_logger("alsa")


_ErrorHandler = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                 ctypes.c_char_p)
_quiet_handler: Any = None


def silence_alsa_lib() -> None:
    """Keep libasound from printing its own multi-line diagnostics on stderr; we raise one
    clear error instead. (The handler is variadic in C; the extra arguments are ignored.)"""
    global _quiet_handler
    if _quiet_handler is not None:
        return
    name = ctypes.util.find_library("asound") or "libasound.so.2"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return
    _quiet_handler = _ErrorHandler(lambda *_: None)
    lib.snd_lib_error_set_handler(_quiet_handler)


def _open(kind: str, device: str, rate: int, period: int, periods: int = 4) -> Any:
    try:
        import alsaaudio
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise AudioDeviceError(f"pyalsaaudio is not installed: {exc}") from None
    silence_alsa_lib()
    pcm_type = alsaaudio.PCM_CAPTURE if kind == "capture" else alsaaudio.PCM_PLAYBACK
    try:
        return alsaaudio.PCM(pcm_type, device=device, rate=rate, channels=1,
                             format=alsaaudio.PCM_FORMAT_S16_LE, periodsize=period, periods=periods)
    except alsaaudio.ALSAAudioError as exc:
        raise AudioDeviceError(f"cannot open {kind} device {device!r} (no sound card?): {exc}") from None


IDLE_READ_S = 0.005
AHEAD_MAX_S = 0.5
REOPEN_S, REOPEN_MAX_S = 1.0, 10.0  # a lost device is tried again after 1 s, 2 s, 4 s … at most 10 s


class _Reopen:
    """When to try a lost device again: ``REOPEN_S`` after the loss, then twice as long after each failure."""

    def __init__(self) -> None:
        self.wait = REOPEN_S
        self.at = time.monotonic() + self.wait

    def due(self) -> bool:
        return time.monotonic() >= self.at

    def failed(self) -> None:
        self.wait = min(REOPEN_MAX_S, 2 * self.wait)
        self.at = time.monotonic() + self.wait


class _Pace:
    """Holds capture to one second per second. A device that delivers faster than real time (ALSA's
    ``file`` plugin once its input file has ended, over a ``null`` slave) would otherwise flood the
    loop with chunks, run the session clock ahead and leave no room for a signal to be handled."""

    def __init__(self, sample_rate: int, device: str) -> None:
        self.sample_rate, self.device = sample_rate, device
        self.start: float | None = None
        self.samples = 0
        self.warned = False

    def wait(self, frames: int, stop: threading.Event) -> None:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        self.samples += frames
        ahead = self.samples / self.sample_rate - (now - self.start)
        if ahead > AHEAD_MAX_S:
            if not self.warned:
                self.warned = True
                log.warning("capture runs faster than real time: held to real time", device=self.device)
            stop.wait(ahead)


class AlsaSource:
    """Microphone capture: chunks of ``chunk_samples`` at ``sample_rate``, driving the clock."""

    def __init__(self, device: str, clock: SampleClock, chunk_samples: int) -> None:
        self.device = device
        self.sample_rate = clock.sample_rate
        self.chunk_samples = chunk_samples
        self.clock = clock
        self.overruns = 0
        self.outages = 0  # times the device went away and came back
        self._pcm = _open("capture", device, self.sample_rate, chunk_samples)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    async def chunks(self) -> AsyncIterator[Samples]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Samples | BaseException | None] = asyncio.Queue()
        self._thread = threading.Thread(target=self._capture, args=(loop, queue),
                                        name=f"alsa-capture:{self.device}", daemon=True)
        self._thread.start()
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            self.clock.advance(len(item))
            yield item

    def _capture(self, loop: asyncio.AbstractEventLoop,
                 queue: asyncio.Queue[Samples | BaseException | None]) -> None:
        n, buf = self.chunk_samples, np.zeros(0, np.float32)
        pace = _Pace(self.sample_rate, self.device)
        def emit(chunk: Samples) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)

        try:
            while not self._stop.is_set():
                try:
                    frames, data = self._pcm.read()
                except Exception as exc:  # the device went away (unplugged, a driver reset): wait for it
                    self._outage(exc, pace, emit)
                    buf = np.zeros(0, np.float32)
                    continue
                if frames == -errno.EPIPE:
                    self.overruns += 1
                    log.warning("capture overrun recovered", device=self.device, overruns=self.overruns)
                    continue
                if frames <= 0:
                    self._stop.wait(IDLE_READ_S)  # a read that returns nothing at once must not spin
                    continue
                pace.wait(frames, self._stop)
                pcm = np.frombuffer(data, "<i2").astype(np.float32) / 32768.0
                buf = np.concatenate([buf, pcm])
                while len(buf) >= n:
                    emit(buf[:n])
                    buf = buf[n:]
        except Exception as exc:  # handed to the reading coroutine, which raises it
            loop.call_soon_threadsafe(queue.put_nowait, AudioDeviceError(f"capture failed: {exc}"))
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    def _outage(self, error: Exception, pace: _Pace, emit: Callable[[Samples], None]) -> None:
        """The device is gone: hand on silence in real time (timers and reminders go on, the pump and
        its watchdog stay alive) and try to open it again, less often the longer it stays away."""
        log.error("capture device lost: listening to silence until it is back", device=self.device, error=str(error))
        with suppress(Exception):
            self._pcm.close()
        silence = np.zeros(self.chunk_samples, np.float32)
        retry = _Reopen()
        while not self._stop.is_set():
            self._stop.wait(self.chunk_samples / self.sample_rate)
            pace.wait(self.chunk_samples, self._stop)
            emit(silence)
            if not retry.due():
                continue
            try:
                self._pcm = _open("capture", self.device, self.sample_rate, self.chunk_samples)
            except AudioDeviceError:
                retry.failed()
                continue
            self.outages += 1
            log.info("capture device back", device=self.device, outages=self.outages)
            return

    def close(self) -> None:
        """Stop capturing; the thread finishes its current read (one period) before the PCM closes."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._pcm.close()


class AlsaSink:
    """Speaker playback with a software queue in front of a small device buffer."""

    def __init__(self, device: str, sample_rate: int, buffer_ms: int, period_ms: int = 20) -> None:
        self.device = device
        self.sample_rate = sample_rate
        self.period = max(1, sample_rate * period_ms // 1000)
        periods = max(2, buffer_ms // period_ms)
        self.buffer_frames = self.period * periods
        self.underruns = 0
        self.reference = PlayedAudio(sample_rate)
        self._periods = periods
        self.outages = 0  # times the device went away and came back
        self._retry: _Reopen | None = None  # set while the device is gone
        self._pcm: Any = _open("playback", device, sample_rate, self.period, periods)
        self._pending: deque[Samples] = deque()
        self._cond = threading.Condition()
        self._clear_requested = False
        self._closed = False
        self._written = 0
        self._played = 0
        self._idle_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread = threading.Thread(target=self._run, name=f"alsa-playback:{device}", daemon=True)
        self._thread.start()

    async def write(self, samples: Samples) -> None:
        with self._cond:
            self._pending.append(samples.astype(np.float32, copy=True))
            self._cond.notify()

    def clear(self) -> None:
        with self._cond:
            self._pending.clear()
            self._clear_requested = True
            self._cond.notify()

    async def wait_playout(self) -> None:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._cond:
            self._idle_waiters.append((loop, fut))
            self._cond.notify()
        await fut

    @property
    def position(self) -> int:
        return self._played

    def close(self) -> None:
        if self._closed:
            return
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify()
        self._thread.join(timeout=1.0)
        if self._pcm is not None:
            self._pcm.close()

    def _take_period(self) -> Samples | None:
        if not self._pending:
            return None
        head = self._pending[0]
        if len(head) <= self.period:
            self._pending.popleft()
            return head
        self._pending[0] = head[self.period:]
        return head[:self.period]

    def _in_device(self) -> int:
        """Frames written to the device and not yet played."""
        if self._pcm is None:
            return 0
        try:
            return max(0, self.buffer_frames - int(self._pcm.avail()))
        except Exception:  # the device has just gone: the next write finds out
            return 0

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                if self._clear_requested:
                    self._clear_requested = False
                    if self._pcm is not None:
                        with suppress(Exception):
                            self._pcm.drop()  # the next write re-prepares the stream
                    self._written = self._played
                chunk = self._take_period()
                if chunk is None:
                    self._played = self._written - self._in_device()
                    if self._written == self._played:
                        self._wake_idle_waiters()
                    self._cond.wait(timeout=self.period / self.sample_rate)
                    continue
            self._write(chunk)

    def _write(self, chunk: Samples) -> None:
        if self._pcm is None and not self._reopen():
            self._discard(chunk)
            return
        assert self._pcm is not None
        data = to_pcm16(chunk)
        try:
            while True:
                frames = self._pcm.write(data)
                if frames == -errno.EPIPE:
                    self.underruns += 1
                    log.debug("playback underrun recovered", device=self.device, underruns=self.underruns)
                    continue
                break
        except Exception as exc:  # the device went away (unplugged, a driver reset)
            log.error("playback device lost: replies go unheard until it is back", device=self.device,
                      error=str(exc))
            with suppress(Exception):
                self._pcm.close()
            self._pcm, self._retry = None, _Reopen()
            self._discard(chunk)
            return
        self.reference.push(chunk)
        self._written += len(chunk)
        self._played = self._written - self._in_device()

    def _discard(self, chunk: Samples) -> None:
        """No device: the chunk is let go in real time, as if played into nothing, so a reply still
        ends when it would have and the echo reference (silence) stays on the microphone's timeline."""
        time.sleep(len(chunk) / self.sample_rate)
        self.reference.push(np.zeros_like(chunk))
        self._written += len(chunk)
        self._played = self._written

    def _reopen(self) -> bool:
        if self._retry is not None and not self._retry.due():
            return False
        try:
            self._pcm = _open("playback", self.device, self.sample_rate, self.period, self._periods)
        except AudioDeviceError:
            if self._retry is not None:
                self._retry.failed()
            return False
        self.outages += 1
        log.info("playback device back", device=self.device, outages=self.outages)
        return True

    def _wake_idle_waiters(self) -> None:
        for loop, fut in self._idle_waiters:
            loop.call_soon_threadsafe(_resolve, fut)
        self._idle_waiters.clear()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
