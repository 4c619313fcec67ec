"""How likely a sentence is as Mandarin, by the LLM's own GGUF: the language model that rescores
Whisper's n-best hypotheses.

Whisper base's decoder knows little Chinese: near-misses it writes with confidence (公子是哪个国家的人,
北京是哪个国家的首度, 一米等于多少里米) are among its five best hypotheses beside the right ones,
and Qwen can tell them apart. ``logprobs(texts)`` gives each text's summed log-probability after a
fixed lead-in (以下是一句普通话：).

All the texts of a call are weighed in one llama.cpp forward pass, as a tree: the lead-in, then every
distinct token prefix of the texts once, each token tagged with the sequences (one per text) that
pass through it, so a token attends to exactly the tokens of its own texts (llama.cpp's attention mask
by sequence). The beam's readings share most of their tokens; one pass reads the weights once, where
one pass per reading read them once each (benchmarks/asr_time.py). Logits are kept only where a
next token is scored (not at a reading's last token). The lead-in is evaluated once, at load, as a
part of every sequence: its keys and values stay in the cache, beside the scores of a text's first
token after it, and each pass drops only what follows it (a pass costs about 7 ms a token on a
2-core Xeon, and the lead-in is 9 tokens).

It is its own llama.cpp context (llama-cpp-python's low-level API: several sequences in one KV cache),
beside the reply model, whose context, cached system prompt and sampling state stay untouched. The
weights are memory-mapped from the same file, so the page cache holds them once. It is called from the
ASR's worker thread only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from models.files import verified
from models.protocols import ModelError

LEAD_IN = "以下是一句普通话："
CONTEXT = 96  # tokens in one pass: the lead-in and a tree of readings; its logits take up to 58 MB
MAX_TOKENS = CONTEXT - 16  # the longest text weighed (the rescoring weighs up to 60 characters)
SEQUENCES = 16  # texts weighed in one pass at most


class LlamaScorer:
    """Sentence log-probabilities under a GGUF model (llama.cpp, CPU)."""

    def __init__(self, model_path: Path, *, expected_sha256: str, threads: int = 2) -> None:
        self.model_path = model_path
        self.threads = threads
        self.expected_sha256 = expected_sha256
        self._model: Any = None  # llama.cpp's model, context, vocabulary and batch (ctypes handles)
        self._ctx: Any = None
        self._vocab: Any = None
        self._batch: Any = None
        self._n_vocab = 0
        self._lead: list[int] = []
        self._after_lead: tuple[np.ndarray, float] | None = None  # the scores of a text's first token

    def load(self) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelError(f"scorer: llama-cpp-python is not installed ({exc})") from None
        path = verified(self.model_path, self.expected_sha256, "scorer")  # a truncated GGUF can end the process
        self.close()  # loaded again: the last model goes first
        llama_cpp.llama_backend_init()
        with _quiet():
            self._model = llama_cpp.llama_model_load_from_file(str(path).encode(),
                                                               llama_cpp.llama_model_default_params())
        if not self._model:
            raise ModelError(f"scorer: llama.cpp could not load {path}")
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = CONTEXT
        params.n_seq_max, params.kv_unified, params.no_perf = SEQUENCES, True, True
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as llama-cpp-python's Llama runs it
        params.n_threads = params.n_threads_batch = self.threads
        with _quiet():
            self._ctx = llama_cpp.llama_init_from_model(self._model, params)
        if not self._ctx:
            self.close()
            raise ModelError(f"scorer: llama.cpp could not make a context for {path}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self._batch = llama_cpp.llama_batch_init(CONTEXT, 0, SEQUENCES)
        self._lead = self._tokens(LEAD_IN)
        self._after_lead = self._lead_in()

    def close(self) -> None:
        if self._model is None:
            return
        import llama_cpp

        with _quiet():
            if self._batch is not None:
                llama_cpp.llama_batch_free(self._batch)
            if self._ctx:
                llama_cpp.llama_free(self._ctx)
            if self._model:
                llama_cpp.llama_model_free(self._model)
        self._model = self._ctx = self._vocab = self._batch = None
        self._after_lead = None

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        """Each text's summed log-probability (natural log) after the lead-in; -inf for one too long
        (or empty). Texts are weighed in groups of those that share the most tokens, one pass a group."""
        if self._ctx is None:
            raise ModelError("scorer: used before load()")
        tokens = [self._tokens(text) for text in texts]
        out = [-math.inf] * len(texts)
        weighed = sorted((i for i, t in enumerate(tokens) if t and len(self._lead) + len(t) <= MAX_TOKENS),
                         key=lambda i: tokens[i])
        for group in _groups([tokens[i] for i in weighed], CONTEXT - len(self._lead), SEQUENCES):
            sums = self._pass([tokens[weighed[k]] for k in group])
            for k, value in zip(group, sums, strict=True):
                out[weighed[k]] = value
        return out

    def _tokens(self, text: str) -> list[int]:
        import llama_cpp

        data = text.encode()
        buffer = (llama_cpp.llama_token * (len(data) + 8))()
        n = llama_cpp.llama_tokenize(self._vocab, data, len(data), buffer, len(buffer), False, False)
        return list(buffer[:n]) if n >= 0 else [0] * MAX_TOKENS  # never more tokens than bytes: too long anyway

    def _lead_in(self) -> tuple[np.ndarray, float]:
        """The lead-in evaluated into the cache, once, as a part of every sequence; the scores (and
        their log-sum-exp) of the token after it."""
        import llama_cpp

        everyone, last = list(range(SEQUENCES)), len(self._lead) - 1
        self._fill([(token, position, everyone, position == last) for position, token in enumerate(self._lead)])
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._ctx), True)
        if llama_cpp.llama_decode(self._ctx, self._batch) != 0:
            self.close()
            raise ModelError("scorer: llama.cpp could not evaluate the lead-in")
        return self._scores(last)

    def _pass(self, texts: list[list[int]]) -> list[float]:
        """The summed log-probabilities of ``texts`` (at most SEQUENCES, sharing at most CONTEXT tokens
        with the lead-in), from one forward pass over the tree of their prefixes after the cached lead-in."""
        import llama_cpp

        tree = _tree(texts)
        lead = len(self._lead)
        if len(texts) > SEQUENCES or lead + len(tree) > CONTEXT:  # the batch's buffers hold no more
            raise ModelError(f"scorer: {len(texts)} texts of {len(tree)} tokens do not fit one pass")
        assert self._after_lead is not None
        self._fill([(prefix[-1], lead + len(prefix) - 1, owners, scored) for prefix, (owners, scored) in tree.items()])
        # the last pass's tokens go; the lead-in's stay
        if not llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self._ctx), -1, lead, -1):
            raise ModelError("scorer: llama.cpp could not drop the last readings from its cache")
        if llama_cpp.llama_decode(self._ctx, self._batch) != 0:
            raise ModelError("scorer: llama.cpp could not evaluate the readings")
        at = {prefix: k for k, prefix in enumerate(tree)}  # each prefix's row in the batch
        rows_read: dict[int, tuple[np.ndarray, float]] = {-1: self._after_lead}  # -1: the lead-in's last token

        def logprob(row: int, token: int) -> float:
            if row not in rows_read:
                rows_read[row] = self._scores(row)
            scores, norm = rows_read[row]
            return float(scores[token]) - norm

        sums = []
        for text in texts:
            rows_before = [-1] + [at[tuple(text[:k])] for k in range(1, len(text))]
            sums.append(sum(logprob(r, t) for r, t in zip(rows_before, text, strict=True)))
        return sums

    def _fill(self, rows: list[tuple[int, int, list[int], bool]]) -> None:
        """The batch holds ``rows``: (token, position, its sequences, whether its logits are kept)."""
        batch = self._batch
        for i, (token, position, owners, scored) in enumerate(rows):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, position, len(owners), scored
            for j, owner in enumerate(owners):
                batch.seq_id[i][j] = owner
        batch.n_tokens = len(rows)

    def _scores(self, row: int) -> tuple[np.ndarray, float]:
        """The logits at ``row`` of the last batch decoded (a copy), and their log-sum-exp."""
        import llama_cpp

        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._ctx, row), shape=(self._n_vocab,)).copy()
        top = float(logits.max())
        return logits, top + math.log(float(np.exp(logits - top).sum(dtype=np.float64)))


@contextmanager
def _quiet() -> Iterator[None]:
    """llama.cpp's log silenced (llama-cpp-python's logger, which rates llama.cpp's warnings as errors)."""
    chatter = logging.getLogger("llama-cpp-python")
    level = chatter.level
    chatter.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        chatter.setLevel(level)


def _tree(texts: list[list[int]]) -> dict[tuple[int, ...], tuple[list[int], bool]]:
    """Every distinct prefix of the texts, parents first: (the texts it belongs to, whether a next
    token is scored from it)."""
    owners: dict[tuple[int, ...], list[int]] = {}
    scored: set[tuple[int, ...]] = set()
    for n, text in enumerate(texts):
        for k in range(1, len(text) + 1):
            owners.setdefault(tuple(text[:k]), []).append(n)
            if k < len(text):
                scored.add(tuple(text[:k]))
    return {prefix: (texts_of, prefix in scored) for prefix, texts_of in owners.items()}


def _groups(texts: list[list[int]], room: int, most: int) -> list[list[int]]:
    """Consecutive texts (sorted, so neighbours share prefixes) grouped so that each group's tree has at
    most ``room`` tokens and ``most`` texts."""
    groups: list[list[int]] = []
    size = 0
    for i, text in enumerate(texts):
        shared = _common_prefix(texts[i - 1], text) if groups else 0
        if not groups or len(groups[-1]) >= most or size + len(text) - shared > room:
            groups.append([])
            size, shared = 0, 0
        groups[-1].append(i)
        size += len(text) - shared
    return groups


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
