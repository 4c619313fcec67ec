"""A linear echo canceller: the echo path as an adaptive filter, and nothing after it (Speex MDF).

WebRTC's AEC3 (``echo.py``) follows its linear filter with a non-linear suppressor. While the
assistant talks, that suppressor also attenuates the user talking over it: the first syllables of a
barge-in come out muffled, and Whisper mishears them (告诉我，你是谁 → 老婆 你是谁). A linear
canceller only subtracts its estimate of the echo, so the user's voice passes as it was, with some
residual echo under it (measured on that barge-in: the user 9 dB over what is left, against 5 dB
through AEC3; Whisper then hears 我告诉我你是谁). The echo defence keeps this signal beside AEC3's
for a request that begins over the reply.

The filter is libspeexdsp's multidelay block frequency-domain filter (MDF, with its own adaptive
step and two-path double-talk protection), through ctypes. A numpy partitioned-block NLMS of our
own was tried first and converged more slowly on speech than MDF.

Library facts used (libspeexdsp 1.2): the API is 16-bit; ``speex_echo_cancellation`` takes one frame
of microphone and of played audio and writes one frame out, with no delay; the played frame must be
what the speaker played while the microphone frame was captured; the acoustic delay must be within
the filter length. ``SPEEX_ECHO_SET_SAMPLING_RATE`` is control 24; ``SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE``
27 and ``SPEEX_ECHO_GET_IMPULSE_RESPONSE`` 29 read the filter back as int32 taps (there is no setter:
a filter is taught a path by playing through it, ``rehearse``). ``RESPONSE_SCALE`` turns those taps
into the path's gain per sample: measured here on converged filters of known paths (gain 0.25 and
0.5, 100 and 300 samples late, 128-sample frames: 8.234–8.236e6 a unit of gain), and checked in
``tests/test_room_memory.py`` by teaching a new filter the path read back.
"""

from __future__ import annotations

import ctypes
from ctypes.util import find_library
from typing import Any

import numpy as np

from assistant.audio.protocols import AudioDeviceError, Samples

LIBRARY = "libspeexdsp.so.1"
SET_SAMPLING_RATE = 24
GET_IMPULSE_RESPONSE_SIZE = 27
GET_IMPULSE_RESPONSE = 29
RESPONSE_SCALE = 1 / 8.235e6
INT16 = 32767.0


class LinearEchoError(AudioDeviceError):
    """libspeexdsp is missing; the message says how to install it."""


def _library() -> Any:
    try:
        lib = ctypes.CDLL(find_library("speexdsp") or LIBRARY)
    except OSError:
        raise LinearEchoError("echo.linear needs libspeexdsp (apt install libspeexdsp1), "
                              "or set echo.linear = false") from None
    lib.speex_echo_state_init.restype = ctypes.c_void_p
    lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p] * 4
    lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
    return lib


def pcm16(samples: np.ndarray) -> np.ndarray:
    """Float samples (full scale 1) as the library's 16-bit ones."""
    return np.clip(samples * INT16, -INT16 - 1, INT16).astype(np.int16)


class LinearEchoCanceller:
    """Subtracts the linearly filtered reference from the microphone.

    Output lags input by nothing when the chunks are whole frames (the session's 512-sample chunks,
    128-sample frames), and by one frame when the first chunk is not. Not thread-safe: one instance
    per stream.
    """

    def __init__(self, sample_rate: int = 16000, *, frame: int = 128, filter_ms: int = 128) -> None:
        if frame <= 0 or filter_ms <= 0:
            raise ValueError(f"frame {frame} and filter_ms {filter_ms} must be positive")
        self.sample_rate, self.frame = sample_rate, frame
        self.filter_samples = max(frame, filter_ms * sample_rate // 1000)
        self._lib = _library()
        self._state: int | None = None
        self.reset()

    def reset(self) -> None:
        """Forget the echo path and buffered audio, for a new stream (a new filter: the library's own
        reset leaves some of its adaptation state behind)."""
        self.close()
        self._state = self._lib.speex_echo_state_init(self.frame, self.filter_samples)
        rate = ctypes.c_int(self.sample_rate)
        self._lib.speex_echo_ctl(self._state, SET_SAMPLING_RATE, ctypes.byref(rate))
        self._pending = np.zeros((2, 0), np.int16)  # microphone, reference: less than a frame
        self._ready = np.zeros(0, np.float32)
        self._started = False
        self.lag = 0  # samples the output lags the microphone by (fixed by the first chunk's length)

    def process(self, mic: Samples, reference: Samples) -> Samples:
        """``mic`` without the linear echo of ``reference``: as many samples as given."""
        if mic.ndim != 1 or mic.shape != reference.shape:
            raise ValueError(f"mic {mic.shape} and reference {reference.shape} must be 1-D and the same length")
        if self._state is None:  # closed: a new stream (never hand the library a freed filter)
            self.reset()
        if not self._started:
            self._started = True
            if len(mic) % self.frame:
                self._ready = np.zeros(self.frame, np.float32)
                self.lag = self.frame
        both = pcm16(np.stack([mic, reference]))
        pending = np.ascontiguousarray(np.concatenate([self._pending, both], axis=1))
        whole = pending.shape[1] - pending.shape[1] % self.frame
        out = self._cancel(pending[:, :whole])
        self._pending = pending[:, whole:]
        ready = np.concatenate([self._ready, out.astype(np.float32) / INT16])
        if len(ready) < len(mic):  # whole frames first, then not: from here on a little later
            ready = np.concatenate([np.zeros(len(mic) - len(ready), np.float32), ready])
        result, self._ready = ready[:len(mic)], ready[len(mic):]
        return result

    def response(self) -> np.ndarray:
        """The echo path the filter has learnt: its gain per sample of delay (``filter_samples`` long)."""
        if self._state is None:
            self.reset()
        size = ctypes.c_int(0)
        self._lib.speex_echo_ctl(self._state, GET_IMPULSE_RESPONSE_SIZE, ctypes.byref(size))
        taps = np.zeros(size.value, np.int32)
        self._lib.speex_echo_ctl(self._state, GET_IMPULSE_RESPONSE, taps.ctypes.data)
        return (taps * RESPONSE_SCALE).astype(np.float32)

    def rehearse(self, played: Samples, response: Samples) -> None:
        """Teach a new filter an echo path met before: ``played`` as the reference, and as the
        microphone ``played`` through ``response``, in whole frames. Before the stream only (the
        stream's own framing and lag are untouched)."""
        if self._started:
            raise RuntimeError("linear echo: rehearse before the stream starts, not during it")
        if self._state is None:
            self.reset()
        heard = np.convolve(played, response)[:len(played)]
        whole = len(played) - len(played) % self.frame
        self._cancel(pcm16(np.stack([heard[:whole], played[:whole]])))

    def _cancel(self, both: np.ndarray) -> np.ndarray:
        """Whole frames of int16 microphone (row 0) and reference (row 1) through the filter."""
        near, far = np.ascontiguousarray(both[0]), np.ascontiguousarray(both[1])
        out = np.empty(len(near), np.int16)
        for start in range(0, len(near), self.frame):
            self._lib.speex_echo_cancellation(self._state, near[start:].ctypes.data, far[start:].ctypes.data,
                                              out[start:].ctypes.data)
        return out

    def close(self) -> None:
        """Free the library's filter (not left to ``__del__``: a finalizer that calls into C while the
        interpreter compiles, as a garbage collection may, upsets CPython 3.11)."""
        if self._state:
            self._lib.speex_echo_state_destroy(self._state)
            self._state = None
