"""The board's chain in a realtime replay: RKLLM (stand-in runtime in C) and Matcha + Vocos (stand-in
rknnlite) sharing one serialised NPU scheduler, the real VAD, a real recording talked over the reply.

What it shows: the TTS speaks while the LLM is still generating (it gets the NPU between tokens),
and a barge-in in the middle of the generation aborts the runtime, clears the aborted turn's KV
cache, stops the TTS and the playback, and the new utterance is answered.
"""

from __future__ import annotations

import asyncio
import ctypes
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pypinyin import Style, lazy_pinyin

from models.matcha_rknn_tts import MatchaRknnTts
from models.npu import NpuScheduler
from models.rkllm_llm import RkllmLlm
from tests.conftest import real, session_of, silence
from tests.doubles import ScriptedAsr
from tests.stand_ins import rknnlite as stand_in_package
from tests.stand_ins.rknnlite import api as stand_in

SOURCE = Path(__file__).parent / "stand_ins" / "librkllmrt.c"
SPOKEN = "你好我是听说一二三四五六七八九十"  # every character the stand-in runtime can reply with

pytestmark = pytest.mark.slow  # realtime: the session takes its own length in wall time


@pytest.fixture
def npu_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[RkllmLlm, MatchaRknnTts, Path]]:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the stand-in RKLLM runtime (setup.sh installs it)")
    library = tmp_path / "librkllmrt.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-pthread", "-O1", "-o", str(library), str(SOURCE)], check=True)
    model = tmp_path / "qwen.rkllm"
    model.write_bytes(b"RKLLM-STANDIN model\n")

    monkeypatch.setitem(sys.modules, "rknnlite", stand_in_package)
    monkeypatch.setitem(sys.modules, "rknnlite.api", stand_in)
    stand_in.SCRIPT.reset()
    stand_in.SCRIPT.models["matcha.rknn"] = stand_in.matcha()
    stand_in.SCRIPT.models["vocos.rknn"] = stand_in.vocos()
    acoustic = stand_in.write_rknn(tmp_path / "matcha.rknn", [(1, 64), (1,), (1,), (1,)], [(1, 80, 599)])
    vocoder = stand_in.write_rknn(tmp_path / "vocos.rknn", [(1, 80, 600)], [(1, 513, 600), (1, 513, 600)])
    syllables = {c: lazy_pinyin(c, style=Style.TONE3)[0] for c in SPOKEN}
    symbols = [" ", "_", ",", ".", "!", "?", *sorted(set(syllables.values()))]
    (tmp_path / "tokens.txt").write_text("".join(f"{s} {i}\n" for i, s in enumerate(symbols)), "utf-8")
    (tmp_path / "lexicon.txt").write_text("".join(f"{c} {s}\n" for c, s in syllables.items()), "utf-8")

    npu = NpuScheduler("serialised")
    llm = RkllmLlm(library, model, npu=npu, history_turns=0)
    tts = MatchaRknnTts(acoustic, vocoder, tmp_path / "lexicon.txt", tmp_path / "tokens.txt", npu=npu)
    llm.load()
    tts.load()
    yield llm, tts, library
    tts.close()
    llm.close()


async def test_barge_in_mid_generation_aborts_the_runtime_and_the_next_request_is_answered(run_replay, npu_models):
    llm, tts, library = npu_models
    counters = ctypes.CDLL(str(library))  # the same loaded stand-in the binding drives
    counters.standin_count.restype = ctypes.c_long
    counters.standin_count.argtypes = [ctypes.c_char_p]
    counters.standin_reset()

    question = real("ask_who_are_you.wav")
    # The reply starts about 0.5 s after the question ends and would take 160 tokens × 40 ms; the
    # command is spoken 3 s after the question, over the reply, while the LLM is still writing (a
    # shorter gap let a loaded machine barge in before the run had started, with nothing to abort).
    session = session_of(question, silence(3.0), real("cmd_qiehuan_1.wav"), silence(3.0))
    asr = ScriptedAsr("[[long]][[token_ms=40]]数一数", "切换前视")
    r = await run_replay(session, "dialog.follow_up_s=0", "tts.phrase_cache=false", "llm.reply_max_chars=0",
                         "llm.reply_soft_chars=2000", llm=llm, tts=tts, asr=asr, realtime=True)

    assert "barge_in" in r.types()
    assert r.first("playback_finished")["interrupted"] is True
    turns = [(t["transcript"], t["reply"]) for t in r.summary["turns"]]  # what each turn heard and said
    assert counters.standin_count(b"aborts") >= 1 and counters.standin_count(b"kv_clears") >= 1, (turns, r.types())
    assert 0 < counters.standin_count(b"tokens") < 160  # both replies together: the long one was cut short
    assert llm.last_abort_s is not None and llm.last_abort_s < 1.0
    assert tts.npu.waited_s.get("tts", 0.0) > 0  # the TTS took its NPU turns between the LLM's tokens
    assert asr.calls >= 2 and r.types().count("playback_finished") == 2  # the command was answered too
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
