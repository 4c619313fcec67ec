"""config.toml is the complete, commented reference; bad keys and values are refused by name."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from assistant.config import Config, ConfigError, describe, load

ROOT = Path(__file__).resolve().parent.parent


def test_the_shipped_config_toml_states_every_default():
    shipped = load(ROOT / "config.toml")
    assert shipped == Config(base_dir=ROOT)
    keys = {k for k, _, _ in describe()}
    raw = tomllib.loads((ROOT / "config.toml").read_text(encoding="utf-8"))
    written = {f"{section}.{key}" for section, table in raw.items() for key in table}
    assert written == keys


def test_every_key_in_config_toml_has_a_comment_above_it():
    lines = (ROOT / "config.toml").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if "=" in line and not line.startswith("#"):
            above = lines[i - 1]
            assert above.startswith("#") or (above.startswith("[") and lines[i - 2].startswith("#")), line


@pytest.mark.parametrize(("overrides", "message"), [
    (["vad.threshold=2.0"], "vad.threshold: must be between 0.05 and 0.95, got 2.0"),
    (["vad.treshold=0.4"], "unknown config key: vad.treshold"),
    (["nosuch.key=1"], "unknown config key: nosuch"),
    (["audio.chunk_ms=20.5"], "audio.chunk_ms: expected a whole number"),
    (["audio.chunk_ms=true"], "audio.chunk_ms: expected a whole number"),
    (["barge_in.enabled=1"], "barge_in.enabled: expected true or false"),
    (["wake.mode=sometimes"], "wake.mode: must be one of keyword, always; got 'sometimes'"),
    (["wake.keywords=[1, 2]"], "wake.keywords: expected a list of non-empty strings"),
    (["log.level=3"], "log.level: expected a string"),
    (["vad=1"], "vad: expected a table"),
    (["vad.threshold"], "expected dotted.key=VALUE"),
])
def test_bad_values_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as err:
        load(None, overrides)
    assert message in str(err.value)


def test_overrides_are_toml_values_and_bare_words_are_strings():
    cfg = load(None, ["vad.endpoint_silence_ms=350", "wake.mode=always", 'wake.keywords=["你好小智"]',
                      "dialog.follow_up_s=0", "speaking.echo_window_ms=0"])
    assert cfg.vad.endpoint_silence_ms == 350
    assert cfg.wake.mode == "always"
    assert cfg.wake.keywords == ("你好小智",)
    assert cfg.dialog.follow_up_s == 0.0 and isinstance(cfg.dialog.follow_up_s, float)
    assert cfg.max_duration_s("speaking") == 120.0



def test_file_errors_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[vad\nthreshold = 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(bad)


def test_model_dirs_are_relative_to_the_config_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[models]\ndirs = ["m", "/abs/models"]\n', encoding="utf-8")
    assert load(path).model_dirs() == [tmp_path / "m", Path("/abs/models")]


def test_config_is_frozen():
    cfg = load(None)
    with pytest.raises(AttributeError):
        cfg.vad.threshold = 0.1  # type: ignore[misc]


def test_the_readme_reference_lists_every_key_with_its_default():
    import json

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for key, default, _ in describe():
        shown = list(default) if isinstance(default, tuple) else default
        assert f"| `{key}` | `{json.dumps(shown, ensure_ascii=False)}` |" in readme, key
