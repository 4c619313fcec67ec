"""A whole house: a real Home Assistant core with Tingshuo in it twice — `assistant serve` as its
speech-to-text and text-to-speech, and a Tingshuo satellite whose requests its voice pipeline answers.

Home Assistant adds both through its Wyoming integration (the config flow a user clicks through),
a zh-cn pipeline uses Tingshuo's Whisper and Kokoro with its own conversation agent, and the
satellite hears 小智，打开客厅灯 (said by the real TTS, in one breath): the living-room light goes on,
and the satellite plays Home Assistant's answer and reports it played.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from wyoming.server import AsyncTcpServer

from assistant import app
from assistant.audio.wav import read_wav
from assistant.replay import replay
from assistant.wyoming.handler import Services
from assistant.wyoming.link import HaLink
from assistant.wyoming.satellite import Satellite
from tests import home_assistant
from tests.conftest import make_config, silence
from tests.sessions import spoken
from tests.test_wyoming import free_port, serving

pytestmark = pytest.mark.slow

SETTINGS = ("wake.keywords=['小智']", "tools.hotwords=['客厅灯', '卧室灯', '窗帘', '空调']", "tts.phrase_cache=false")


class Api:
    """Home Assistant's REST and websocket APIs, with the long-lived token."""

    def __init__(self, house: home_assistant.House, http: aiohttp.ClientSession) -> None:
        self.house, self.http = house, http
        self.auth = {"Authorization": f"Bearer {house.token}"}
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = iter(range(1, 1 << 30))

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self.http.post(f"{self.house.url}{path}", json=body, headers=self.auth) as r:
            assert r.status == 200, f"{path}: HTTP {r.status} {await r.text()}\n{self.house.log()}"
            data: dict[str, Any] = await r.json()
            return data

    async def states(self) -> list[dict[str, Any]]:
        async with self.http.get(f"{self.house.url}/api/states", headers=self.auth) as r:
            data: list[dict[str, Any]] = await r.json()
            return data

    async def call(self, kind: str, **fields: Any) -> Any:
        if self.ws is None:
            self.ws = await self.http.ws_connect(f"{self.house.url}/api/websocket")
            await self.ws.receive_json()
            await self.ws.send_json({"type": "auth", "access_token": self.house.token})
            assert (await self.ws.receive_json())["type"] == "auth_ok"
        number = next(self.ids)
        await self.ws.send_json({"id": number, "type": kind, **fields})
        while (reply := await asyncio.wait_for(self.ws.receive_json(), 60)).get("id") != number:
            continue
        assert reply.get("success"), f"{kind}: {reply.get('error')}\n{self.house.log()}"
        return reply.get("result")

    async def add_wyoming(self, port: int) -> dict[str, Any]:
        """Settings → Devices & services → Add integration → Wyoming Protocol, host and port."""
        form = await self.post("/api/config/config_entries/flow", {"handler": "wyoming"})
        done = await self.post(f"/api/config/config_entries/flow/{form['flow_id']}",
                               {"host": "127.0.0.1", "port": port})
        assert done.get("type") == "create_entry", done
        return done


@asynccontextmanager
async def house_with_tingshuo(folder: Path, services: Services) -> AsyncIterator[tuple[Api, str, str]]:
    """Home Assistant with `assistant serve` added; yields the API and the serve's stt and tts entities."""
    house = await home_assistant.start(folder, free_port(), voice=True)
    try:
        async with aiohttp.ClientSession() as http, serving(services) as port:
            api = Api(house, http)
            await api.add_wyoming(port)
            entities = {s["entity_id"] for s in await api.states()}
            stt = next(e for e in entities if e.startswith("stt."))
            tts = next(e for e in entities if e.startswith("tts."))
            yield api, stt, tts
    finally:
        await home_assistant.stop(house)


async def test_a_satellite_request_switches_a_light_through_home_assistant(tmp_path: Path) -> None:
    cfg = make_config(*SETTINGS)
    with app.services(cfg) as loaded:
        services = dataclasses.replace(loaded, asr_lock=asyncio.Lock(), tts_lock=asyncio.Lock())
        request = await spoken(services.tts, "小智，打开客厅灯。")  # one breath, as people say it
        async with house_with_tingshuo(tmp_path / "home-assistant", services) as (api, stt, tts):
            assert (stt, tts) == ("stt.tingshuo_asr", "tts.tingshuo_tts")
            pipeline = await api.call("assist_pipeline/pipeline/create", name="听说", language="zh-cn",
                                      conversation_engine="homeassistant", conversation_language="zh-cn",
                                      stt_engine=stt, stt_language="zh-CN", tts_engine=tts, tts_language="zh-CN",
                                      tts_voice="zf_xiaoxiao", wake_word_entity=None, wake_word_id=None)
            await api.call("assist_pipeline/pipeline/set_preferred", pipeline_id=pipeline["id"])
            summary, played = await satellite_turn(api, np.concatenate([silence(0.5), request, silence(8.0)]),
                                                   tmp_path / "satellite")
            light = next(s for s in await api.states() if s["entity_id"] == "light.living_room_light")
            log = api.house.log()
    assert light["state"] == "on", (summary, log)
    [turn] = summary["turns"]
    assert turn["reply"] == "客厅灯已打开"  # Home Assistant's answer, spoken by Tingshuo's TTS through it …
    assert played > 0.8  # … and played on the satellite (seconds of sound)
    assert not summary["errors"]


async def satellite_turn(api: Api, audio: np.ndarray, out: Path) -> tuple[dict[str, Any], float]:
    """The satellite added to Home Assistant, then ``audio`` as its microphone; (summary, seconds played)."""
    port = free_port()
    cfg = make_config("wake.mode='keyword'", *SETTINGS, "dialog.follow_up_s=0", "satellite.reply_timeout_s=60",
                      f"satellite.uri='tcp://127.0.0.1:{port}'")
    link = HaLink(cfg.satellite.reply_timeout_s)
    connected = asyncio.Event()
    attach = link.attach

    def attached(send: Any) -> None:
        attach(send)
        connected.set()

    link.attach = attached  # type: ignore[method-assign]
    played = asyncio.Event()
    report = link.played

    async def reported() -> None:
        await report()
        played.set()

    link.played = reported  # type: ignore[method-assign]
    with app.satellite(cfg, link) as parts:
        async with Satellite(parts.cfg, link, AsyncTcpServer("127.0.0.1", port)) as satellite:
            await api.add_wyoming(port)  # Home Assistant sees a satellite in its info and runs it
            await asyncio.wait_for(connected.wait(), 30)
            summary = await replay(parts, audio, out, realtime=True, subscribers=[satellite])
            await asyncio.wait_for(played.wait(), 30)
    sound = read_wav(out / "played.wav", 16000)
    return summary, float(np.count_nonzero(np.abs(sound) > 0.02)) / 16000
