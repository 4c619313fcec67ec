"""How likely a sentence is as Mandarin, by the LLM's own GGUF: the language model that rescores
Whisper's n-best hypotheses.

Whisper base's decoder knows little Chinese: near-misses it writes with confidence (公子是哪个国家的人,
北京是哪个国家的首度, 一米等于多少里米) are among its five best hypotheses beside the right ones,
and Qwen can tell them apart. ``logprobs(texts)`` gives each text's summed log-probability after a
fixed lead-in (以下是一句普通话：), one llama.cpp forward pass over the tokens it has not seen: the
lead-in is evaluated once at load, and the hypotheses are evaluated in token order, each reusing the
tokens it shares with the one before it (the KV cache is cut back to the common prefix), so
hypotheses that differ only near their end cost little more than one.

It is its own llama.cpp context with every position's logits kept (``logits_all``), beside the reply
model: the reply model's context, its cached system prompt and its sampling state stay untouched.
The weights are memory-mapped from the same file, so the page cache holds them once. It is called
from the ASR's worker thread only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from models.files import verified
from models.protocols import ModelError

if TYPE_CHECKING:
    from llama_cpp import Llama

LEAD_IN = "以下是一句普通话："
CONTEXT = 96  # tokens: the lead-in and the longest hypothesis rescored (60 characters); its logits take 58 MB
MAX_TOKENS = CONTEXT - 16


class LlamaScorer:
    """Sentence log-probabilities under a GGUF model (llama-cpp-python, CPU)."""

    def __init__(self, model_path: Path, *, expected_sha256: str, threads: int = 2) -> None:
        self.model_path = model_path
        self.threads = threads
        self.expected_sha256 = expected_sha256
        self._model: Llama | None = None
        self._lead: list[int] = []

    def load(self) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelError(f"scorer: llama-cpp-python is not installed ({exc})") from None
        path = verified(self.model_path, self.expected_sha256, "scorer")  # a truncated GGUF can end the process
        try:
            self._model = Llama(model_path=str(path), n_ctx=CONTEXT, n_batch=CONTEXT, n_threads=self.threads,
                                n_threads_batch=self.threads, logits_all=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"scorer: llama.cpp could not load {path}: {exc}") from None
        self._lead = self._model.tokenize(LEAD_IN.encode(), add_bos=False, special=False)
        self._model.n_tokens = 0
        self._model.eval(self._lead)

    def close(self) -> None:
        if self._model is not None:
            self._model.close()
            self._model = None

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        """Each text's summed log-probability (natural log) after the lead-in; -inf for one too long.
        The texts are evaluated in token order, so each shares the longest prefix with the one before."""
        model = self._model
        if model is None:
            raise ModelError("scorer: used before load()")
        tokens = [model.tokenize(text.encode(), add_bos=False, special=False) for text in texts]
        out = [-math.inf] * len(texts)
        for i in sorted(range(len(texts)), key=lambda i: tokens[i]):
            if not tokens[i] or len(self._lead) + len(tokens[i]) > MAX_TOKENS:
                continue
            ids = self._lead + tokens[i]
            shared = _common_prefix(list(model.input_ids[: model.n_tokens]), ids)
            model.n_tokens = max(len(self._lead), min(shared, len(ids) - 1))
            model.eval(ids[model.n_tokens:])
            out[i] = _summed(model.scores, ids, len(self._lead))
        return out


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _summed(scores: np.ndarray, ids: list[int], start: int) -> float:
    """The summed log-softmax of ``ids[start:]``, each read from the logits of the position before it."""
    rows = np.asarray(scores[start - 1: len(ids) - 1], dtype=np.float64)
    top = rows.max(axis=1, keepdims=True)
    norm = top[:, 0] + np.log(np.exp(rows - top).sum(axis=1))
    picked = rows[np.arange(len(rows)), ids[start:]]
    return float(np.sum(picked - norm))
