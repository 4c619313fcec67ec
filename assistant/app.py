"""The composition root: every front end's session is built here, from config, in one place.

A front end brings its clock and its audio: the sound card (``assistant.live``), a recording
(``assistant.replay``), a Wyoming peer (``assistant.wyoming``). ``conversation()`` brings the loaded
models with the tools and the phrase cache, and ``Parts.session()`` joins the two. The inference
worker builds its models with ``inference()``; the one-shot commands load single models with
``loaded()``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant import backends as build
from assistant import budget, logs, respond
from assistant.audio.protocols import AudioSink, AudioSource
from assistant.audio.room_memory import FILE as ROOM_FILE
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import EventBus
from assistant.phrase_cache import PhraseCache
from models.protocols import Backends
from states.session import Session, Tap

if TYPE_CHECKING:
    from assistant.answerer import Answerer
    from assistant.respond import Responder
    from assistant.tools.answers import Tools
    from assistant.wyoming.handler import Services
    from assistant.wyoming.link import HaLink


@contextmanager
def loaded(*models: Any, speaks: bool = True) -> Iterator[None]:
    """Load the models now (and, if something will be spoken, the normalizer's FSTs), so the first
    reply pays for none of it; close them whatever happens."""
    from assistant.text.normalize import preload

    done = []
    try:
        if speaks:
            preload()
        for m in models:
            m.load()
            done.append(m)
        yield
    finally:
        for m in reversed(done):
            m.close()


@dataclass
class Parts:
    """What every conversation needs besides its audio: the models, the tools, the phrase cache."""

    cfg: Config
    backends: Backends
    tools: Tools | None = None
    phrase_cache: PhraseCache | None = None
    responder: Responder | None = None  # who answers; by default the tools and the guarded LLM
    answerer: Answerer | None = None  # who hears and answers in their place (a satellite's Home Assistant)
    room: Path | None = None  # where the room's echo path is kept between live sessions (``echo.remember_room``)

    def pids(self) -> dict[str, int | None]:
        """The processes of this conversation (the inference worker's, if it has one), for the status page."""
        worker = self.backends.worker
        return {"main": os.getpid(), "worker": worker.pid if worker is not None else None}

    def session(self, clock: SampleClock, bus: EventBus, source: AudioSource, sink: AudioSink, *,
                tap: Tap | None = None, now: Callable[[], datetime] | None = None) -> Session:
        """A session on this front end's clock and audio (refuses a set-up it cannot run), its state on
        every log line, and the slow-turn watchdog on its events when the models are in a worker."""
        session = Session(self.cfg, clock, bus, source, sink, self.backends, self.phrase_cache, tap=tap,
                          tools=self.tools, now=now, responder=self.responder, answerer=self.answerer, room=self.room)
        logs.follow_state(lambda: session.state)
        worker, w = self.backends.worker, self.cfg.worker
        if worker is not None and w.slow_turns:
            from assistant.health import OthersLoad
            from assistant.worker.watchdog import SlowTurns

            others = OthersLoad(lambda: (os.getpid(), worker.pid))
            bus.subscribe(SlowTurns(worker, w.slow_turn_s, w.slow_turns, others))
        return session


@contextmanager
def conversation(cfg: Config, data_dir: Path | None = None, *, live: bool = False) -> Iterator[Parts]:
    """The configured models, loaded, with the tools (their database in ``data_dir``, default
    ``tools.data_dir``) and the phrase cache; everything is closed afterwards. A ``live`` one (a
    microphone in a room) keeps the room's echo path in the data folder from one session to the next."""
    budget.check(cfg)
    models = backends(cfg)
    with loaded(*models.all()):
        cache = build.phrase_cache(cfg, build.assets_for(cfg))
        tools = build.tools(cfg, data_dir)
        try:
            room = (data_dir or cfg.data_dir()) / ROOM_FILE if live else None
            yield Parts(cfg, models, tools, cache, room=room)
        finally:
            if tools is not None and tools.store is not None:
                tools.store.close()


def backends(cfg: Config) -> Backends:
    """Everything a conversation needs: the ASR, LLM and TTS in a worker process (``worker.process``)
    while the ears (VAD, KWS, Smart Turn) stay here, or all of it in this process. The one place that
    chooses."""
    if not cfg.worker.process:
        return build.in_process(cfg)
    from assistant.worker.process import InferenceProcess
    from assistant.worker.remote import RemoteAsr, RemoteLlm, RemoteTts

    a = build.assets_for(cfg)
    worker = InferenceProcess(cfg)
    return Backends(vad=build.vad(cfg, a), asr=RemoteAsr(worker), llm=RemoteLlm(worker, cfg.llm.history_turns),
                    tts=RemoteTts(worker), kws=build.kws(cfg, a), turn=build.turn(cfg, a), cores=worker.cores,
                    worker=worker, talk_vad=build.talk_vad(cfg, a))


@contextmanager
def services(cfg: Config) -> Iterator[Services]:
    """The Wyoming services' models, loaded: the ASR, the TTS and a spotter for the wake words."""
    from assistant.pipeline import PipelineOptions
    from assistant.text.wake import strip_wake_words
    from assistant.wyoming.handler import Services
    from assistant.wyoming.info import describe
    from models.protocols import Voices

    assets = build.assets_for(cfg)
    asr, tts = build.asr(cfg, assets), build.tts(cfg, assets)
    words = list(cfg.wake.keywords)
    kws = build.kws(cfg, assets, words)
    hotwords = respond.hotwords_for(cfg)

    def correct(text: str) -> str:
        text = hotwords.correct(text)[0] if hotwords is not None else text
        return strip_wake_words(text, words, max_lead=4)  # 4: "Hey 小智"

    with loaded(*[m for m in (asr, tts, kws) if m is not None]):
        voices = tts.voices if isinstance(tts, Voices) else ["matcha"]
        voice = tts.voice if isinstance(tts, Voices) else "matcha"
        yield Services(describe(cfg, voices, words), asr, tts, kws, PipelineOptions.from_config(cfg), voice=voice,
                       cache=build.phrase_cache(cfg, assets), correct=correct)


def satellite_config(cfg: Config) -> Config:
    """The session's settings on a satellite: no speculative transcript and no second wake-word stage
    (each transcript is a pipeline run, and Home Assistant acts on it), the reply spoken whole as it
    comes, no phrase cache, no tools of its own."""
    return replace(cfg, vad=replace(cfg.vad, speculative_silence_ms=0), wake=replace(cfg.wake, verify=False),
                   tts=replace(cfg.tts, streaming=False, phrase_cache=False),
                   tools=replace(cfg.tools, enabled=False))


@contextmanager
def satellite(cfg: Config, link: HaLink) -> Iterator[Parts]:
    """A satellite's parts: the ears here (VAD, keyword spotter, end-of-turn model) and no ASR, LLM or
    TTS; a Home Assistant pipeline behind ``link`` hears and answers each request, and its replies
    are Home Assistant's audio, spoken as they come."""
    from assistant.wyoming.link import HomeAnswerer

    cfg = satellite_config(cfg)
    assets = build.assets_for(cfg)
    models = Backends(vad=build.vad(cfg, assets), kws=build.kws(cfg, assets), turn=build.turn(cfg, assets))
    with loaded(*models.all()):
        yield Parts(cfg, models, answerer=HomeAnswerer(link))


@dataclass
class OneShot:
    """What a one-shot command (file, ask, say, transcribe, bench, vad) uses: the models it asked
    for, loaded, and who answers (the offline tools with their database, no LLM until it is added)."""

    cfg: Config
    stack: ExitStack
    asr: Any = None
    tts: Any = None
    vad: Any = None
    llm: Any = None
    responder: Responder | None = None
    phrase_cache: PhraseCache | None = None

    def add_llm(self) -> Any:
        """The LLM too, loaded now (a request only it can answer), closed with the rest."""
        self.llm = build.llm(self.cfg, build.assets_for(self.cfg))
        self.stack.enter_context(loaded(self.llm))
        if self.responder is not None:
            self.responder.llm = self.llm
        return self.llm


@contextmanager
def one_shot(cfg: Config, *kinds: str, answers: bool = False) -> Iterator[OneShot]:
    """The models of ``kinds`` ("asr", "tts", "vad", "llm"), each built from its verified files
    before any is loaded; with ``answers`` the responder and its tools too. All closed afterwards."""
    assets = build.assets_for(cfg)
    makers: dict[str, Callable[[Config, Any], Any]] = {"asr": build.asr, "tts": build.tts, "vad": build.vad,
                                                       "llm": build.llm}
    models: dict[str, Any] = {kind: makers[kind](cfg, assets) for kind in kinds}  # a missing model: before any load
    with ExitStack() as stack:
        stack.enter_context(loaded(*models.values(), speaks="tts" in kinds))
        parts = OneShot(cfg, stack, **models)
        if answers:
            tools = build.tools(cfg)
            if tools is not None and tools.store is not None:
                stack.callback(tools.store.close)
            parts.responder = respond.for_config(cfg, parts.llm, tools)
        if "tts" in kinds:
            parts.phrase_cache = build.phrase_cache(cfg, assets)
        yield parts
