"""Device control through Home Assistant: a request the router takes for one (打开客厅灯, 把空调调到
二十四度, 关上窗帘 …) goes to Home Assistant's conversation API, and what it answers is said.

``POST {ha.url}/api/conversation/process`` with the transcript and ``ha.language``, authorised by a
long-lived access token read from a file only its owner can read (or ``$TINGSHUO_HA_TOKEN``); the
token is never logged or shown. When Home Assistant cannot be reached, refuses the token or does not
answer in time, the reply says so: it never claims a device was switched.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import structlog

from assistant.config import Config, ConfigError
from assistant.net import SecretError, read_secret

log = structlog.get_logger("home")

TOKEN_ENV = "TINGSHUO_HA_TOKEN"
UNREACHABLE = "我现在连不上 Home Assistant，没能控制{device}。"
REFUSED = "Home Assistant 不接受我的访问令牌，没能控制{device}。"
NO_WORDS = "Home Assistant 没有说结果。"
NOT_UNDERSTOOD = "Home Assistant 没有听懂，{device}没有变。"
# Home Assistant's zh-cn sentences are strict: no 请/帮我 in front, no 吧 behind, and its own verbs.
_POLITE = re.compile(r"^(请你?|帮我|麻烦你?|给我|你)+|(吧|呀|啊|哦|好吗|可以吗|谢谢)+$")
_VERBS = (("关上", "关闭"), ("拉上", "关闭"), ("合上", "关闭"), ("拉开", "打开"), ("开一下", "打开"),
          ("关一下", "关闭"))
_CJK = re.compile(r"[\u4e00-\u9fff]")


def command(text: str) -> str:
    """A transcript as Home Assistant's sentences take it: 请关上窗帘吧 → 关闭窗帘."""
    text = _POLITE.sub("", text.strip().rstrip("。！!？?，,"))
    for said, known in _VERBS:
        text = text.replace(said, known)
    return text


class HomeError(RuntimeError):
    """Home Assistant gave no answer; ``refused``: it did not accept the token."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class Said:
    """Home Assistant's answer: the sentence to speak, and what kind of answer it was."""

    speech: str
    kind: str  # "action_done", "query_answer" or "error" (it understood nothing it could do)
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class HomeAssistant:
    """A Home Assistant to send device commands to."""

    url: str
    token: str = field(repr=False)  # never in a log line or a message
    language: str = "zh-cn"
    agent_id: str = ""
    timeout_s: float = 5.0

    async def process(self, text: str) -> Said:
        import aiohttp

        body: dict[str, Any] = {"text": text, "language": self.language}
        if self.agent_id:
            body["agent_id"] = self.agent_id
        endpoint = f"{self.url.rstrip('/')}/api/conversation/process"
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            async with aiohttp.ClientSession(timeout=timeout) as http, http.post(
                    endpoint, json=body, headers={"Authorization": f"Bearer {self.token}"}) as response:
                if response.status in (401, 403):
                    raise HomeError(f"Home Assistant at {self.url} refused the access token", refused=True)
                if response.status != 200:
                    raise HomeError(f"Home Assistant at {self.url} answered HTTP {response.status}")
                data = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            reason = f"{type(exc).__name__} {exc}".strip()
            raise HomeError(f"Home Assistant at {self.url} did not answer: {reason}") from None
        return _said(data)


def _said(data: Any) -> Said:
    """The answer in a conversation API response (``response.speech.plain.speech``)."""
    try:
        response = data["response"]
        speech = str(response.get("speech", {}).get("plain", {}).get("speech", "")).strip()
        targets = tuple(t.get("name", "") for t in response.get("data", {}).get("success", []) if isinstance(t, dict))
        return Said(speech, str(response.get("response_type", "")), targets)
    except (KeyError, TypeError, AttributeError):
        raise HomeError("Home Assistant's answer is not a conversation response") from None


def from_config(cfg: Config) -> HomeAssistant | None:
    """The configured Home Assistant, or None without ``ha.url``; a ConfigError for a bad one."""
    h = cfg.ha
    if not h.url:
        return None
    parsed = urlparse(h.url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"ha.url: {h.url!r} is not an http:// or https:// address")
    try:
        token = read_secret(cfg.path(h.token_file) if h.token_file else None, "ha.token_file", TOKEN_ENV)
    except SecretError as exc:
        raise ConfigError(str(exc)) from None
    if token is None:
        raise ConfigError(f"ha.url is set but there is no access token: put a long-lived access token in a file "
                          f"of mode 0600 named by ha.token_file, or in ${TOKEN_ENV}")
    return HomeAssistant(h.url, token, h.language, h.agent_id, h.timeout_s)


class HomeReply:
    """Home Assistant's answer to one device command, the text source of its reply's pipeline."""

    def __init__(self, home: HomeAssistant, device: str) -> None:
        self.home, self.device = home, device
        self.said: Said | None = None

    def stop(self) -> None:
        """The request is cancelled with the reply's task."""

    async def reply(self, text: str) -> AsyncIterator[str]:
        try:
            self.said = await self.home.process(command(text))
        except HomeError as exc:
            log.warning("home assistant did not act", error=str(exc), device=self.device)
            yield (REFUSED if exc.refused else UNREACHABLE).format(device=self.device)
            return
        log.info("home assistant answered", kind=self.said.kind, speech=self.said.speech,
                 targets=list(self.said.targets))
        if self.said.kind == "error" and not _CJK.search(self.said.speech):  # its untranslated "Sorry, …"
            yield NOT_UNDERSTOOD.format(device=self.device)
            return
        yield self.said.speech or NO_WORDS
