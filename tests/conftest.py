"""Shared fixtures: real recordings, the real VAD, and a replay runner with test doubles."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant import cli, logs
from assistant import config as config_mod
from assistant.app import Parts
from assistant.audio.wav import read_wav
from assistant.replay import Echo, replay
from models.assets import Assets
from models.kokoro_tts import KokoroTts
from models.protocols import Backends
from models.sherpa_vad import SherpaSileroVad, silero_model_path
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REAL = SHARED / "audio" / "real"
RATE = 16000


def real(name: str) -> np.ndarray:
    """A real Mandarin recording from ../shared/audio/real/, as 16 kHz float32."""
    path = REAL / name
    if not path.is_file():
        pytest.fail(f"missing shared recording {path}: see ../shared/README.md")
    return read_wav(path, RATE)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), np.float32)


def session_of(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts).astype(np.float32)


@dataclass
class Replayed:
    events: list[dict[str, Any]]
    summary: dict[str, Any]
    played: np.ndarray
    out: Path

    def types(self, *, without: tuple[str, ...] = ("tts_chunk",)) -> list[str]:
        return [e["type"] for e in self.events if e["type"] not in without]

    def transitions(self) -> list[tuple[str, str, str]]:
        return [(e["from"], e["to"], e["trigger"]) for e in self.events if e["type"] == "state_changed"]

    def first(self, kind: str, **match: Any) -> dict[str, Any]:
        for e in self.events:
            if e["type"] == kind and all(e.get(k) == v for k, v in match.items()):
                return e
        raise AssertionError(f"no {kind} {match} in {self.types()}")


def make_config(*overrides: str) -> config_mod.Config:
    # The tone of ToneTts is no speech: WebRTC's echo canceller suppresses the microphone under a pure
    # tone. Tests of the echo defence turn it on, with the real TTS.
    # The tests check behaviour, not knowledge: on the 0.5B, whose answers they were written on, and
    # which loads and answers in a third of the 1.5B's time (the default: tests/test_models.py loads it).
    # A reply prepared ahead and dropped (the speaker went on after a pause) would take a scripted
    # LLM's next reply: the tests of replies prepared ahead (tests/test_preempt.py) turn it on.
    base = ("wake.mode='always'", "log.level='warning'", "echo.cancel=false",
            "llm.model='qwen2.5-coder-0.5b-instruct-q4_k_m'", "dialog.preempt=false")
    return config_mod.load(None, [*base, *overrides])


@pytest.fixture(scope="session")
def assets() -> Assets:
    """The project's model files: installed packages, the model store, and ../shared/models."""
    return Assets([SHARED / "models"])


@pytest.fixture(scope="session")
def qwen_gguf(assets: Assets) -> Path:
    """The Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF, joined by the asset manager from its PyPI parts."""
    return assets.path("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


@dataclass(frozen=True)
class KokoroFiles:
    model: Path
    vocab: Path
    voice: Path


@pytest.fixture(scope="session")
def kokoro_files(assets) -> KokoroFiles:
    """The model and vocab from the asset manager (joined from the PyPI parts), and one shared voice."""
    return KokoroFiles(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx"),
                       assets.path("kokoro-v1.0-int8", "vocab.json"),
                       assets.path("kokoro-zh-voices", "zf_xiaobei.bin"))


@pytest.fixture(scope="module")
def tts(kokoro_files: KokoroFiles) -> Iterator[KokoroTts]:
    t = KokoroTts(kokoro_files.model, kokoro_files.vocab, kokoro_files.voice)
    t.load()
    yield t
    t.close()


@pytest.fixture
def vad(assets: Assets) -> Iterator[SherpaSileroVad]:
    v = SherpaSileroVad(silero_model_path(assets))
    v.load()
    yield v
    v.close()


ReplayRunner = Callable[..., Awaitable[Replayed]]


@pytest.fixture
def run_replay(tmp_path: Path, vad: SherpaSileroVad) -> ReplayRunner:
    counter = iter(range(1000))

    async def run(recording: np.ndarray, *overrides: str, asr: Any = None, llm: Any = None,
                  tts: Any = None, kws: Any = None, echo: Echo | None = None,
                  subscribers: tuple[Any, ...] = (), realtime: bool = False, clock: Any = None,
                  phrase_cache: Any = None, vad_model: Any = None, tools: Any = None,
                  start: Any = None, turn: Any = None, predict: Any = None, worker: Any = None,
                  talk_vad: Any = None) -> Replayed:
        out = tmp_path / f"run{next(counter)}"
        the_vad = vad_model or vad
        the_vad.reset()
        backends = Backends(vad=the_vad, asr=asr or ScriptedAsr("你是谁"), llm=llm or ScriptedLlm("我是听说。"),
                            tts=tts or ToneTts(), kws=kws, turn=turn, worker=worker, talk_vad=talk_vad)
        parts = Parts(make_config(*overrides), backends, tools, phrase_cache)
        summary = await replay(parts, recording, out, echo=echo, subscribers=subscribers, realtime=realtime,
                               clock=clock, start=start, predict=predict)
        events = [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
        assert summary == json.loads((out / "summary.json").read_text(encoding="utf-8"))
        return Replayed(events, summary, read_wav(out / "played.wav", RATE), out)

    return run


@pytest.fixture(autouse=True, scope="session")
def quiet_logs() -> None:
    from assistant import logs

    logs.setup("warning", "console")


@pytest.fixture
def cli_main(tmp_path, monkeypatch, capsys):
    """``assistant.cli.main`` in this process, away from the repository's config.toml; returns
    (exit code, stdout, stderr lines)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINGSHUO_CONFIG", raising=False)

    def run(*args: str) -> tuple[int, str, list[str]]:
        try:
            code = cli.main([*args, "--set", "log.level='warning'"])
        finally:
            with capsys.disabled():  # logs.setup() bound structlog to the captured stderr
                logs.setup("warning", "console")
        out, err = capsys.readouterr()
        return code, out, err.strip().splitlines()

    return run


@dataclass
class StopTimer:
    """Wall-clock times of each barge-in decision and of each clearing of the replay speaker."""

    decided: list[float]
    cleared: list[float]

    def __call__(self, t: float, event: object) -> None:  # a bus subscriber
        from assistant.events import BargeIn

        if isinstance(event, BargeIn):
            self.decided.append(time.perf_counter())

    @property
    def decision_to_clear_s(self) -> float:
        assert self.decided and self.cleared, "no barge-in, or the speaker was never cleared"
        return self.cleared[0] - self.decided[0]


@pytest.fixture
def stop_timer(monkeypatch: pytest.MonkeyPatch) -> StopTimer:
    """Pass it as a subscriber; it also times ``ReplaySpeaker.clear``."""
    from assistant.audio import replay as replay_audio

    timer = StopTimer([], [])
    original_clear = replay_audio.ReplaySpeaker.clear

    def timed_clear(self: replay_audio.ReplaySpeaker) -> None:
        timer.cleared.append(time.perf_counter())
        original_clear(self)

    monkeypatch.setattr(replay_audio.ReplaySpeaker, "clear", timed_clear)
    return timer


def says(text: str, word: str) -> bool:
    """Does ``text`` contain ``word`` as toneless pinyin? Homophones count: a recogniser on another CPU may
    legitimately write 小志 for 小智, so recognised words are checked by their sound."""
    from assistant.text.echo_match import syllables

    return " ".join(syllables(word)) in " ".join(syllables(text))


@pytest.fixture
def tool_responder(tmp_path: Path):
    """The configured responder with real tools on a fresh store, and its scripted LLM (which only
    ever answers a request the tools leave to it)."""
    from tests.doubles import configured_responder

    with configured_responder(tmp_path, "这个我来回答。") as (r, llm, _):
        yield r, llm
