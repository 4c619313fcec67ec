"""A chat model behind an OpenAI-compatible HTTP server on this machine, streamed.

For a model served by llama.cpp's ``llama-server``, ``python -m llama_cpp.server`` or Ollama
(``/v1/chat/completions`` with ``"stream": true``, answered with server-sent events). Only the
standard library is used: ``http.client`` on the backend's worker thread, one event pulled at a
time, so cancelling the reply task lands between tokens.

The assistant is offline by design, so a base URL that is not on this machine is refused unless
the caller passes ``allow_remote=True``. ``stop()`` shuts the stream's socket down: the read in
flight on the worker returns at once, and the server sees the client leave and stops generating.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import socket
import threading
import urllib.parse
from collections.abc import AsyncIterator, Sequence
from typing import Any

from models.chat import EXAMPLES, SYSTEM_PROMPT, Example, History, Message
from models.protocols import ModelError
from models.worker import Worker

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine without asking a resolver (``localhost`` or a loopback IP)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAiLlm:
    """The ``Llm`` protocol on an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        model: str | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        examples: Sequence[Example] = EXAMPLES,
        temperature: float = 0.7,
        top_p: float = 0.9,
        repeat_penalty: float | None = 1.1,
        max_tokens: int = 160,
        history_turns: int = 3,
        timeout: float = 30.0,
        api_key: str | None = None,
        allow_remote: bool = False,
    ) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ModelError(f"llm: not an http(s) URL: {base_url!r}")
        if not allow_remote and not is_loopback(url.hostname):
            raise ModelError(f"llm: {base_url} is not on this machine and the assistant is offline by design "
                             "(pass allow_remote=True to use it anyway)")
        self.base_url = base_url.rstrip("/")
        self.model = model  # None: the first model the server lists, found by load()
        self.system_prompt = system_prompt
        self.examples = tuple(examples)
        self.temperature = temperature
        self.top_p = top_p
        self.repeat_penalty = repeat_penalty  # llama.cpp's sampler option; None leaves it out
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.history = History(history_turns)
        self._url = url
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._worker = Worker("llm")
        self._lock = threading.Lock()  # guards _conn, which stop() reaches from the event loop
        self._conn: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse | None = None  # worker thread only
        self._stopped = threading.Event()  # the current reply's stop flag; a fresh one per reply

    def load(self) -> None:
        """Check that the server answers (and learn its model name if none was given)."""
        listed = self._worker.call(self._get_json, "/models")
        if self.model is None:
            try:
                self.model = str(listed["data"][0]["id"])
            except (KeyError, IndexError, TypeError):
                raise ModelError(f"llm: {self.base_url}/models lists no model") from None

    def close(self) -> None:
        self.stop()
        self._worker.call(self._end_stream)
        self._worker.close()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            conn = self._conn
        _shut(conn)

    def reply(self, text: str) -> AsyncIterator[str]:
        """Stream the reply to ``text``; from this call on, ``stop()`` applies to this reply."""
        self._stopped = threading.Event()
        return self._stream_reply(text, self._stopped)

    async def _stream_reply(self, text: str, stopped: threading.Event) -> AsyncIterator[str]:
        said: list[str] = []
        conn: http.client.HTTPConnection | None = None
        try:
            chat = self.history.messages(self.system_prompt, text, self.examples)
            conn = await self._worker.run(self._open, chat, stopped)
            while (piece := await self._worker.run(self._step, stopped)) is not None:
                said.append(piece)
                yield piece
        finally:
            stopped.set()
            _shut(conn)  # if abandoned mid-stream, this tells the server to stop generating
            self.history.remember(text, "".join(said))

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._url.scheme == "https" else http.client.HTTPConnection
        return kind(self._url.hostname or "", self._url.port, timeout=self.timeout)

    def _unreachable(self, exc: BaseException) -> ModelError:
        reason = str(exc) or type(exc).__name__
        return ModelError(f"llm: no OpenAI-compatible server reachable at {self.base_url} ({reason})")

    def _get_json(self, endpoint: str) -> Any:
        """GET ``endpoint`` below the base URL and parse the JSON answer (worker thread)."""
        conn = self._connection()
        try:
            conn.request("GET", self._url.path.rstrip("/") + endpoint,
                         headers={"Accept": "application/json", **self._auth})
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(exc) from None
        finally:
            conn.close()
        if response.status != 200:
            raise ModelError(f"llm: {self.base_url}{endpoint} answered HTTP {response.status}: {_one_line(body)}")
        try:
            return json.loads(body)
        except ValueError:
            raise ModelError(f"llm: {self.base_url}{endpoint} did not answer JSON: {_one_line(body)}") from None

    def _open(self, messages: list[Message], stopped: threading.Event) -> http.client.HTTPConnection:
        """Send the chat and read the response headers (worker thread)."""
        self._end_stream()
        request: dict[str, Any] = {
            "messages": messages,
            "stream": True,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.model is not None:
            request["model"] = self.model
        if self.repeat_penalty is not None:
            request["repeat_penalty"] = self.repeat_penalty
        conn = self._connection()
        with self._lock:
            self._conn = conn
        path = self._url.path.rstrip("/") + "/chat/completions"
        try:
            conn.request("POST", path, json.dumps(request, ensure_ascii=False).encode(),
                         {"Content-Type": "application/json", "Accept": "text/event-stream", **self._auth})
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._end_stream()
            if stopped.is_set():
                return conn  # stop() shut the socket while we were still asking
            raise self._unreachable(exc) from None
        if response.status != 200:
            body = response.read(500)
            self._end_stream()
            raise ModelError(f"llm: {self.base_url}/chat/completions answered HTTP {response.status}: "
                             f"{_one_line(body)}")
        self._response = response
        return conn

    def _step(self, stopped: threading.Event) -> str | None:
        """The next piece of text (worker thread), or None once the stream is over or stopped.

        Server-sent events: ``data:`` lines accumulate until a blank line ends the event; other
        fields and comments are skipped; ``[DONE]`` ends the stream, and so does the end of the
        connection (an event cut off by it is dropped, as the SSE standard says).
        """
        data: list[str] = []
        while self._response is not None and not stopped.is_set():
            try:
                raw = self._response.readline()
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if stopped.is_set():
                    break
                self._end_stream()
                raise ModelError(f"llm: the stream from {self.base_url} broke ({exc})") from None
            if not raw:
                break  # the server closed the stream, or stop() shut the socket
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line.removeprefix("data:").removeprefix(" "))
            elif not line and data:
                event, data = "\n".join(data), []
                if event.strip() == "[DONE]":
                    break
                piece = self._content(event)
                if piece:
                    return piece
        self._end_stream()
        return None

    def _content(self, event: str) -> str | None:
        """The text in one streamed chunk; a ModelError if the server reports an error instead."""
        try:
            chunk = json.loads(event)
        except ValueError:
            raise ModelError(f"llm: {self.base_url} streamed something that is not JSON: {_one_line(event)}") from None
        if not isinstance(chunk, dict):
            return None
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise ModelError(f"llm: {self.base_url} reported an error mid-reply: {_one_line(str(message))}")
        try:
            content = chunk["choices"][0]["delta"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        return content if isinstance(content, str) else None

    def _end_stream(self) -> None:
        """Close the current connection (worker thread)."""
        with self._lock:
            conn, self._conn = self._conn, None
        self._response = None
        if conn is not None:
            conn.close()


def _shut(conn: http.client.HTTPConnection | None) -> None:
    """Shut down ``conn``'s socket from any thread: a blocked read on the worker returns at once.

    ``socket.socket.shutdown`` is called on the plain socket even under TLS: SSLSocket's own
    shutdown also tears down its TLS state, which the reading thread may be using.
    """
    sock = conn.sock if conn is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _one_line(text: bytes | str, limit: int = 200) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"
