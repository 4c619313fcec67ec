"""The status page over HTTP: a replay of a real recording shows up in its JSON, its live stream and
its timeline pictures; a token guards it; a LAN address without one is refused."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import aiohttp
import numpy as np
import pytest

from assistant.config import ConfigError
from assistant.net import ListenError
from assistant.status.board import StatusBoard
from assistant.status.web import StatusPage, page_for
from tests.conftest import make_config, real, silence
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts
from tests.test_wyoming import free_port


def page_on(port: int, *overrides: str) -> StatusPage:
    cfg = make_config(f"status.address='127.0.0.1:{port}'", "status.sample_s=0.5", *overrides)
    return StatusPage(cfg, StatusBoard(cfg.status.turns, front_end="replay"), kinds=("vad",))


def one_request() -> np.ndarray:
    return np.concatenate([silence(0.5), real("ask_who_are_you.wav"), silence(3.0)])


async def test_a_replay_shows_on_the_page_and_in_its_json(run_replay) -> None:
    port = free_port()
    async with page_on(port) as page, aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
        await run_replay(one_request(), asr=ScriptedAsr("你是谁"), llm=ScriptedLlm("我是听说。"), tts=ToneTts(),
                         subscribers=(page.board,))
        status = await (await http.get("/api/status")).json()
        turns = await (await http.get("/api/turns")).json()
        html = await (await http.get("/")).text()
        picture = await http.get("/turns/1.png")
        body = await picture.read()
        missing = await http.get("/turns/99.png")
    assert status["state"] == "idle" and status["turns_total"] == 1 and status["front_end"] == "replay"
    [vad] = status["models"]
    assert vad["model"] == "silero-vad" and len(vad["sha256"]) == 64 and vad["path"].endswith(".onnx")
    assert status["memory"] and status["memory"][-1]["rss_mb"]["main"] > 10
    [turn] = turns
    assert (turn["transcript"], turn["reply"]) == ("你是谁", "我是听说。")
    assert turn["end_of_speech_to_first_audio_s"] is not None and turn["endpoint_wait_s"] > 0
    assert "听说" in html and "/api/events" in html
    assert picture.content_type == "image/png" and body.startswith(b"\x89PNG")
    assert missing.status == 404


async def test_the_live_stream_follows_the_state_through_a_turn(run_replay) -> None:
    port = free_port()
    seen: list[str] = []
    async with page_on(port) as page, aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
        stream = await http.get("/api/events")

        async def read() -> None:
            async for line in stream.content:
                if line.startswith(b"data: "):
                    change = json.loads(line[6:])
                    if change["kind"] == "state":
                        seen.append(change["state"])
                    if change["kind"] == "turn":
                        return

        reader = asyncio.create_task(read())
        await run_replay(one_request(), "dialog.follow_up_s=0", asr=ScriptedAsr("你是谁"),
                         llm=ScriptedLlm("我是听说。"), tts=ToneTts(), subscribers=(page.board,), realtime=True)
        await asyncio.wait_for(reader, 10)
    assert seen[0] == "idle"  # the state when the page connected
    assert seen[1:] == ["listening", "thinking", "speaking", "idle"]


async def test_a_token_guards_every_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "token"
    secret.write_text("s3cret-token\n", encoding="utf-8")
    secret.chmod(0o600)
    port = free_port()
    page = page_on(port, f"status.token_file='{secret}'")
    async with page, aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
        refused = [(await http.get(route)).status for route in ("/", "/api/status", "/api/turns", "/api/events")]
        wrong = (await http.get("/api/status?token=guess")).status
        by_query = (await http.get("/api/status?token=s3cret-token")).status
        by_header = (await http.get("/api/turns", headers={"Authorization": "Bearer s3cret-token"})).status
    assert refused == [401, 401, 401, 401] and wrong == 401
    assert by_query == 200 and by_header == 200


def test_a_lan_address_needs_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINGSHUO_STATUS_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="needs a token"):
        page_for(make_config("status.address='0.0.0.0:8765'"), "run")
    open_file = tmp_path / "token"
    open_file.write_text("x", encoding="utf-8")
    open_file.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        page_for(make_config("status.address='0.0.0.0:8765'", f"status.token_file='{open_file}'"), "run")
    monkeypatch.setenv("TINGSHUO_STATUS_TOKEN", "from-the-environment")
    assert page_for(make_config(f"status.address='0.0.0.0:{free_port()}'"), "run").token == "from-the-environment"


def test_a_bad_or_taken_address_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="HOST:PORT"):
        page_for(make_config("status.address='8765'"), "run")
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ListenError, match="status.address"):
            page_for(make_config(f"status.address='127.0.0.1:{port}'"), "run")
    assert page_for(make_config("status.address=''"), "run").where is None  # no page at all


def test_the_board_keeps_only_the_last_turns() -> None:
    from assistant.events import SpeechEnded, StateChanged

    board = StatusBoard(turns=3)
    for i in range(10):
        board(float(i), SpeechEnded(audio_s=1.0, speech_end_t=float(i)))
        board(float(i), StateChanged(from_="thinking", to="idle", trigger="reply_done"))
    assert [t["number"] for t in board.turn_list()] == [8, 9, 10] and board.turn_count == 10
    assert os.getpid() == board.status()["pid"]
