"""Speech onset from VAD windows, counted in samples: used to wake (always mode), to start an
utterance, and to decide a barge-in."""

from __future__ import annotations

from collections.abc import Iterable

from states.state import VadWindow


class OnsetDetector:
    """Fires once a run of speech windows reaches ``min_speech_samples``.

    Windows ending at or before ``ignore_until`` (an echo window) never count towards the run, but
    a run that began inside it keeps its true onset, so the captured speech starts where it began.
    """

    def __init__(self, min_speech_samples: int, window_samples: int, ignore_until: int = 0) -> None:
        self.min_speech = min_speech_samples
        self.window = window_samples
        self.ignore_until = ignore_until
        self._onset: int | None = None
        self._counted = 0

    def feed(self, windows: Iterable[VadWindow]) -> int | None:
        """The absolute sample where the speech began, on the window that completes the run."""
        for w in windows:
            if not w.speech:
                self._onset, self._counted = None, 0
                continue
            if self._onset is None:
                self._onset = w.end - self.window
            if w.end > self.ignore_until:
                self._counted += self.window
            if self._counted >= max(self.min_speech, 1):
                onset, self._onset, self._counted = self._onset, None, 0
                return onset
        return None
