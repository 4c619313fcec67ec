"""The second ear of a barge-in: a VAD on the linear echo canceller's output, while a reply plays.

AEC3's suppressor takes a user quieter than the reply's echo away with it; the linear canceller only
subtracts its estimate of the echo. In a window that canceller marks as double talk, the onset
detector counts the likelier of the two VADs' probabilities (``barge_in.double_talk_vad``).

That mark needs something played (``assistant/audio/double_talk.py``), so the second VAD is only
heard near a reply: from its first audio to ``echo.transcript_window_s`` after its end. Elsewhere
it is not fed at all (it used to hear every chunk, idle included: one VAD window every 32 ms, as
much as the first VAD). When it is armed again it is reset and warmed on the last ``WARM_S`` the
canceller heard, from a window boundary, so its windows end where the first VAD's do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assistant.audio.history import AudioHistory
    from models.protocols import Vad
    from states.echo_defence import EchoDefence

# Silero's state keeps a long memory: no warm-up makes a reset VAD read the same as one fed all
# along. After a second of it, the two differ by about 0.04 a window on average over the benchmark's
# replies (0.2 in the first windows without one).
WARM_S = 1.0


class TalkEar:
    """Feeds ``vad`` with the linear canceller's output near playback; the probabilities per window."""

    def __init__(self, vad: Vad | None, echo: EchoDefence, sample_rate: int, window: int) -> None:
        self.vad = vad
        self.echo = echo
        self.window = window
        self.warm = int(WARM_S * sample_rate) // window * window
        self.armed = False

    async def hear(self) -> list[float]:
        """The probabilities of the windows completed by the chunk just cleaned; none away from
        playback, without a second VAD or without a linear canceller."""
        heard, history = self.echo.linear_out, self.echo.linear_history
        if self.vad is None or heard is None or history is None:
            return []
        now = history.end  # the chunk just cleaned ends here
        if not self.echo.near_playback(now):
            self.armed = False
            return []
        if not self.armed:
            self.armed = True
            await self._warm(self.vad, history, now - len(heard))
        return await self.vad.accept(heard)

    async def _warm(self, vad: Vad, history: AudioHistory, start: int) -> None:
        """Reset ``vad``, and have it hear what the canceller put out before ``start``, from a window
        boundary (the history holds more than ``WARM_S``: it is the length of a request)."""
        vad.reset()
        await vad.accept(history.slice(max(0, start - start % self.window - self.warm), start))
