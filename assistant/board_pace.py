"""A PREDICTION of the board's timing: a lockstep replay in which each model call takes the session
time an RK3576 would need for it (``assistant.board_timing``), so the end of speech → first audio
the replay records is the board's, predicted, and the same on any CPU.

How: in lockstep the models compute in zero session time (``models.worker``); here each call's
result is then held back until the session clock has moved on by the board's time for that call.
The session clock only moves as the replayed microphone hands out chunks, so the microphone's
pacer (``BoardPacer``, in place of ``assistant.audio.pacing.Pacer``) is where board time passes:
before each 20 ms chunk it runs the board's servers up to the chunk's end, and every call that
finishes inside the chunk is released *at its own time* (``PacedClock`` then reads that instant),
so events are stamped to the microsecond, not rounded to chunks. Nothing sleeps on the wall clock.

The servers are the board's workers, each running its calls in order: ``asr`` and ``turn`` (A72
threads), ``tts-cpu`` (the TTS's ISTFT), and the NPU, whose layout is the thing to choose:

- serialised (``npu.mode``): one NPU turn, first come first served. The LLM asks for it per token
  and the first token (prompt evaluation) in one go, so a TTS call waits at most one token, and the
  LLM pauses while it runs, as models/npu.py hands over. The core layout does not matter then.
- concurrent, LLM and TTS on separate cores: they never wait for each other.
- concurrent, one core: both run at once at half speed each (processor sharing: an assumption; how
  the runtime interleaves two contexts on one core is not published).

Not paced: the VAD and the keyword spotter, which run inside the audio pump on every chunk (the
pump cannot wait for a clock it drives). ``Timings.vad_rtf``/``kws_rtf`` say what share of each
chunk they would take on the board; their lag is not in the latencies.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from assistant.audio.pacing import SETTLE_YIELDS
from assistant.board_timing import Timings, tts_windows
from assistant.clock import SampleClock
from models.protocols import Asr, Backends, Samples, Scored, Tts, Turn, char_logprob, readings, scored_reply

T = TypeVar("T")
MODES = ("serialised", "concurrent")
CORES = ("separate", "shared")
NPU_KINDS = ("llm", "tts")
DONE_S = 1e-9  # a call with this little left is done (what float rounding of the session time leaves)


@dataclass(frozen=True)
class Layout:
    """Where the LLM and the TTS run on the NPU, and whether they may run at the same moment."""

    mode: str = "serialised"
    cores: str = "separate"

    def __str__(self) -> str:
        return f"{self.mode}, LLM and TTS on {'separate cores' if self.cores == 'separate' else 'one core'}"


@dataclass(frozen=True)
class Prediction:
    """What a predicted replay is paced by."""

    timings: Timings = field(default_factory=Timings)
    layout: Layout = field(default_factory=Layout)

    def describe(self) -> dict[str, Any]:
        return {"label": "PREDICTION", "board": "rk3576", "layout": str(self.layout),
                "timings": {f: getattr(self.timings, f) for f in self.timings.__dataclass_fields__}}


class PacedClock(SampleClock):
    """A sample clock that can also read an instant inside the chunk being paced."""

    def __init__(self, sample_rate: int) -> None:
        super().__init__(sample_rate)
        self.instant: float | None = None

    def advance(self, n: int) -> None:
        super().advance(n)
        self.instant = None

    def now(self) -> float:
        return self.instant if self.instant is not None else super().now()


@dataclass
class _Call:
    left: float
    done: asyncio.Future[None]
    started: bool = False


class BoardTime:
    """The board's workers in session time: queues of calls, each served in order."""

    def __init__(self, layout: Layout, clock: PacedClock) -> None:
        if layout.mode not in MODES or layout.cores not in CORES:
            raise ValueError(f"board: no layout {layout.mode}/{layout.cores}")
        self.layout, self.clock = layout, clock
        self.now = 0.0
        self._queues: dict[str, deque[_Call]] = {}
        self.busy_s: dict[str, float] = {}  # time each server was serving, for the report

    def server(self, kind: str) -> str:
        """The queue a call of ``kind`` waits in."""
        return "npu" if kind in NPU_KINDS and self.layout.mode == "serialised" else kind

    async def spend(self, kind: str, seconds: float) -> None:
        """Return once the board would have done a call of ``kind`` taking ``seconds``, after the ones
        before it in its queue. A cancelled caller's call goes on if it had started (an NPU or
        CTranslate2 call in flight is not aborted) and is dropped if it had not."""
        if seconds <= 0:
            return
        call = _Call(seconds, asyncio.get_running_loop().create_future())
        self._queues.setdefault(self.server(kind), deque()).append(call)
        await call.done

    def _heads(self) -> list[tuple[str, _Call, float]]:
        """The call each queue is serving now, and the speed it goes at."""
        heads = []
        for name, queue in self._queues.items():
            while queue and not queue[0].started and queue[0].done.cancelled():
                queue.popleft()
            if queue:
                heads.append((name, queue[0]))
        sharing = self.layout.mode == "concurrent" and self.layout.cores == "shared"
        on_core = sum(1 for name, _ in heads if name in NPU_KINDS) if sharing else 1
        return [(name, call, 1.0 / on_core if sharing and name in NPU_KINDS else 1.0) for name, call in heads]

    def next_finish(self) -> float | None:
        """When the next call finishes, if no new one comes first."""
        return min((self.now + max(0.0, call.left) / speed for _, call, speed in self._heads()), default=None)

    def run_until(self, t: float) -> list[asyncio.Future[None]]:
        """Serve the calls up to ``t``; the futures of those finished by then."""
        finished = []
        dt = max(0.0, t - self.now)
        for name, call, speed in self._heads():
            if dt > 0:
                call.started = True
                call.left -= dt * speed
                self.busy_s[name] = self.busy_s.get(name, 0.0) + dt
            if call.left <= DONE_S:
                self._queues[name].popleft()
                finished.append(call.done)
        self.now = max(self.now, t)
        return finished

    async def until(self, end_sample: int) -> None:
        """The microphone's pacer: let the session react to the last chunk, then pass board time up to
        the end of the next one, releasing each call as it finishes."""
        for _ in range(SETTLE_YIELDS):
            await asyncio.sleep(0)
        end = end_sample / self.clock.sample_rate
        while (t := self.next_finish()) is not None and t <= end:
            await self._release(self.run_until(t), t)
        await self._release(self.run_until(end), end)  # what float rounding finished just past ``t``

    async def _release(self, finished: list[asyncio.Future[None]], t: float) -> None:
        """The finished calls' callers go on, at the instant ``t``."""
        self.clock.instant = t
        if not finished:
            return
        for future in finished:
            if not future.done():
                future.set_result(None)
        for _ in range(SETTLE_YIELDS):
            await asyncio.sleep(0)


class _Paced:
    """A model whose calls take board time; what is not paced goes to the model itself."""

    def __init__(self, inner: Any, board: BoardTime, timings: Timings) -> None:
        self.inner, self.board, self.timings = inner, board, timings

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def load(self) -> None:
        self.inner.load()

    def close(self) -> None:
        self.inner.close()


class PacedAsr(_Paced):
    def __init__(self, inner: Asr, board: BoardTime, timings: Timings, min_window_s: float) -> None:
        super().__init__(inner, board, timings)
        self.sample_rate = inner.sample_rate
        self.min_window_s = min_window_s

    async def transcribe(self, samples: Samples) -> str:
        text: str = await self.inner.transcribe(samples)
        await self.board.spend("asr", self.timings.asr_s(len(samples) / self.sample_rate, self.min_window_s))
        return text

    def stop(self) -> None:
        self.inner.stop()

    async def char_logprob(self, text: str) -> float | None:
        return await char_logprob(self.inner, text)

    async def readings(self, text: str) -> list[str]:
        return await readings(self.inner, text)


class PacedTurn(_Paced):
    def __init__(self, inner: Turn, board: BoardTime, timings: Timings) -> None:
        super().__init__(inner, board, timings)
        self.sample_rate = inner.sample_rate

    async def complete(self, samples: Samples) -> float:
        p: float = await self.inner.complete(samples)
        await self.board.spend("turn", self.timings.turn_s)
        return p


class PacedLlm(_Paced):
    """Each piece (a token, for the local backends) comes a token's time after the one before; the
    first, the first token's time after the request."""

    def reply(self, text: str) -> AsyncIterator[str]:
        return self._paced(self.inner.reply(text))

    def scored(self, text: str) -> AsyncIterator[Scored]:
        return self._paced(scored_reply(self.inner, text))

    def stop(self) -> None:
        self.inner.stop()

    async def _paced(self, pieces: AsyncIterator[T]) -> AsyncIterator[T]:
        t, first = self.timings, True
        try:
            async for piece in pieces:
                await self.board.spend("llm", t.llm_first_token_s if first else t.llm_token_s())
                first = False
                yield piece
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]


class PacedTts(_Paced):
    """The text's audio (made here, in zero time) handed out as the board's TTS would make it: one
    piece per acoustic-model window, each after an acoustic call, a vocoder call and the ISTFT."""

    def __init__(self, inner: Tts, board: BoardTime, timings: Timings) -> None:
        super().__init__(inner, board, timings)
        self.sample_rate = inner.sample_rate
        self._stops = 0

    def stop(self) -> None:
        self._stops += 1
        self.inner.stop()

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        stops, t = self._stops, self.timings
        made = [piece async for piece in self.inner.synthesize(text)]
        if not made or stops != self._stops:
            return
        for part in np.array_split(np.concatenate(made), tts_windows(text)):
            await self.board.spend("tts", t.tts_acoustic_s)
            await self.board.spend("tts", t.tts_vocoder_s)
            await self.board.spend("tts-cpu", t.tts_cpu_s)
            if stops != self._stops:
                return
            yield part


def paced(models: Backends, board: BoardTime, timings: Timings, asr_window_s: float) -> Backends:
    """``models`` with the ASR, LLM, TTS and turn model taking board time. The CPU gate is left out:
    it keeps the desktop's LLM off the TTS's CPU cores, and the board's LLM is on the NPU."""
    if models.asr is None or models.llm is None or models.tts is None:
        raise ValueError("board_pace: a prediction paces the local ASR, LLM and TTS, and one is missing")
    turn = PacedTurn(models.turn, board, timings) if models.turn is not None else None
    return replace(models, asr=PacedAsr(models.asr, board, timings, asr_window_s),
                   llm=PacedLlm(models.llm, board, timings), tts=PacedTts(models.tts, board, timings),
                   turn=turn, cores=None)
