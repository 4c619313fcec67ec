"""The model asset manager: found, joined, verified, fetched from a folder, refused when corrupt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models import files
from models.assets import Assets
from models.manifest import MODELS, by_name
from models.protocols import ModelError
from tests.conftest import ROOT, SHARED


def test_manifest_is_complete():
    for model in MODELS:
        assert model.license and model.description and model.files
        for f in model.files:
            assert len(f.sha256) == 64
            assert f.parts or f.url or f.archive_member or model.archive_url, f.name


def test_a_corrupt_copy_is_refused_with_one_line(tmp_path):
    good = Assets([]).path("silero-vad", "silero_vad.onnx")  # taken from the silero-vad wheel by setup.sh
    bad = tmp_path / "models" / "silero-vad" / "silero_vad.onnx"
    bad.parent.mkdir(parents=True)
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x01  # one byte flipped
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelError) as err:
        Assets([tmp_path / "models"], store=tmp_path / "store").path("silero-vad", "silero_vad.onnx")
    message = str(err.value)
    assert "\n" not in message
    assert str(bad) in message and "corrupt" in message and "assistant models fetch silero-vad" in message


def test_a_missing_model_names_every_place_searched_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TINGSHUO_MODELS", str(tmp_path / "env"))
    with pytest.raises(ModelError) as err:
        Assets([tmp_path / "dirs"], store=tmp_path / "store").path("kokoro-zh-voices", "zf_xiaoxiao.bin")
    message = str(err.value)
    assert "\n" not in message
    for place in ("env", "dirs", "store"):
        assert str(tmp_path / place / "kokoro-zh-voices" / "zf_xiaoxiao.bin") in message
    assert "assistant models fetch" in message


def test_parts_from_packages_are_joined_atomically_and_verified(tmp_path):
    store = tmp_path / "store"
    path = Assets([], store=store).path("whisper-base", "model.bin")
    assert path == store / "whisper-base" / "model.bin"
    assert files.sha256(path) == by_name("whisper-base").file("model.bin").sha256
    assert [p.name for p in path.parent.iterdir()] == ["model.bin"]  # no temporary file left behind
    folder = Assets([], store=store).folder("whisper-base")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.bin", "tokenizer.json",
                                                         "vocabulary.txt"]


def test_a_corrupt_store_file_is_joined_again_from_the_packages(tmp_path):
    store = tmp_path / "store"
    target = store / "whisper-base" / "config.json"
    target.parent.mkdir(parents=True)
    target.write_text("{}")
    path = Assets([], store=store).path("whisper-base", "config.json")
    assert files.sha256(path) == by_name("whisper-base").file("config.json").sha256


def assistant(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TINGSHUO_MODEL_STORE": str(store)}
    env.pop("TINGSHUO_MODELS", None)
    return subprocess.run([sys.executable, "-m", "assistant", *args], cwd=store.parent, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_fetch_from_a_folder_installs_verified_copies(tmp_path):
    store = tmp_path / "store"
    usb = tmp_path / "usb"
    shutil.copytree(SHARED / "models" / "kokoro-zh-voices", usb / "kokoro-zh-voices")
    (usb / "kokoro-zh-voices" / "zf_xiaoni.bin").write_bytes(b"not a voice")  # a damaged copy is not taken
    result = assistant("models", "fetch", "kokoro-zh-voices", "kws-zipformer-wenetspeech-3.3M", "--from",
                       str(usb), store=store)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "kokoro-zh-voices/zf_xiaoni.bin" in result.stderr
    assert "kws-zipformer-wenetspeech-3.3M/tokens.txt" in result.stderr
    assert (store / "kokoro-zh-voices" / "zf_xiaoxiao.bin").is_file()
    assert not (store / "kokoro-zh-voices" / "zf_xiaoni.bin").exists()

    result = assistant("models", "fetch", "kokoro-zh-voices", "kws-zipformer-wenetspeech-3.3M", "--from",
                       str(SHARED / "models"), store=store)
    assert result.returncode == 0, result.stderr
    assert "all 12 files of 2 model(s) present and verified" in result.stdout
    listed = assistant("models", "list", "kws-zipformer-wenetspeech-3.3M", store=store)
    assert listed.stdout.count("  ok ") == 4


def test_fetch_without_a_network_fails_with_one_line(tmp_path):
    result = assistant("models", "fetch", "kokoro-zh-voices", store=tmp_path / "store")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot download" in lines[0] and "--from" in lines[0]


def test_verify_reports_a_damaged_store_file(tmp_path):
    store = tmp_path / "store"
    voice = store / "kokoro-zh-voices" / "zf_xiaobei.bin"
    voice.parent.mkdir(parents=True)
    voice.write_bytes(b"\0" * 10)
    result = assistant("models", "verify", "kokoro-zh-voices", store=store)
    assert result.returncode == 1
    assert "bad hash" in result.stdout and "zf_xiaobei.bin" in result.stdout


def test_nothing_in_the_program_names_the_shared_folder():
    for folder in ("assistant", "states", "models"):  # config.toml neither
        for path in (ROOT / folder).rglob("*.py"):
            assert "../shared" not in path.read_text(encoding="utf-8"), path
    assert "../shared" not in (ROOT / "config.toml").read_text(encoding="utf-8")


def test_a_model_inside_a_wheel_is_taken_out_with_pip_and_verified(tmp_path):
    import hashlib
    import zipfile

    from models.manifest import Model, ModelFile

    payload = b"not really an onnx file" * 100
    wheel = tmp_path / "dist" / "demo_data-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("demo/data/model.onnx", payload)
        z.writestr("demo_data-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-data\nVersion: 1.0\n")
        z.writestr("demo_data-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("demo_data-1.0.dist-info/RECORD", "")
    model = Model(name="demo", kind="turn", description="", license="", pip=(), wheel=str(wheel),
                  files=(ModelFile("model.onnx", hashlib.sha256(payload).hexdigest(), len(payload),
                                   archive_member="demo/data/model.onnx"),))
    assets = Assets([], store=tmp_path / "store")
    assert assets.fetch_url(model) == ["demo/model.onnx"]
    assert (tmp_path / "store" / "demo" / "model.onnx").read_bytes() == payload
    bad = Model(name="bad", kind="turn", description="", license="", pip=(), wheel=str(wheel),
                files=(ModelFile("model.onnx", "0" * 64, len(payload), archive_member="demo/data/model.onnx"),))
    with pytest.raises(ModelError, match="wrong sha256"):
        assets.fetch_url(bad)
