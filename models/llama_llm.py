"""Qwen2.5 Instruct (0.5B or 1.5B, GGUF Q4_K_M) through llama-cpp-python, streamed token by token.

The GGUF is checked against its sha256 before llama.cpp sees it (a truncated file can end the
process instead of raising). The prompt is built by the chat template stored in the GGUF itself
(Qwen's ChatML), so the 0.5B and the 1.5B run with the same code.

Greedy decoding makes the 0.5B repeat itself within a sentence or two, so the reply is sampled
(temperature, top-p) with a repeat penalty.

Streaming: ``reply()`` pulls llama-cpp-python's chunk generator one step at a time on the
backend's own worker thread. Cancelling the reply task therefore lands between tokens, and
``stop()`` sets the reply's stop flag, which the worker checks before computing each token. The
generator of an abandoned reply is closed on the worker before the next reply starts, so the
model is only ever touched from that one thread.

Confidence: ``scored()`` streams each piece with the probability the model gave its own first
choice at the piece's token (the lowest over its tokens, when one piece took several). A logits
processor that only looks reads it from the raw distribution before the repeat penalty and the
sampler; the caller decides what a low one means (the reply guard's 这个我不太确定). With
``confidence=False`` there is no processor, and every piece has 1.0.

The system prompt, its examples and the short conversation history are in ``models.chat``.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
import structlog

from models.chat import EXAMPLES, SYSTEM_PROMPT, Example, History, Message
from models.cores import CoreGate
from models.files import verified
from models.manifest import by_name
from models.protocols import ModelError, Scored, texts
from models.worker import Worker

if TYPE_CHECKING:
    from llama_cpp import Llama

log = structlog.get_logger("llm")

QWEN_05B_SHA256 = by_name("qwen2.5-coder-0.5b-instruct-q4_k_m").files[0].sha256
QWEN_15B_SHA256 = by_name("qwen2.5-coder-1.5b-instruct-q4_k_m").files[0].sha256

class LlamaLlm:
    """The ``Llm`` protocol on a local GGUF chat model run by llama-cpp-python on the CPU."""

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int = 2,
        n_ctx: int = 2048,
        system_prompt: str = SYSTEM_PROMPT,
        examples: Sequence[Example] = EXAMPLES,
        temperature: float = 0.7,
        top_p: float = 0.9,
        top_k: int = 40,
        repeat_penalty: float = 1.1,
        max_tokens: int = 160,
        history_turns: int = 2,
        seed: int | None = None,
        expected_sha256: str = QWEN_05B_SHA256,
        gate: CoreGate | None = None,
        confidence: bool = True,
    ) -> None:
        self.model_path = model_path
        self.threads = threads
        self.n_ctx = n_ctx
        self.system_prompt = system_prompt
        self.examples = tuple(examples)
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.repeat_penalty = repeat_penalty
        self.max_tokens = max_tokens
        self.seed = seed  # None: a fresh random seed per process
        self.expected_sha256 = expected_sha256
        self.gate = gate  # given, the next token waits while the first audio of a reply is made
        self.history = History(history_turns)
        self._worker = Worker("llm")
        self._model: Llama | None = None
        self._stream: Iterator[Any] | None = None  # worker thread only
        self._confidence = _Confidence() if confidence else None  # per step of the stream (worker thread only)
        self._stopped = threading.Event()  # the current reply's stop flag; a fresh one per reply
        self._system_state: Any = None  # llama.cpp state after the system prompt (worker thread only)
        self._system_tokens: list[int] = []

    def load(self) -> None:
        """Check and load the GGUF, then evaluate the system prompt once and keep its KV state.

        Every prompt begins with the same system prompt, so its evaluation (about a second for the
        0.5B on two cores) is done here once and saved (llama.cpp's state save). Before a reply
        whose prompt no longer finds it in the KV cache, the saved state is loaded back; from
        there llama-cpp-python evaluates only what follows the longest shared prefix.
        """
        path = verified(self.model_path, self.expected_sha256, "llm")
        self._model = self._worker.call(self._create, path)

    def _create(self, path: Path) -> Llama:
        try:
            from llama_cpp import LLAMA_DEFAULT_SEED, Llama
        except ImportError as exc:
            raise ModelError(f"llm: llama-cpp-python is not installed ({exc})") from None
        try:
            model = Llama(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=LLAMA_DEFAULT_SEED if self.seed is None else self.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"llm: llama.cpp could not load {path}: {exc}") from None
        if "tokenizer.chat_template" not in model.metadata:
            model.close()
            raise ModelError(f"llm: {path} has no chat template (not an instruct model?)")
        try:
            first = History(0).messages(self.system_prompt, "你好", self.examples)
            model.create_chat_completion(messages=cast(Any, first), max_tokens=1)
        except (ValueError, RuntimeError) as exc:
            model.close()
            raise ModelError(f"llm: llama.cpp could not run {path}: {exc}") from None
        self._system_state = model.save_state()
        self._system_tokens = self._prefix_tokens(model)
        return model

    def _prefix_tokens(self, model: Llama) -> list[int]:
        """The tokens every prompt starts with: the system prompt and the user turn's header."""
        a = model.tokenize(self._prompt_text(model, "甲").encode(), add_bos=False, special=True)
        b = model.tokenize(self._prompt_text(model, "乙").encode(), add_bos=False, special=True)
        return list(a[:_shared(a, b)])

    def _prompt_text(self, model: Llama, text: str) -> str:
        return self._format(model, History(0).messages(self.system_prompt, text, self.examples))

    def _format(self, model: Llama, messages: list[Message]) -> str:
        """The prompt text llama-cpp-python's chat completion makes of ``messages`` (the GGUF's template)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = str(model.metadata["tokenizer.chat_template"])
        formatter = Jinja2ChatFormatter(template, eos_token="", bos_token="")
        return str(formatter(messages=cast(Any, messages)).prompt)

    def system_prompt_cached(self) -> bool:
        """Does the KV cache start with the evaluated system prompt? (worker thread)"""
        model = self._model
        if model is None or not self._system_tokens:
            return False
        n = len(self._system_tokens)
        return model.n_tokens >= n and list(model.input_ids[:n]) == self._system_tokens

    def close(self) -> None:
        self._stopped.set()
        self._worker.call(self._release)
        self._worker.close()

    def _release(self) -> None:
        self._end_stream()
        if self._model is not None:
            self._model.close()
            self._model = None

    def stop(self) -> None:
        self._stopped.set()

    def prefill(self, text: str) -> None:
        """Evaluate the prompt for ``text`` ahead of the reply (queued on the worker, not awaited).

        Called with a speculative transcript while the endpoint is still undecided: the reply that
        follows finds its prompt in the KV cache and only samples. A prompt that differs (another
        transcript, a tool answered instead) costs nothing more than a shorter shared prefix.
        """
        self._worker.submit(self._prefill, self.history.messages(self.system_prompt, text, self.examples))

    def prefill_history(self) -> None:
        """Evaluate what the next prompt begins with (queued on the worker, not awaited): the system
        prompt, the examples and the history as it now is, up to the next request's text.

        Called once a reply is over. Within a conversation the oldest exchange leaves the prompt once
        ``history_turns`` are remembered, and everything after the examples then differs from what the
        KV cache holds: the reply after it would evaluate the whole history again (about 0.5–0.8 s for
        the 1.5B on two cores). Evaluated now, while the user has not yet spoken, the next reply finds it.
        """
        probes = [self.history.messages(self.system_prompt, text, self.examples) for text in ("甲", "乙")]
        self._worker.submit(self._prefill_prefix, *probes)

    def _prefill(self, messages: list[Message]) -> None:
        model = self._model
        if model is None:
            return
        self._end_stream()
        tokens = model.tokenize(self._format(model, messages).encode(), add_bos=False, special=True)
        self._evaluate(model, tokens[:-1])  # the last token is left for the reply to evaluate

    def _prefill_prefix(self, one: list[Message], other: list[Message]) -> None:
        """The KV cache brought to hold what the prompts of two requests share (worker thread)."""
        model = self._model
        if model is None or (self._stream is not None and not self._stopped.is_set()):
            return  # a reply under way keeps its cache
        self._end_stream()  # a reply cut short leaves its generator open
        a, b = (model.tokenize(self._format(model, m).encode(), add_bos=False, special=True) for m in (one, other))
        self._evaluate(model, a[: _shared(a, b)])

    def _evaluate(self, model: Llama, tokens: list[int]) -> None:
        """The KV cache brought to hold ``tokens``: only what it does not hold yet is evaluated."""
        if not self.system_prompt_cached():
            model.load_state(self._system_state)
        keep = _shared(list(model.input_ids[: model.n_tokens]), tokens)
        model.n_tokens = keep  # eval() drops the KV cache from here on
        try:
            model.eval(tokens[keep:])
        except (ValueError, RuntimeError) as exc:  # a prompt that no longer fits: the reply will say so
            model.n_tokens = 0
            log.debug("prefill failed", error=str(exc))

    def reply(self, text: str) -> AsyncIterator[str]:
        """Stream the reply to ``text``; from this call on, ``stop()`` applies to this reply."""
        return texts(self.scored(text))

    def scored(self, text: str) -> AsyncIterator[Scored]:
        """``reply``, each piece with the model's confidence in it (0–1)."""
        self._stopped = threading.Event()
        return self._stream_reply(text, self._stopped)

    async def _stream_reply(self, text: str, stopped: threading.Event) -> AsyncIterator[Scored]:
        said: list[str] = []
        try:
            await self._worker.run(self._start, self.history.messages(self.system_prompt, text, self.examples))
            while (piece := await self._worker.run(self._step, stopped)) is not None:
                said.append(piece.text)
                yield piece
        finally:
            stopped.set()  # an abandoned reply computes nothing more
            self.history.remember(text, "".join(said))

    def _start(self, messages: list[Message]) -> None:
        """Begin a completion (worker thread); the prompt is evaluated by the first ``_step``."""
        if self._model is None:
            raise ModelError("llm: used before load()")
        self._end_stream()
        if not self.system_prompt_cached():
            self._model.load_state(self._system_state)  # the system prompt, evaluated once at load
        try:
            stream = self._model.create_chat_completion(
                messages=cast(Any, messages),
                stream=True,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                repeat_penalty=self.repeat_penalty,
                max_tokens=self.max_tokens,
                logits_processor=cast(Any, [self._confidence]) if self._confidence is not None else None,
                seed=self.seed,  # given a seed, the same chat always gets the same reply (replays, tests)
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llm: llama.cpp could not start a reply: {exc}") from None
        self._stream = cast(Iterator[Any], stream)
        if self._confidence is not None:
            self._confidence.steps.clear()

    def _step(self, stopped: threading.Event) -> Scored | None:
        """The next piece of text (worker thread), or None once the reply is over or stopped.

        One chunk is about one token; chunks without text (the role header, the finish marker,
        a token held back because it ends mid-character) are skipped; a piece's confidence is the
        lowest of the steps since the piece before it.
        """
        steps = self._confidence.steps if self._confidence is not None else []  # none: every piece 1.0
        seen = len(steps)
        while self._stream is not None and not stopped.is_set():
            if self.gate is not None:
                self.gate.wait()
            try:
                chunk = next(self._stream)
            except StopIteration:
                break
            except (ValueError, RuntimeError) as exc:  # e.g. the chat no longer fits in n_ctx
                self._end_stream()
                raise ModelError(f"llm: llama.cpp failed mid-reply: {exc}") from None
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                return Scored(cast(str, piece), min(steps[seen:], default=1.0))
        self._end_stream()
        return None

    def _end_stream(self) -> None:
        """Close the current chunk generator on the worker thread, so llama.cpp finishes cleanly."""
        stream, self._stream = self._stream, None
        if stream is not None:
            cast(Any, stream).close()


class _Confidence:
    """A logits processor that changes nothing: it notes the probability of the top choice at each step."""

    def __init__(self) -> None:
        self.steps: list[float] = []

    def __call__(self, input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        top = float(logits.max())
        self.steps.append(1.0 / float(np.exp(logits - top).sum()))
        return logits


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens ``a`` and ``b`` share from the start."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
