"""The command line: bad input is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

import pytest

from tests.conftest import REAL, SHARED

SHARED_MODELS = SHARED / "models"


def assistant(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assistant", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("assistant: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def empty_wav(path: Path) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
    return path


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda d: d / "missing.wav", "no such file"),
    (lambda d: empty_wav(d / "empty.wav"), "the recording is empty"),
    (lambda d: (d / "notes.wav").write_text("not audio") and d / "notes.wav", "not a readable PCM wav"),
    (lambda d: (d / "folder.wav").mkdir() or d / "folder.wav", "is a folder"),
])
def test_replay_of_a_bad_file_exits_2_with_one_line_and_writes_nothing(tmp_path, make, fragment):
    bad = make(tmp_path)
    out = tmp_path / "out"
    result = assistant("replay", str(bad), "--out", str(out), cwd=tmp_path)
    one_line_error(result, fragment)
    assert result.stdout == ""
    assert not out.exists()


def test_bad_settings_exit_2_naming_the_key(tmp_path):
    wav = str(REAL / "cmd_qiehuan_1.wav")
    one_line_error(assistant("vad", wav, "--set", "vad.threshold=7", cwd=tmp_path), "vad.threshold")
    one_line_error(assistant("--set", "vad.nope=1", "vad", wav, cwd=tmp_path), "unknown config key: vad.nope")
    one_line_error(assistant("vad", wav, "--config", str(tmp_path / "none.toml"), cwd=tmp_path),
                   "config file not found")
    one_line_error(assistant("replay", wav, "--out", str(tmp_path / "o"), "--echo", "loud", cwd=tmp_path),
                   "--echo")


def test_vad_command_finds_the_utterances_of_a_real_recording(tmp_path):
    result = assistant("vad", str(REAL / "greeting_10s.wav"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "2 utterance(s) in 10.20 s of audio" in result.stdout


def test_config_and_set_apply_to_every_subcommand(tmp_path):
    # A 2 s endpoint merges the two phrases of the greeting (1.1 s apart) into one utterance,
    # whether it comes from a config file or from --set.
    custom = tmp_path / "custom.toml"
    custom.write_text("[vad]\nendpoint_silence_ms = 2000\n", encoding="utf-8")
    wav = str(REAL / "greeting_10s.wav")
    from_file = assistant("vad", wav, "--config", str(custom), cwd=tmp_path)
    from_set = assistant("--set", "vad.endpoint_silence_ms=2000", "vad", wav, cwd=tmp_path)
    for result in (from_file, from_set):
        assert result.returncode == 0, result.stderr
        assert "1 utterance(s)" in result.stdout
    shown = assistant("config", "--config", str(custom), "--set", "wake.mode=always", cwd=tmp_path)
    assert "vad.endpoint_silence_ms = 2000" in shown.stdout
    assert "wake.mode = 'always'" in shown.stdout


def test_a_corrupt_model_stops_start_up_with_one_line(tmp_path):
    from models.assets import Assets

    voice = Assets([SHARED_MODELS]).path("kokoro-zh-voices", "zf_xiaoxiao.bin")
    broken = tmp_path / "models" / "kokoro-zh-voices" / "zf_xiaoxiao.bin"
    broken.parent.mkdir(parents=True)
    data = bytearray(voice.read_bytes())
    data[100] ^= 0xFF
    broken.write_bytes(bytes(data))
    config = tmp_path / "config.toml"
    config.write_text('[models]\ndirs = ["models"]\n', encoding="utf-8")
    result = assistant("say", "你好", "-o", str(tmp_path / "x.wav"), "--config", str(config), cwd=tmp_path)
    one_line_error(result, str(broken), "corrupt", "assistant models fetch kokoro-zh-voices")
    assert not (tmp_path / "x.wav").exists()


def test_no_sound_card_is_one_line(tmp_path):
    result = assistant("run", "--set", "audio.capture_device='tingshuo_no_such_card'", cwd=tmp_path)
    one_line_error(result, "cannot open capture device 'tingshuo_no_such_card'")


def test_normalize_prints_each_line_as_it_will_be_spoken(tmp_path):
    result = assistant("normalize", "现在是22:05\n第2名", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["现在是晚上十点零五分", "第二名"]


@pytest.mark.slow
def test_ask_answers_a_sum_without_the_llm_and_saves_a_reminder(tmp_path):
    # An LLM that cannot load here (RKLLM without its library): if the command loaded it, it would fail.
    no_llm = ("--set", "models.llm='rkllm'", "--set", f"rkllm.library='{tmp_path / 'none.so'}'",
              "--set", f"models.dirs=['{SHARED_MODELS}']",
              "--set", f"tools.data_dir='{tmp_path / 'data'}'")
    result = assistant("ask", "--text", "12乘以8等于多少", "-o", str(tmp_path / "a.wav"), *no_llm, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "听说: 十二乘以八等于九十六。"
    assert (tmp_path / "a.wav").stat().st_size > 16000
    result = assistant("ask", "--text", "二十分钟后提醒我吃药", "-o", str(tmp_path / "b.wav"), *no_llm, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("听说: 好的，二十分钟后，也就是") and "提醒你吃药" in result.stdout
    from assistant.tools.store import Store

    with Store(tmp_path / "data" / "tingshuo.sqlite3") as store:
        assert [r.text for r in store.pending()] == ["吃药"]


def test_todos_and_reminders_on_the_command_line_share_the_assistants_database(tmp_path):
    from datetime import datetime, timedelta

    from assistant.tools.store import Store

    data = ("--set", f"tools.data_dir='{tmp_path / 'data'}'")
    assert assistant("todos", "add", "买牛奶", *data, cwd=tmp_path).stdout == "added #1: 买牛奶\n"
    assert assistant("todos", "add", "交电费", *data, cwd=tmp_path).returncode == 0
    assert assistant("todos", "done", "牛奶", *data, cwd=tmp_path).stdout == "done #1\n"
    assert assistant("todos", "list", *data, cwd=tmp_path).stdout == "#2\t[ ]\t交电费\n"
    one_line_error(assistant("todos", "done", "洗车", *data, cwd=tmp_path), "no open todo matches '洗车'")
    now = datetime.now().astimezone()
    with Store(tmp_path / "data" / "tingshuo.sqlite3") as store:  # as the running assistant would
        store.add_reminder("吃药", now + timedelta(minutes=20), "reminder", now)
        assert [t.text for t in store.todos()] == ["交电费"]
    listed = assistant("reminders", "list", *data, cwd=tmp_path).stdout
    assert listed.startswith("#1\t") and listed.endswith("\treminder\t吃药\n")
    one_line_error(assistant("reminders", "cancel", "7", *data, cwd=tmp_path), "no pending reminder #7")
    assert assistant("reminders", "cancel", "1", *data, cwd=tmp_path).stdout == "cancelled #1\n"
    assert assistant("reminders", "list", *data, cwd=tmp_path).stdout == "no pending reminders\n"
    assert assistant("todos", "clear", *data, cwd=tmp_path).stdout == "cleared 2 todo(s)\n"


@pytest.mark.parametrize("text", ["", "  ", "。！？", "**"])
def test_say_with_nothing_to_speak_exits_2_and_writes_nothing(tmp_path, text):
    out = tmp_path / "out.wav"
    one_line_error(assistant("say", text, "-o", str(out), cwd=tmp_path), "nothing to speak")
    assert not out.exists()
