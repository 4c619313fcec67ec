"""The turn benchmark's pipecat peer (``benchmarks/peer.py``, ``benchmarks/pipecat_peer.py``): its numbers
read the way turn.py reads Tingshuo's, its spec names the configuration's own model files, and (slow,
where its venv is installed by ``benchmarks/pipecat-venv.sh``) the real bot answers a real recording."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import peer
from tests.conftest import make_config

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "audio" / "real"


def test_the_turn_is_read_from_the_first_marks_after_the_end_of_speech() -> None:
    record = {"speech_end": 3.0,
              "turn_end": [1.9, 6.1],  # the first was a pause earlier in the request
              "transcript_at": [1.8, 4.0], "llm_text": [2.2, 6.6], "first_audio": [3.5, 9.1]}
    assert peer.parts(record) == {"endpoint_wait": 3.1, "asr_after_endpoint": -2.1, "llm_first_clause": 0.5,
                                  "tts_first_audio": 2.5, "total": 6.1}


def test_a_turn_without_a_reply_has_no_total() -> None:
    parts = peer.parts({"speech_end": 3.0, "turn_end": [3.4], "transcript_at": [3.3]})
    assert parts["total"] is None and parts["tts_first_audio"] is None and parts["endpoint_wait"] == 0.4


def test_the_spec_names_the_configurations_own_files() -> None:
    cfg = make_config()
    given = peer.spec(cfg, [("ask", SHARED / "ask_who_are_you.wav", 3.9)], 0.5, 7.0)
    assert Path(given["whisper"]).is_dir() and Path(given["whisper"], "model.bin").is_file()
    for key in ("llm", "kokoro", "voice_file"):
        assert Path(given[key]).is_file(), key
    assert given["voice"] == cfg.tts.voice and given["llm"].endswith(".gguf") and "听说" in given["system_prompt"]
    assert given["clips"] == [{"name": "ask", "path": str(SHARED / "ask_who_are_you.wav"), "speech_end": 3.9}]


@pytest.mark.slow
def test_the_pipecat_bot_answers_a_real_recording() -> None:
    python = peer.python()
    if python is None:
        pytest.skip("no pipecat venv (benchmarks/pipecat-venv.sh makes it)")
    cfg = make_config()
    record, = peer.run(python, peer.spec(cfg, [("ask", SHARED / "ask_who_are_you.wav", 4.0)], 0.5, 6.0))
    assert record["name"] == "ask" and record["transcript"].strip() and record["reply"].strip()
    parts = peer.parts(record)
    assert parts["total"] is not None and parts["total"] > 0  # it answered after the request ended
