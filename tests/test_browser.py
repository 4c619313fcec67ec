"""The status page in a real browser: Debian's chromium, headless, driven over its DevTools protocol.

The page is loaded, a replay of a real recording runs, and the page's own state badge (fed by its
live stream) is seen to go through the turn; the finished turn shows in its table, and a screenshot
is taken (``TINGSHUO_SCREENSHOT=PATH`` keeps it, for the README).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from assistant.status.board import StatusBoard
from assistant.status.web import StatusPage
from tests.conftest import make_config, real, silence
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts
from tests.test_wyoming import free_port

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class DevTools:
    """One browser tab over the Chrome DevTools Protocol."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.ids = itertools.count(1)
        self.events: list[str] = []  # the names of the events the browser sent so far

    async def call(self, method: str, timeout_s: float = 60.0, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:
            message = await self._next(timeout_s)
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def open(self, url: str) -> None:
        """Load ``url`` in the tab and wait for its load event."""
        await self.call("Page.enable")
        await self.call("Page.navigate", url=url)
        while "Page.loadEventFired" not in self.events:
            await self._next()

    async def _next(self, timeout_s: float = 60.0) -> dict[str, Any]:
        message: dict[str, Any] = await asyncio.wait_for(self.socket.receive_json(), timeout_s)
        if "method" in message:
            self.events.append(message["method"])
        return message

    async def evaluate(self, expression: str, timeout_s: float = 60.0) -> Any:
        """The value of ``expression`` in the page (a promise is awaited, for at most ``timeout_s``)."""
        result = await self.call("Runtime.evaluate", timeout_s, expression=expression, awaitPromise=True,
                                 returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")


@asynccontextmanager
async def browser(profile: Path) -> AsyncIterator[DevTools]:
    assert CHROMIUM is not None, "chromium is not installed (setup.sh installs Debian's chromium)"
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", "--window-size=1280,1100", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        endpoint = ""
        while not endpoint:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, "chromium ended before it listened for DevTools"
            if "DevTools listening on ws://" in line:
                endpoint = line.split("ws://", 1)[1].split("/", 1)[0]
        async with aiohttp.ClientSession() as http:
            targets = await (await http.get(f"http://{endpoint}/json/list")).json()
            page = next(t for t in targets if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                yield DevTools(socket)
    finally:
        proc.terminate()
        await proc.wait()


WATCH_STATES = """
new Promise((resolve) => {
  window.seenStates = [];
  const badge = document.getElementById("state");
  new MutationObserver(() => window.seenStates.push(badge.textContent))
    .observe(badge, {childList: true, characterData: true, subtree: true});
  const live = document.getElementById("live");
  const ready = () => live.textContent === "live";
  if (ready()) resolve(true);
  new MutationObserver(() => ready() && resolve(true)).observe(live, {childList: true, subtree: true});
})
"""

TURN_SHOWN = """
new Promise((resolve) => {
  const rows = document.getElementById("turns");
  const done = () => rows.rows.length > 0 && rows.textContent.includes("我是听说");
  if (done()) resolve(rows.textContent);
  new MutationObserver(() => done() && resolve(rows.textContent)).observe(rows, {childList: true, subtree: true});
})
"""


SHOW_TIMELINE = """
new Promise((resolve) => {
  const img = document.getElementById("timeline");
  img.onload = () => resolve(img.naturalWidth);
  img.onerror = () => resolve(0);
  document.querySelector("#turns a").click();
})
"""


async def test_the_page_shows_a_live_replay_in_a_real_browser(run_replay, tmp_path: Path) -> None:
    port = free_port()
    cfg = make_config(f"status.address='127.0.0.1:{port}'", "status.sample_s=0.5")
    page = StatusPage(cfg, StatusBoard(cfg.status.turns, front_end="replay"), kinds=("vad",))
    audio = np.concatenate([silence(0.5), real("ask_who_are_you.wav"), silence(3.0)])
    async with page, browser(tmp_path / "profile") as tab:
        await tab.open(f"http://127.0.0.1:{port}/")
        await asyncio.wait_for(tab.evaluate(WATCH_STATES), 60)  # the page is up and its stream connected
        assert await tab.evaluate("document.getElementById('state').textContent") == "idle"
        await run_replay(audio, "dialog.follow_up_s=0", asr=ScriptedAsr("你是谁"), llm=ScriptedLlm("我是听说。"),
                         tts=ToneTts(), subscribers=(page.board,), realtime=True)
        rows = await asyncio.wait_for(tab.evaluate(TURN_SHOWN), 30)
        seen = await tab.evaluate("window.seenStates")
        memory = await tab.evaluate("document.getElementById('memory').childElementCount")
        picture = await asyncio.wait_for(tab.evaluate(SHOW_TIMELINE), 60)
        shot = await tab.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    states = [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
    assert states[-4:] == ["listening", "thinking", "speaking", "idle"], seen
    assert "你是谁" in rows
    assert memory >= 1  # the memory chart has its line
    assert picture > 500  # the turn's timeline picture, drawn by the server
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    for path in (tmp_path / "status.png", os.environ.get("TINGSHUO_SCREENSHOT")):
        if path:
            await asyncio.to_thread(Path(path).write_bytes, png)
