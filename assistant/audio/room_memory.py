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

Measured offline on a real recording as the reply (gain 0.5, 40 ms; ``tests/test_room_memory.py``
keeps the case): over the first 0.5 s of the reply the rehearsed filter leaves the echo 17 dB under
the microphone, against 4.5 dB for a new one; 1 s of rehearsal gives 12 dB, 4 s the 17.

Nothing of the microphone is kept: the file holds the assistant's own voice and the echo path. A room
that changed (the speaker moved, the volume turned) is learnt again as without the memory: the
double-talk test takes its evidence from the echo itself, never from the file.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import structlog

from assistant.audio.double_talk import PLAYED_DB, db, power
from assistant.audio.protocols import Samples

if TYPE_CHECKING:
    from assistant.audio.linear_echo import LinearEchoCanceller

log = structlog.get_logger("echo")

FILE = "room-echo.npz"
REHEARSAL_S = 4.0


class RoomMemory:
    """The echo path of the room, in ``path``: recalled into a new canceller, kept after a reply."""

    def __init__(self, path: Path, sample_rate: int) -> None:
        self.path, self.sample_rate = path, sample_rate
        self._played: deque[Samples] = deque()  # the audible chunks the speaker played, the last REHEARSAL_S
        self._held = 0
        self.recalled = False  # did this session's canceller start from the kept path?

    def recall(self, canceller: LinearEchoCanceller) -> bool:
        """Rehearse the kept path into a canceller whose stream has not started; False without one."""
        try:
            with np.load(self.path) as kept:
                rate, played, response = int(kept["sample_rate"]), kept["played"], kept["response"]
        except FileNotFoundError:
            return False
        except (OSError, ValueError, KeyError) as exc:
            log.warning("room memory unreadable: the room is learnt afresh", path=str(self.path), error=str(exc))
            return False
        if rate != self.sample_rate or len(response) != canceller.filter_samples:
            log.info("room memory is of another set-up: the room is learnt afresh", path=str(self.path))
            return False
        canceller.rehearse(played.astype(np.float32) / 32767.0, response.astype(np.float32))
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

    def keep(self, canceller: LinearEchoCanceller) -> None:
        """Write the canceller's path and what was played to ``path`` (whole or not at all)."""
        if not self._played:
            return
        played = np.concatenate(self._played)[-int(REHEARSAL_S * self.sample_rate):]
        spare = self.path.with_name(self.path.name + ".new")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with spare.open("wb") as f:
                np.savez(f, sample_rate=self.sample_rate, response=canceller.response(),
                         played=np.clip(played * 32767.0, -32768, 32767).astype(np.int16))
            os.replace(spare, self.path)
        except OSError as exc:
            log.warning("room memory not kept", path=str(self.path), error=str(exc))
