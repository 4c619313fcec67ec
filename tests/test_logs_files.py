"""Files where the XDG convention puts them, and log files that never outgrow their caps."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from assistant import config, logs


def test_the_database_folder_follows_xdg_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert config.load(None).data_dir() == tmp_path / "data" / "tingshuo"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert config.load(None).data_dir() == Path.home() / ".local" / "share" / "tingshuo"
    chosen = config.load(None, [f"tools.data_dir='{tmp_path / 'mine'}'"])
    assert chosen.data_dir() == tmp_path / "mine"  # a configured folder wins


def test_a_log_file_is_rotated_and_all_of_them_stay_under_the_total(tmp_path: Path) -> None:
    log = logs.RotatingFile(tmp_path / "t.log", max_bytes=1000, total_bytes=5000)
    line = json.dumps({"event": "a line of about a hundred bytes", "pad": "x" * 50}) + "\n"
    for _ in range(2000):  # 200 kB written
        log.write(line)
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["t.log", "t.log.1", "t.log.2", "t.log.3", "t.log.4"]
    assert all(f.stat().st_size <= 1000 for f in files)
    assert sum(f.stat().st_size for f in files) <= 5000
    assert all(json.loads(x) for f in files for x in f.read_text().splitlines())  # whole lines only


def test_run_logs_to_the_file_and_its_worker_beside_it(tmp_path: Path) -> None:
    cfg = config.load(None, [f"log.file='{tmp_path / 'logs' / 'tingshuo.log'}'", "log.file_max_mb=1",
                             "log.total_max_mb=4"])
    main, worker = logs.file_for(cfg), logs.file_for(cfg, "worker")
    assert main is not None and worker is not None
    assert (main.path.name, worker.path.name) == ("tingshuo.log", "tingshuo-worker.log")
    assert main.keep == worker.keep == 1  # 2 MB each: the current file and one rotated
    assert logs.file_for(config.load(None)) is None  # no file by default


def test_a_log_file_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    cfg = config.load(None, [f"log.file='{tmp_path / 'file' / 'x.log'}'"])
    with pytest.raises(config.ConfigError, match="log.file: cannot write"):
        logs.file_for(cfg)


def test_one_shot_commands_write_no_log_file(tmp_path: Path, cli_main) -> None:
    target = tmp_path / "never.log"
    code, _, _ = cli_main("config", "--set", f"log.file='{target}'")
    assert code == 0 and not target.exists()


def test_health_reads_memory_descriptors_and_threads_of_each_process() -> None:
    import os
    import threading

    from assistant import health

    before = health.process(os.getpid())
    assert before is not None and before["rss_mb"] > 10 and before["fds"] >= 3 and before["threads"] >= 1
    stop = threading.Event()
    extra = threading.Thread(target=stop.wait)
    extra.start()
    try:
        now = health.process(os.getpid())
        assert now is not None and now["threads"] == before["threads"] + 1
    finally:
        stop.set()
        extra.join()
    snap = health.snapshot({"main": os.getpid(), "worker": None, "gone": 2**22 + 12345})
    assert set(snap) == {"main"}  # a process not started, or gone, is left out


async def test_the_health_line_is_logged_at_once_and_then_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import os

    from assistant import health

    beats: list[dict[str, object]] = []
    third = asyncio.Event()

    class Log:
        def info(self, event: str, **fields: object) -> None:
            beats.append({"event": event, **fields})
            if len(beats) == 3:
                third.set()

    monkeypatch.setattr(health, "log", Log())
    task = asyncio.create_task(health.report_every(0.05, lambda: {"main": os.getpid()}))
    await asyncio.sleep(0)  # one turn of the loop: the task has run up to its first wait
    assert len(beats) == 1  # logged at once
    await asyncio.wait_for(third.wait(), 10)  # and again after each interval (awaited, not slept for)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(beats) >= 3 and all(b["event"] == "health" for b in beats)
    assert beats[0]["main"]["rss_mb"] > 10  # type: ignore[index]


def test_log_lines_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    # set up while one stream was stderr, logged after it was replaced and closed (as pytest does
    # between tests): the line reaches the new stream, and nothing raises
    import io

    import structlog

    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logs.setup("info", "json")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    structlog.get_logger("test").info("after the swap", n=1)
    assert '"event": "after the swap"' in second.getvalue()
