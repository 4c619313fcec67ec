"""Double talk: is the user talking over the reply? Asked of the linear canceller.

AEC3's suppressor attenuates the user along with the echo: someone who talks over the reply about
as loud as its echo reads 0.05–0.5 on silero after AEC3, for a few hundred ms, and a barge-in waits
for a louder word. The linear canceller (Speex MDF, ``linear_echo.py``) only subtracts its estimate
of the echo. Once it has learnt the room, what it leaves of the echo alone is 10–25 dB under the
microphone, while a window with the user in it comes out nearly as loud as it went in (measured on
``benchmarks/echo.py``'s sessions: 0 to −2 dB for most of the user's windows).

So a window is double talk when all of these hold:

- the reply is audible: what was played over the last ``ECHO_PATH_S`` reaches ``PLAYED_DB``;
- the canceller has learnt the room: over the loud ones of the last ``LEARNT_S`` of such windows
  (not double talk, and at most ``LOUD_DB`` under the microphone's mean power there, the echo's
  usual level) its output was, at the median, ``LEARNT_DB`` or more under the microphone (never
  true before it has converged, nor in a room whose echo it cannot model: there the test stays
  silent and the barge-in works as without it; a median, so the user's own windows do not unlearn it);
- in this window its output is within ``NEAR_DB`` of the microphone,
- and it is loud: a word of the reply just starting, whose echo has not arrived yet, is no user.

It is a hint, not a decision: the barge-in still needs silero to hear speech in AEC3's output, only
less sure of it (``barge_in.double_talk_threshold``).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from assistant.audio.protocols import Samples

PLAYED_DB = -50.0
ECHO_PATH_S = 0.128  # the linear canceller's filter length: the longest echo delay it models
LEARNT_S = 1.5
LEARNT_DB = 10.0
LEARNT_LEAST = 10  # windows with the reply audible before the medians mean anything
NEAR_DB = -3.0
LOUD_DB = 10.0
SILENCE_DB = -120.0


def power(samples: Samples) -> float:
    """Mean power (full scale 1)."""
    return float(np.mean(np.square(samples, dtype=np.float64))) if len(samples) else 0.0


def db(p: float) -> float:
    """A power in dB, at least ``SILENCE_DB``."""
    return max(SILENCE_DB, 10.0 * float(np.log10(p))) if p > 0 else SILENCE_DB


class DoubleTalk:
    """Feed the microphone, the linear canceller's output and what was played, chunk by chunk; each
    ``window`` samples from the first one fed is judged once, and ``at(end)`` says whether the window
    ending at sample ``end`` held more than the echo. One instance per stream."""

    def __init__(self, sample_rate: int, window: int) -> None:
        per_s = sample_rate / max(1, window)
        self.window = window
        self._played: deque[float] = deque(maxlen=max(1, round(ECHO_PATH_S * per_s)))
        learnt = max(LEARNT_LEAST, round(LEARNT_S * per_s))
        self._mics: deque[float] = deque(maxlen=learnt)  # microphone power, windows with the reply audible
        self._ratios: deque[float] = deque(maxlen=learnt)  # ... and the output under the microphone, dB
        self._pending = np.zeros((3, 0), np.float32)  # microphone, output, played: less than a window
        self._lagged = np.zeros((2, 0), np.float32)  # microphone and played not yet matched by output
        self._fed = 0  # samples judged so far
        self._judged: deque[tuple[int, bool]] = deque(maxlen=64)  # (window end, double talk)
        self.marked = 0  # windows judged double talk so far
        self.was_learnt = False  # has the canceller learnt the room at some point?

    @property
    def loud_db(self) -> float:
        """The level a window's microphone must reach to count as loud: ``LOUD_DB`` under the echo's usual one."""
        return db(sum(self._mics) / max(1, len(self._mics))) - LOUD_DB

    @property
    def learnt(self) -> bool:
        """Has the canceller learnt the room (its output well under the microphone while the reply plays)?"""
        loud = self.loud_db
        ratios = [r for m, r in zip(self._mics, self._ratios, strict=True) if db(m) >= loud]
        return len(ratios) >= LEARNT_LEAST and float(np.median(ratios)) <= -LEARNT_DB

    def feed(self, mic: Samples, linear: Samples, played: Samples, lag: int = 0) -> None:
        """The next chunk of microphone, of the canceller's output and of what was played (the same
        length), the output ``lag`` samples behind the other two, which are held back as long."""
        if lag != self._lagged.shape[1]:
            self._lagged = np.zeros((2, lag), np.float32)
        both = np.concatenate([self._lagged, np.stack([mic, played]).astype(np.float32)], axis=1)
        n = len(linear)
        both, self._lagged = both[:, :n], both[:, n:]
        pending = np.concatenate([self._pending, np.stack([both[0], linear, both[1]]).astype(np.float32)], axis=1)
        whole = pending.shape[1] - pending.shape[1] % self.window
        for start in range(0, whole, self.window):
            self._fed += self.window
            self._judged.append((self._fed, self._judge(*pending[:, start:start + self.window])))
        self._pending = pending[:, whole:]

    def at(self, end: int) -> bool:
        """Was the window ending at sample ``end`` double talk? (False if it is not judged yet, or long gone.)"""
        return any(talk for e, talk in self._judged if e == end)

    def _judge(self, mic: Samples, linear: Samples, played: Samples) -> bool:
        self._played.append(db(power(played)))
        if max(self._played) < PLAYED_DB:
            return False  # nothing to cancel: the reply is silent (or over)
        heard = power(mic)
        ratio = db(power(linear)) - db(heard)
        learnt = self.learnt
        self.was_learnt = self.was_learnt or learnt
        talk = bool(ratio >= NEAR_DB and db(heard) >= self.loud_db and learnt)
        self.marked += int(talk)
        if not talk:  # after the test, and only echo: the user's windows never vouch for the canceller
            self._mics.append(heard)
            self._ratios.append(ratio)
        return talk
