"""Speech onset from VAD windows, counted in samples: used to wake (always mode), to start an
utterance, and to decide a barge-in."""

from __future__ import annotations

from collections.abc import Iterable

from states.state import VadWindow


class OnsetDetector:
    """Fires once a run of windows with speech probability >= ``threshold`` reaches ``min_speech_samples``.

    With a lower ``hold``, a run that has started goes on while the probability stays >= ``hold``
    (silero's own hysteresis): the first syllables of someone talking over the reply dip under the
    echo canceller, and a strict threshold would restart the count at every dip. A run also survives
    a dip under ``hold`` of at most ``max_gap_samples`` (silero ends speech only after a pause, too):
    those windows do not count towards it, and the run keeps the onset where it began.

    With ``sure``, a run also fires once ``sure_samples`` of windows in a row (counted ones) reach
    that probability: speech that plain needs less time to be believed than speech the echo canceller
    leaves doubtful.

    With ``talk``, a window the linear canceller marks as double talk (``VadWindow.talk``) counts as
    reaching ``threshold`` once its probability reaches ``talk``: the user talking over the reply
    comes out of AEC3 too muffled for silero to be sure of them. There the probability is the likelier
    of AEC3's and the linear canceller's output (``VadWindow.linear``): a user quieter than the echo
    comes out of AEC3 as nothing at all.

    Windows ending at or before ``ignore_until`` (an echo window) never count towards the run, but
    a run that began inside it keeps its true onset, so the captured speech starts where it began.
    ``muted_runs`` counts the runs of speech the echo window muted (at least one window ignored).
    """

    def __init__(self, min_speech_samples: int, window_samples: int, threshold: float = 0.5,
                 ignore_until: int = 0, hold: float | None = None, max_gap_samples: int = 0,
                 sure: float = 1.0, sure_samples: int = 0, talk: float | None = None) -> None:
        self.min_speech = max(min_speech_samples, 1)
        self.window = window_samples
        self.threshold = threshold
        self.hold = threshold if hold is None else min(hold, threshold)
        self.ignore_until = ignore_until
        self.max_gap = max_gap_samples
        self.sure = sure
        self.sure_samples = sure_samples if sure_samples > 0 else None  # None: no early decision
        self.talk = talk
        self.muted_runs = 0
        self._onset: int | None = None
        self._counted = 0
        self._ignored = 0
        self._gap = 0
        self._sure = 0  # counted samples in a row at or above ``sure``
        self._skipping = False

    def skip_run(self) -> None:
        """The run just reported was refused (noise): ignore the rest of it, until a pause."""
        self._skipping = True

    def prime(self, onset: int) -> None:
        """Speech is already going on since ``onset``: if it goes on long enough, that is the onset."""
        self._restart(onset)

    def _restart(self, onset: int | None) -> None:
        """A new run from ``onset`` (None: no run), nothing of it counted yet."""
        self._onset, self._counted, self._ignored, self._gap, self._sure = onset, 0, 0, 0, 0

    def _prob(self, w: VadWindow) -> float:
        """The window's probability, lifted to ``threshold`` where double talk vouches for it; there the
        second VAD's, on the linear canceller's output, counts too, if it is the likelier."""
        if self.talk is None or not w.talk:
            return w.prob
        prob = max(w.prob, w.linear)
        return max(prob, self.threshold) if prob >= self.talk else prob

    def feed(self, windows: Iterable[VadWindow]) -> int | None:
        """The absolute sample where the speech began, on the window that completes the run."""
        for w in windows:
            prob = self._prob(w)
            if prob < (self.hold if self._onset is not None else self.threshold):
                if self._onset is not None and self._gap + self.window <= self.max_gap:
                    self._gap += self.window  # a dip inside the run
                    continue
                self._restart(None)
                self._skipping = False
                continue
            self._gap = 0
            if self._skipping:
                continue
            if self._onset is None:
                self._onset = w.end - self.window
            if w.end > self.ignore_until:
                self._counted += self.window
                self._sure = self._sure + self.window if prob >= self.sure else 0
            else:
                if not self._ignored:
                    self.muted_runs += 1
                self._ignored += self.window
            if self._counted >= self.min_speech or (self.sure_samples and self._sure >= self.sure_samples):
                onset = self._onset
                self._restart(None)
                return onset
        return None
