"""How different two renderings of the same speech sound (the metric lives in ``assistant/audio/metrics.py``,
where the NPU build's report uses it too)."""

from __future__ import annotations

from assistant.audio.metrics import log_mel, log_mel_distance

__all__ = ["log_mel", "log_mel_distance"]
