"""The board's deployment files: the example config loads, the systemd unit runs commands that exist."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from assistant import config
from assistant.cli import _parser

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def test_the_board_config_selects_the_npu_backends():
    cfg = config.load(DEPLOY / "config.rk3576.toml")
    assert (cfg.models.tts, cfg.models.llm, cfg.models.sherpa_provider) == ("matcha-rknn", "rkllm", "cpu")
    assert cfg.npu.acoustic_core != cfg.npu.vocoder_core
    assert all(Path(p).is_absolute() for p in (cfg.rkllm.library, cfg.rkllm.model, cfg.matcha.acoustic_model,
                                               cfg.matcha.vocoder, cfg.matcha.espeak_lib))


def test_the_systemd_unit_runs_existing_commands_resident():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "tingshuo.service", encoding="utf-8")
    service = unit["Service"]
    assert service["Type"] == "notify" and service["Restart"] == "on-failure"
    assert int(service["WatchdogSec"]) >= 10 and service["MemoryMax"].endswith("G")
    lines = (DEPLOY / "tingshuo.service").read_text(encoding="utf-8").splitlines()
    environment = dict(line.removeprefix("Environment=").split("=", 1) for line in lines
                       if line.startswith("Environment="))  # a key systemd allows many times
    assert set(environment) >= {"TINGSHUO_CONFIG", "TINGSHUO_MODEL_STORE"}
    board = config.load(DEPLOY / "config.rk3576.toml")
    state = Path("/var/lib") / service["StateDirectory"]  # created for, and owned by, the service user
    assert board.data_dir() == state and board.path(board.rkllm.prompt_cache).parent == state
    parser = _parser()
    for key in ("ExecStartPre", "ExecStart"):
        argv = shlex.split(service[key])
        assert argv[0].endswith("/assistant")
        parser.parse_args(argv[1:])  # exits (SystemExit) on a command or option that does not exist
