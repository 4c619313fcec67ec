"""Where an utterance starts and ends, from VAD probabilities; every duration is in samples.

The endpoint silence adapts to how long the speaker has talked: a short command ("停", "几点了")
is answered after a short pause, a long request gets more room to breathe before it is cut.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from assistant.config import Config
from states.onset import OnsetDetector
from states.state import VadWindow


@dataclass(frozen=True)
class Utterance:
    """Where a request began and ended (absolute samples) and why it ended."""

    start: int
    end: int
    trailing_silence: int
    reason: str


@dataclass(frozen=True)
class EndpointPolicy:
    """The silence that ends an utterance, by how much speech came before it (all in samples)."""

    silence: int
    short_speech: int = 0
    short_silence: int = 0
    long_speech: int = 0
    long_silence: int = 0

    @classmethod
    def from_config(cls, cfg: Config) -> EndpointPolicy:
        v, ms = cfg.vad, cfg.audio.sample_rate // 1000
        return cls(v.endpoint_silence_ms * ms, v.short_utterance_ms * ms, v.short_endpoint_silence_ms * ms,
                   v.long_utterance_ms * ms, v.long_endpoint_silence_ms * ms)

    def silence_after(self, speech: int) -> int:
        if speech < self.short_speech:
            return self.short_silence
        if self.long_speech and speech > self.long_speech:
            return self.long_silence
        return self.silence


class Endpointer:
    """Utterance boundaries from VAD windows.

    ``silence`` is the silence after the last speech so far, ``speech_end`` where that speech ended:
    listening uses them to start the ASR speculatively before the endpoint is certain.
    """

    def __init__(self, *, window: int, min_speech: int, policy: EndpointPolicy, max_utterance: int,
                 threshold: float = 0.5, onset: int | None = None) -> None:
        self.window = window
        self.policy = policy
        self.max_utterance = max_utterance
        self.threshold = threshold
        self.onset = onset
        self.detector = OnsetDetector(min_speech, window, threshold)
        self.silence = 0
        self.speech_end = onset or 0
        # Quiet in windows ending by this sample does not count as silence: just after a barge-in the
        # echo canceller still suppresses the reply's tail, and the user talking under it reads as quiet.
        self.untrusted_until = 0

    @classmethod
    def from_config(cls, cfg: Config, window: int, onset: int | None = None, *, turn_model: bool = False) -> Endpointer:
        """With ``turn_model`` the turn model ends the turn; silence ends it only after vad.turn_max_silence_ms."""
        rate = cfg.audio.sample_rate
        policy = (EndpointPolicy(cfg.vad.turn_max_silence_ms * rate // 1000) if turn_model
                  else EndpointPolicy.from_config(cfg))
        return cls(window=window, min_speech=cfg.vad.min_speech_ms * rate // 1000,
                   policy=policy, max_utterance=int(cfg.listening.max_utterance_s * rate),
                   threshold=cfg.vad.threshold, onset=onset)

    def end_now(self, reason: str, now: int) -> Utterance:
        """The utterance as it stands at sample ``now`` (the turn model heard its end)."""
        if self.onset is None:
            raise ValueError("end_now: no utterance has started")
        return Utterance(self.onset, now, now - self.speech_end, reason)

    def feed(self, windows: Iterable[VadWindow]) -> tuple[int | None, Utterance | None]:
        """(onset if speech started in these windows, the utterance if it ended in them)."""
        started = None
        for w in windows:
            if self.onset is None:
                self.onset = started = self.detector.feed([w])
                if self.onset is not None:
                    self.speech_end = w.end
                continue
            if w.prob >= self.threshold:
                self.silence, self.speech_end = 0, w.end
            elif w.end > self.untrusted_until:
                self.silence += self.window
            if self.silence >= self.policy.silence_after(self.speech_end - self.onset):
                return started, Utterance(self.onset, w.end, self.silence, "silence")
            if w.end - self.onset >= self.max_utterance:
                return started, Utterance(self.onset, w.end, self.silence, "max_utterance")
        return started, None
