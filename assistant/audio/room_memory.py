"""The room, remembered: the linear canceller's echo path kept from one session to the next.

The linear canceller (``linear_echo.py``) learns the room from the reply's own echo, and takes the
first 1.8–2.1 s of a session's first reply to do it (``benchmarks/echo.py``). Until then the
double-talk test (``double_talk.py``) says nothing, and a request spoken over that first reply waits
for a louder word. A speaker and a microphone that stay where they are keep their echo path, so it is
kept: after a reply over which the canceller was seen to have learnt the room (``DoubleTalk.learnt``),
its filter (the echo's gain per sample of delay) and the last ``REHEARSAL_S`` of what the speaker
played are written to ``FILE`` in the data folder. The next session's canceller rehearses them before
its stream starts: what was played as the reference, and the same through that path as the
microphone (Speex has no setter for its filter).

Measured offline on real speech (``tests/test_room_memory.py``: gain 0.5 at 40 ms and 0.15 at 55 ms):
over the first 0.5 s of a reply the rehearsed filter leaves the echo 15.7 dB under the microphone,
against 4.3 dB for a new one, and the double-talk test finds it learnt 0.35 s into the reply instead
of 2.3 s. Rehearsing 1 s instead of 4 gave 12 dB instead of 17 (a pure 40 ms delay).

Nothing of the microphone is kept: the file holds the assistant's own voice and the echo path. A room
that changed (the speaker moved, the volume turned) is learnt again as without the memory: the
double-talk test takes its evidence from the echo itself, never from the file.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

import numpy as np
import structlog

from assistant.audio.double_talk import PLAYED_DB, db, power
from assistant.audio.linear_echo import INT16, LinearEchoCanceller, pcm16
from assistant.audio.protocols import Samples

log = structlog.get_logger("echo")

FILE = "room-echo.npz"
REHEARSAL_S = 4.0


class RoomMemory:
    """The echo path of the room, in ``path``: recalled into ``canceller`` before its stream starts,
    kept from it after a reply."""

    def __init__(self, path: Path, canceller: LinearEchoCanceller) -> None:
        self.path, self.canceller, self.sample_rate = path, canceller, canceller.sample_rate
        self._played: deque[Samples] = deque()  # the audible chunks the speaker played, the last REHEARSAL_S
        self._held = 0
        self.recalled = False  # did this session's canceller start from the kept path?

    def recall(self) -> bool:
        """Rehearse the kept path into the canceller (its stream not started); False without one."""
        try:
            with np.load(self.path) as kept:
                rate, played, response = int(kept["sample_rate"]), kept["played"], kept["response"]
        except FileNotFoundError:
            return False
        except (OSError, ValueError, KeyError) as exc:
            log.warning("room memory unreadable: the room is learnt afresh", path=str(self.path), error=str(exc))
            return False
        if rate != self.sample_rate or len(response) != self.canceller.filter_samples:
            log.info("room memory is of another set-up: the room is learnt afresh", path=str(self.path))
            return False
        self.canceller.rehearse(played.astype(np.float32) / INT16, response.astype(np.float32))
        self.recalled = True
        log.info("room memory recalled", path=str(self.path), played_s=round(len(played) / rate, 2))
        return True

    def hear(self, played: Samples) -> None:
        """The next chunk the speaker played: the audible ones are held for ``keep``."""
        if not len(played) or db(power(played)) < PLAYED_DB:
            return
        self._played.append(played.copy())
        self._held += len(played)
        while self._held - len(self._played[0]) >= REHEARSAL_S * self.sample_rate:
            self._held -= len(self._played.popleft())

    def keep(self) -> None:
        """Write the canceller's path and what was played to ``path`` (whole or not at all)."""
        if not self._played:
            return
        played = np.concatenate(self._played)[-int(REHEARSAL_S * self.sample_rate):]
        spare = self.path.with_name(self.path.name + ".new")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with spare.open("wb") as f:
                np.savez(f, sample_rate=self.sample_rate, response=self.canceller.response(),
                         played=pcm16(played))
            os.replace(spare, self.path)
        except OSError as exc:
            log.warning("room memory not kept", path=str(self.path), error=str(exc))
