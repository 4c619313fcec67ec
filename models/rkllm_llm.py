"""An RKLLM model (.rkllm) on the RK3576 NPU through Rockchip's runtime 1.3.0, streamed token by token.

Threads. The runtime handle is created, run and destroyed on the backend's own worker thread
(``Worker("llm")``). ``rkllm_run`` blocks that thread for the whole reply and calls the result
callback once per token; the callback is a ctypes function bound to this instance (kept referenced
for as long as the handle lives; nothing module-global), and hands each piece of text to the
reply's asyncio queue with ``loop.call_soon_threadsafe``. ``reply()`` only awaits that queue: no
polling, and the event loop never waits for the NPU.

Stopping. ``stop()`` (barge-in, on the event-loop thread) marks the reply stopped and calls
``rkllm_abort`` on a short-lived thread, since the abort may block (rknn-llm#400 reports 1.3 s
during prefill) and ctypes releases the GIL for it. From then on the callback also returns 1
(pause), so generation stops at the next token even if the abort is slow. The abort is ordered
against the run by a lock: it is only called while ``rkllm_run`` is in flight, never on an idle
handle, and repeated every 0.2 s until the run has returned (an abort that lands just before the
run starts would otherwise be lost). The time from ``stop()`` to ``rkllm_run`` returning is logged
("llm aborted", ``abort_ms``) and kept in ``last_abort_s``. After a stopped reply the KV cache is
cleared, keeping the system prompt. Cancelling, or closing early, the consumer of ``reply()`` stops
the same way.

Text. The callback gives bytes that may end inside a UTF-8 character (the runtime's WAITING state
aside); an incremental decoder per reply joins them. An ERROR state, or a non-zero return of
``rkllm_run``, ends the reply with a ModelError.

Prompt and history. ``rkllm_set_chat_template`` gets the system prompt wrapped in
``system_template`` and the user-turn prefix and postfix, so the runtime builds each prompt as
system + prefix + input + postfix. Runs use ``keep_history = 0``: the history lives in ``History``
(shared with the other backends) and is written into the input of each turn with the same template,
``question + postfix + answer + end_of_turn + prefix`` per remembered exchange, where
``end_of_turn`` is what ``system_template`` puts after its ``{}``. This keeps exactly the last
``history_turns`` exchanges, remembers an interrupted reply as far as it was heard (the runtime's
own history would hold what was generated), and an aborted turn leaves nothing behind. The cost, a
re-prefill of two short exchanges, is small next to the system prompt, which the runtime reuses.

Prompt cache. With ``prompt_cache`` the evaluated system prompt is kept in a file between starts:
the first load runs one priming turn (one token) with ``save_prompt_cache``; later loads call
``rkllm_load_prompt_cache``. A ``.key`` file beside it holds a hash of the runtime version, the
model file and the chat template; a missing, stale or unreadable cache is rebuilt, never fatal.

NPU. With an ``NpuScheduler`` the whole run holds ``npu.turn("llm")`` and every token calls
``npu.hand_over("llm")``, so in serialised mode a waiting TTS job gets the NPU between tokens.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import ctypes
import functools
import hashlib
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path

import structlog

from models import rkllm_abi as abi
from models.chat import SYSTEM_PROMPT, History
from models.npu import NpuScheduler
from models.protocols import ModelError
from models.worker import Worker

log = structlog.get_logger("llm")

ABORT_RETRY_S = 0.2  # an abort that has not ended the run by then is sent again
ABORT_GIVE_UP_S = 10.0  # after this the abort thread stops waiting (and says so)
SLOW_ABORT_S = 0.3  # an abort slower than this is logged as a warning
PRIMING_TEXT = "你好"  # the user turn of the run that saves the prompt cache


class _End:
    """The reply is over."""


_END = _End()
Item = str | _End | ModelError


class _Turn:
    """One reply: its prompt, where the callback sends its text, and how it is stopped."""

    def __init__(self, prompt: bytes) -> None:
        self.prompt = prompt
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.lock = threading.Lock()  # orders stopping and rkllm_abort against the start and end of the run
        self.running = False  # rkllm_run is in flight (guarded by lock)
        self.finished = False  # the run is over, or will never start (guarded by lock)
        self.stopped = threading.Event()  # set under lock, and only before finished
        self.done = threading.Event()  # the worker is through with this reply
        self.stop_t = 0.0
        self.end_t = 0.0  # when rkllm_run returned; 0 if it never ran
        self.tokens = 0
        self.error: str | None = None  # from the callback's ERROR state

    def put(self, item: Item) -> None:
        """Hand ``item`` to the reply's consumer (from any thread)."""
        if self.loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)


class RkllmLlm:
    """The ``Llm`` protocol on an .rkllm model run by librkllmrt 1.3.0 on the NPU."""

    def __init__(
        self,
        library: Path,
        model_path: Path,
        *,
        max_context: int = 1024,
        max_tokens: int = 160,
        temperature: float = 0.7,
        top_p: float = 0.9,
        top_k: int = 40,
        repeat_penalty: float = 1.1,
        history_turns: int = 2,
        system_prompt: str = SYSTEM_PROMPT,
        system_template: str = "<|im_start|>system\n{}<|im_end|>\n",
        prompt_prefix: str = "<|im_start|>user\n",
        prompt_postfix: str = "<|im_end|>\n<|im_start|>assistant\n",
        prompt_cache: Path | None = None,
        cpu_mask: int = 0xF0,
        npu: NpuScheduler | None = None,
    ) -> None:
        if "{}" not in system_template:
            raise ValueError(f"system_template must contain {{}} for the system prompt: {system_template!r}")
        self.library = library
        self.model_path = model_path
        self.max_context = max_context
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.repeat_penalty = repeat_penalty
        self.system_prompt = system_prompt
        self.system_template = system_template
        self.prompt_prefix = prompt_prefix
        self.prompt_postfix = prompt_postfix
        self.prompt_cache = prompt_cache.expanduser() if prompt_cache is not None else None
        self.cpu_mask = cpu_mask
        self.npu = npu
        self.history = History(history_turns)
        self.last_abort_s: float | None = None  # stop() to the run's end, for the last stopped reply
        self._end_of_turn = system_template.split("{}", 1)[1]
        self._worker = Worker("llm")
        self._runtime: abi.RkllmRuntime | None = None  # worker thread
        self._handle = ctypes.c_void_p()
        self._param: abi.RKLLMParam | None = None  # kept alive with the handle (it holds the model path)
        self._c_callback = abi.LLMResultCallback(self._on_result)  # kept alive: the runtime calls it
        self._callbacks = abi.RKLLMCallback(result_callback=self._c_callback)
        self._active: _Turn | None = None  # the reply rkllm_run is generating (worker thread)
        self._current: _Turn | None = None  # the latest reply: stop() applies to it
        self._jobs: set[asyncio.Future[None]] = set()
        self._aborters: list[threading.Thread] = []
        self._cache_loaded = False
        self._closed = False

    # ---- loading ----

    def load(self) -> None:
        """Open and check the runtime, load the model, set the chat template, use the prompt cache."""
        self._worker.call(self._load)

    def _load(self) -> None:
        runtime = abi.open_runtime(self.library)
        if not self.model_path.is_file():
            raise ModelError(f"llm: the RKLLM model {self.model_path} does not exist (step: load model)")
        param = runtime.create_default_param()
        param.model_path = str(self.model_path).encode()
        param.max_context_len = self.max_context
        param.max_new_tokens = self.max_tokens
        param.top_k = self.top_k
        param.top_p = self.top_p
        param.temperature = self.temperature
        param.repeat_penalty = self.repeat_penalty
        param.skip_special_token = True
        param.is_async = False
        param.extend_param.enabled_cpus_mask = self.cpu_mask
        param.extend_param.enabled_cpus_num = bin(self.cpu_mask).count("1")
        param.extend_param.embed_flash = 1  # embeddings read from flash: less RAM on a 4 GB board
        param.extend_param.n_batch = 1
        handle = ctypes.c_void_p()
        code = runtime.init(handle, param, self._callbacks)
        if code != 0 or not handle.value:
            raise ModelError(f"llm: the RKLLM runtime could not load the model {self.model_path} "
                             f"(code {code}) (step: rkllm_init)")
        self._runtime, self._handle, self._param = runtime, handle, param
        try:
            code = runtime.set_chat_template(handle, self.system_template.format(self.system_prompt),
                                             self.prompt_prefix, self.prompt_postfix)
            if code != 0:
                raise ModelError(f"llm: the RKLLM runtime refused the chat template (code {code}) "
                                 "(step: rkllm_set_chat_template)")
            if self.prompt_cache is not None:
                self._use_prompt_cache(runtime, handle, self.prompt_cache)
        except BaseException:
            self._release()
            raise
        log.info("llm loaded", backend="rkllm", model=str(self.model_path), runtime=str(self.library))

    def _cache_key(self) -> str:
        stat = self.model_path.stat()
        parts = (abi.VERSION, str(self.model_path.resolve()), str(stat.st_size), str(stat.st_mtime_ns),
                 self.system_template.format(self.system_prompt), self.prompt_prefix, self.prompt_postfix)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def _use_prompt_cache(self, runtime: abi.RkllmRuntime, handle: ctypes.c_void_p, path: Path) -> None:
        """Load the saved system prompt, or (missing, stale or unreadable) evaluate and save it."""
        key = self._cache_key()
        key_file = path.with_name(path.name + ".key")
        try:
            saved_key = key_file.read_text().strip() if key_file.is_file() else ""
        except OSError:
            saved_key = ""
        if path.is_file() and saved_key == key:
            code = runtime.load_prompt_cache(handle, path)
            if code == 0:
                self._cache_loaded = True
                log.info("llm prompt cache loaded", path=str(path))
                return
            log.warning("llm prompt cache unreadable, rebuilding it", path=str(path), code=code)
        elif path.is_file():
            log.info("llm prompt cache is for another model or prompt, rebuilding it", path=str(path))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            key_file.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("llm prompt cache cannot be written, going on without", path=str(path), error=str(exc))
            return
        cache = abi.RKLLMPromptCacheParam(save_prompt_cache=1, prompt_cache_path=str(path).encode())
        infer = self._infer_param(max_new_tokens=1)
        infer.prompt_cache_params = ctypes.pointer(cache)
        with self._npu_turn():
            code = runtime.run(handle, self._input(PRIMING_TEXT.encode()), infer)  # no reply active: ignored
        runtime.clear_kv_cache(handle, keep_system_prompt=True)
        if code != 0 or not path.is_file():
            log.warning("llm prompt cache not saved, going on without", path=str(path), code=code)
            return
        try:
            key_file.write_text(key + "\n")
        except OSError as exc:
            log.warning("llm prompt cache key not saved", path=str(key_file), error=str(exc))
            return
        log.info("llm prompt cache saved", path=str(path))

    def close(self) -> None:
        """Stop any reply, wait for its abort, destroy the handle and end the worker thread."""
        if self._closed:
            return
        self._closed = True
        self.stop()
        for thread in self._aborters:
            thread.join(ABORT_GIVE_UP_S)
        self._aborters.clear()
        self._worker.call(self._release)
        self._worker.close()

    def _release(self) -> None:
        runtime, handle = self._runtime, self._handle
        self._runtime, self._handle = None, ctypes.c_void_p()
        if runtime is None or not handle.value:
            return
        if self._cache_loaded:
            runtime.release_prompt_cache(handle)
            self._cache_loaded = False
        code = runtime.destroy(handle)
        if code != 0:
            log.warning("llm rkllm_destroy failed", code=code)
        self._param = None

    # ---- replying ----

    def prompt_text(self, text: str) -> str:
        """The input of one run: the remembered exchanges in the chat template, then ``text``."""
        exchanges = (f"{asked}{self.prompt_postfix}{answered}{self._end_of_turn}{self.prompt_prefix}"
                     for asked, answered in self.history.exchanges)
        return "".join(exchanges) + text

    def reply(self, text: str) -> AsyncIterator[str]:
        """Stream the reply to ``text``; from this call on, ``stop()`` applies to this reply."""
        turn = _Turn(self.prompt_text(text).encode())
        self._current = turn
        return self._stream(text, turn)

    async def _stream(self, text: str, turn: _Turn) -> AsyncIterator[str]:
        turn.loop = asyncio.get_running_loop()
        job = asyncio.ensure_future(self._worker.run(self._generate, turn))
        self._jobs.add(job)
        job.add_done_callback(functools.partial(self._job_done, turn))
        said: list[str] = []
        ended = False
        try:
            while True:
                item = await turn.queue.get()
                if isinstance(item, _End):
                    ended = True
                    return
                if isinstance(item, ModelError):
                    ended = True
                    raise item
                said.append(item)
                yield item
        finally:
            if not ended:
                self._stop(turn)  # the consumer went away (cancelled, or closed the stream early)
            self.history.remember(text, "".join(said))

    def _job_done(self, turn: _Turn, job: asyncio.Future[None]) -> None:
        self._jobs.discard(job)
        if not job.cancelled() and (exc := job.exception()) is not None:  # e.g. the worker was closed
            turn.queue.put_nowait(ModelError(f"llm: the RKLLM reply could not run: {exc}"))

    def _generate(self, turn: _Turn) -> None:
        """One run of the runtime for ``turn`` (worker thread); always ends the reply's stream."""
        failure: ModelError | None = None
        try:
            runtime, handle = self._runtime, self._handle
            if runtime is None or not handle.value:
                raise ModelError("llm: the RKLLM model is used before load() or after close()")
            with turn.lock:
                if turn.stopped.is_set():
                    return  # stopped before it started
                turn.running = True
            self._active = turn
            try:
                with self._npu_turn():
                    code = runtime.run(handle, self._input(turn.prompt), self._infer_param(self.max_tokens))
            finally:
                self._active = None
                turn.end_t = time.monotonic()
                with turn.lock:
                    turn.running, turn.finished = False, True
                    interrupted = turn.stopped.is_set()
            if interrupted:
                self._clear_kv_cache(runtime, handle)
            elif turn.error is not None:
                failure = ModelError(f"llm: {turn.error} (step: rkllm_run)")
            elif code != 0:
                failure = ModelError(f"llm: rkllm_run failed with code {code} (step: rkllm_run)")
        except ModelError as exc:
            failure = exc
        except Exception as exc:  # the consumer must hear of it, not hang
            failure = ModelError(f"llm: the RKLLM reply failed: {exc}")
        finally:
            with turn.lock:
                turn.finished = True
            turn.put(failure if failure is not None else _END)
            turn.done.set()

    def _clear_kv_cache(self, runtime: abi.RkllmRuntime, handle: ctypes.c_void_p) -> None:
        """Forget the stopped turn, keep the system prompt (worker thread)."""
        code = runtime.clear_kv_cache(handle, keep_system_prompt=True)
        if code != 0:
            log.warning("llm could not clear the KV cache after a stopped reply", code=code)

    def _on_result(self, result: ctypes._Pointer[abi.RKLLMResult], userdata: int | None, state: int) -> int:
        """The runtime's result callback (on the thread running rkllm_run); never raises into C."""
        turn = self._active
        if turn is None:
            return abi.CALLBACK_CONTINUE  # the priming run at load: its output is not wanted
        try:
            if state == abi.RKLLM_RUN_NORMAL:
                data = result.contents.text if result else None
                piece = turn.decoder.decode(data or b"")
                turn.tokens += 1
                if piece:
                    turn.put(piece)
                if self.npu is not None and not turn.stopped.is_set():
                    self.npu.hand_over("llm")
            elif state == abi.RKLLM_RUN_FINISH:
                tail = turn.decoder.decode(b"", final=True)
                if tail:
                    turn.put(tail)
                if result:
                    perf = result.contents.perf
                    log.debug("llm reply finished", prefill_ms=round(perf.prefill_time_ms, 1),
                              prefill_tokens=perf.prefill_tokens, generate_ms=round(perf.generate_time_ms, 1),
                              tokens=perf.generate_tokens)
            elif state == abi.RKLLM_RUN_ERROR:
                turn.error = "the RKLLM runtime reported an error during the reply"
            # RKLLM_RUN_WAITING: the runtime holds back an incomplete character; nothing to show yet
        except Exception as exc:  # an exception must not unwind through C
            turn.error = f"the RKLLM result callback failed: {exc}"
            return abi.CALLBACK_PAUSE
        return abi.CALLBACK_PAUSE if turn.stopped.is_set() else abi.CALLBACK_CONTINUE

    def _input(self, prompt: bytes) -> abi.RKLLMInput:
        rk_input = abi.RKLLMInput()
        rk_input.role = b"user"
        rk_input.enable_thinking = False
        rk_input.input_type = abi.RKLLM_INPUT_PROMPT
        rk_input.prompt_input = prompt
        return rk_input

    def _infer_param(self, max_new_tokens: int) -> abi.RKLLMInferParam:
        infer = abi.RKLLMInferParam()
        infer.mode = abi.RKLLM_INFER_GENERATE
        infer.keep_history = 0
        infer.max_new_tokens = max_new_tokens
        return infer

    def _npu_turn(self) -> AbstractContextManager[None]:
        return self.npu.turn("llm") if self.npu is not None else contextlib.nullcontext()

    # ---- stopping ----

    def stop(self) -> None:
        """Stop the current reply at once; never blocks (the abort runs on its own thread)."""
        if self._current is not None:
            self._stop(self._current)

    def _stop(self, turn: _Turn) -> None:
        if turn.stopped.is_set():
            return  # (checked first: once stopped, the abort thread may hold the lock for long)
        with turn.lock:  # held only briefly by the worker
            if turn.finished:
                return  # over already: nothing to stop, nothing to clear
            turn.stop_t = time.monotonic()
            turn.stopped.set()
        thread = threading.Thread(target=self._abort, args=(turn,), name="llm-abort", daemon=True)
        self._aborters = [t for t in self._aborters if t.is_alive()]
        self._aborters.append(thread)
        thread.start()

    def _abort(self, turn: _Turn) -> None:
        """Abort ``turn``'s run until it has returned, then log how long that took (abort thread)."""
        runtime, handle = self._runtime, self._handle
        calls, call_s = 0, 0.0
        while runtime is not None:
            with turn.lock:
                if not turn.running:
                    break
                start = time.monotonic()
                code = runtime.abort(handle)
                call_s = max(call_s, time.monotonic() - start)
                calls += 1
                if code != 0:
                    log.warning("llm rkllm_abort failed", code=code)
            if turn.done.wait(ABORT_RETRY_S):
                break
            if time.monotonic() - turn.stop_t > ABORT_GIVE_UP_S:
                log.warning("llm abort: the run has not stopped", waited_ms=round(ABORT_GIVE_UP_S * 1000))
                return
        if not turn.done.wait(ABORT_GIVE_UP_S) or turn.end_t == 0.0:
            return  # it never ran: nothing to measure
        took = max(0.0, turn.end_t - turn.stop_t)
        self.last_abort_s = took
        report = log.warning if took > SLOW_ABORT_S else log.info
        report("llm aborted", abort_ms=round(took * 1000, 1), abort_call_ms=round(call_s * 1000, 1), calls=calls,
               phase="generation" if turn.tokens else "prefill")
