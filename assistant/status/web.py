"""The status page over HTTP (aiohttp, on the assistant's own loop).

``/`` the page; ``/api/status`` and ``/api/turns`` the same as JSON; ``/api/events`` the live
changes as server-sent events; ``/turns/N.png`` a turn's timeline picture. On loopback no token is
needed; any other address must be given one (``status.token_file`` or ``$TINGSHUO_STATUS_TOKEN``),
which every request then carries as ``?token=`` or ``Authorization: Bearer``. The token is never logged.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import tempfile
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import structlog
from aiohttp import web

from assistant.config import Config, ConfigError
from assistant.net import ListenError, SecretError, is_loopback, probe, read_secret
from assistant.status.board import StatusBoard
from assistant.tasks import TaskScope

log = structlog.get_logger("status")

TOKEN_ENV = "TINGSHUO_STATUS_TOKEN"
T = TypeVar("T")


def address(cfg: Config) -> tuple[str, int] | None:
    """(host, port) of ``status.address``, or None when the page is off; a ConfigError if unusable."""
    text = cfg.status.address.strip()
    if not text:
        return None
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"status.address: {text!r} is not HOST:PORT, e.g. 127.0.0.1:8765 (empty: no page)")
    return host, int(port)


class StatusPage:
    """The page's server for the life of a front end (``async with``)."""

    def __init__(self, cfg: Config, board: StatusBoard, kinds: tuple[str, ...] | None = None) -> None:
        self.cfg, self.board, self.kinds = cfg, board, kinds
        self.where = address(cfg)
        secret = cfg.path(cfg.status.token_file) if cfg.status.token_file else None
        try:
            self.token = read_secret(secret, "status.token_file", TOKEN_ENV) if self.where is not None else None
        except SecretError as exc:
            raise ConfigError(str(exc)) from None
        if self.where is not None and not is_loopback(self.where[0]) and self.token is None:
            raise ConfigError(f"status.address {cfg.status.address} is not loopback: the page needs a token "
                              f"(status.token_file, or ${TOKEN_ENV}); or keep it on 127.0.0.1")
        self.runner: web.AppRunner | None = None
        self.tasks = TaskScope("status")
        self.pictures: dict[int, bytes] = {}

    @property
    def url(self) -> str | None:
        return None if self.where is None else f"http://{self.where[0]}:{self.where[1]}/"

    async def __aenter__(self) -> StatusPage:
        if self.where is None:
            return self
        app = web.Application(middlewares=[self._guard])
        app.add_routes([web.get("/", self._page), web.get("/api/status", self._status),
                        web.get("/api/turns", self._turns), web.get("/api/events", self._events),
                        web.get(r"/turns/{number:\d+}.png", self._picture)])
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        host, port = self.where
        try:
            await web.TCPSite(self.runner, host, port).start()
        except OSError as exc:
            await self.runner.cleanup()
            raise ListenError(f"status.address {host}:{port}: cannot listen: {exc.strerror or exc} "
                              "(set status.address to another port, or empty for no page)") from None
        self.tasks.spawn(self.board.sample_every(self.cfg.status.sample_s), "memory")
        self.tasks.spawn(self._list_models(), "models")
        log.info("status page", url=self.url)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.tasks.cancel()
        for queue in list(self.board.watchers):
            queue.put_nowait({"kind": "end"})
        if self.runner is not None:
            await self.runner.cleanup()

    async def _list_models(self) -> None:
        self.board.models = await asyncio.to_thread(model_files, self.cfg, self.kinds)

    # -- requests --------------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.token is not None:
            given = request.query.get("token") or request.headers.get("Authorization", "").removeprefix("Bearer ")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return web.Response(status=401, text="a token is needed: open the page as /?token=TOKEN\n")
        response: web.StreamResponse = await handler(request)
        return response

    async def _page(self, request: web.Request) -> web.Response:
        html = files("assistant.status").joinpath("page.html").read_text(encoding="utf-8")
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def _status(self, request: web.Request) -> web.Response:
        return _json(self.board.status())

    async def _turns(self, request: web.Request) -> web.Response:
        return _json(self.board.turn_list())

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await response.prepare(request)
        queue = self.board.watch()
        try:
            await response.write(_sse({"kind": "state", "state": self.board.state, "since": self.board.state_since}))
            while (change := await queue.get())["kind"] != "end":
                await response.write(_sse(change))
        except ConnectionError:
            pass  # the page was closed
        finally:
            self.board.unwatch(queue)
        return response

    async def _picture(self, request: web.Request) -> web.Response:
        number = int(request.match_info["number"])
        turn = self.board.turn(number)
        if turn is None:
            raise web.HTTPNotFound(text=f"turn {number} is no longer kept\n")
        if number not in self.pictures or turn.number == self.board.turn_count:  # the newest may still grow
            self.pictures[number] = await asyncio.to_thread(_plot, turn.records, f"turn {number}")
            for old in [n for n in self.pictures if self.board.turn(n) is None]:
                del self.pictures[old]
        return web.Response(body=self.pictures[number], content_type="image/png")


def _json(data: Any) -> web.Response:
    return web.Response(text=json.dumps(data, ensure_ascii=False), content_type="application/json")


def _sse(change: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(change, ensure_ascii=False)}\n\n".encode()


def _plot(records: list[dict[str, Any]], title: str) -> bytes:
    from assistant.timeline import plot_turn

    with tempfile.TemporaryDirectory(prefix="tingshuo-status-") as folder:
        path = Path(folder) / "turn.png"
        plot_turn(records, path, title)
        return path.read_bytes()


def model_files(cfg: Config, kinds: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Each configured model file (of ``kinds``, default all): where it is, its size and its sha256,
    the one its backend verified when it loaded (so nothing is hashed again here)."""
    from assistant.backends import assets_for, configured_models

    assets, rows = assets_for(cfg), []
    for model in configured_models(cfg):
        if kinds is not None and model.kind not in kinds:
            continue
        for f in model.files:
            path = assets.located(model, f)
            rows.append({"model": model.name, "path": str(path) if path else "not found", "sha256": f.sha256,
                         "size": path.stat().st_size if path else 0})
    return rows


def page_for(cfg: Config, front_end: str, pids: Callable[[], dict[str, int | None]] | None = None,
             kinds: tuple[str, ...] | None = None) -> StatusPage:
    """The status page of a front end, checked (address, token, a free port) before any model loads."""
    page = StatusPage(cfg, StatusBoard(cfg.status.turns, pids, front_end), kinds)
    if page.where is not None:
        probe(page.where[0], page.where[1], "status.address")
    return page


async def with_page(page: StatusPage | None, running: Callable[[], Awaitable[T]]) -> T:
    """``running()``, with the status page (if any) up beside it."""
    if page is None:
        return await running()
    async with page:
        return await running()
