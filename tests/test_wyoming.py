"""`assistant serve` against a client written with the `wyoming` library: describe, transcribe a real
recording, synthesize (whole and streamed, heard back by the ASR) and detect wake words in real
recordings, on the real models."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncTcpServer
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice
from wyoming.wake import Detect, Detection, NotDetected

from assistant import app
from assistant.audio.resample import resample
from assistant.audio.wav import read_wav
from assistant.pipeline import PipelineOptions
from assistant.wyoming.handler import Services
from assistant.wyoming.info import describe
from assistant.wyoming.serve import serve
from tests.conftest import REAL, SHARED, make_config, real, says
from tests.sessions import wake_and_request

CORPUS = SHARED / "audio" / "corpus"
WAKE_WORDS = ("小爱同学", "小度小度", "小智")
TIMEOUT_S = 120.0  # for one reply from the real models on a busy 2-core machine


@pytest.fixture(scope="module")
def loaded() -> Iterator[Services]:
    words = ", ".join(f"'{w}'" for w in WAKE_WORDS)
    cfg = make_config(f"wake.keywords=[{words}]", "tts.phrase_cache=false")
    with app.services(cfg) as services:
        yield services


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def serving(services: Services) -> AsyncIterator[int]:
    """``serve()`` on a free loopback port until the block ends; yields the port."""
    number = free_port()
    cfg = make_config(f"wyoming.uri='tcp://127.0.0.1:{number}'")
    stop = asyncio.Event()
    task = asyncio.create_task(serve(cfg, AsyncTcpServer("127.0.0.1", number), services, stop))
    for _ in range(500):  # until it accepts a connection
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", number)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        writer.close()
        break
    try:
        yield number
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


@pytest.fixture
async def port(loaded: Services) -> AsyncIterator[int]:
    """The real models served, with this test's own locks (each test has its own loop)."""
    async with serving(dataclasses.replace(loaded, asr_lock=asyncio.Lock(), tts_lock=asyncio.Lock(),
                                           kws_user=None)) as number:
        yield number


async def receive(client: AsyncTcpClient, until: str) -> list[Event]:
    """Events up to and including the first of type ``until``."""
    got: list[Event] = []
    while True:
        event = await asyncio.wait_for(client.read_event(), TIMEOUT_S)
        assert event is not None, f"the server closed the connection after {[e.type for e in got]}"
        got.append(event)
        if event.type == until:
            return got


async def send_audio(client: AsyncTcpClient, audio: np.ndarray, rate: int = 16000, channels: int = 1,
                     cut_at: bytes | None = None) -> None:
    """``audio`` as a stream; ``cut_at``: its bytes split after each occurrence of that byte, as
    Home Assistant's speech-to-text view passes on a request body (chunks of any length)."""
    await client.write_event(AudioStart(rate=rate, width=2, channels=channels).event())
    pcm = np.repeat((np.clip(audio, -1, 1) * 32767).astype("<i2"), channels).tobytes()
    pieces = pcm.split(cut_at) if cut_at else [pcm[i:i + 2048 * channels] for i in range(0, len(pcm), 2048 * channels)]
    for i, piece in enumerate(pieces):
        tail = cut_at if cut_at and i < len(pieces) - 1 else b""
        await client.write_event(AudioChunk(rate=rate, width=2, channels=channels, audio=piece + tail).event())
    await client.write_event(AudioStop().event())


def audio_of(events: list[Event]) -> tuple[np.ndarray, int]:
    starts = [AudioStart.from_event(e) for e in events if AudioStart.is_type(e.type)]
    pcm = b"".join(AudioChunk.from_event(e).audio for e in events if AudioChunk.is_type(e.type))
    return np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0, starts[0].rate


async def heard_back(services: Services, audio: np.ndarray, rate: int) -> str:
    return await services.asr.transcribe(resample(audio, rate, 16000))


async def test_describe_lists_the_mandarin_asr_the_voices_and_the_wake_words(port: int) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await receive(client, "info"))[-1])
    assert [m.languages for m in info.asr[0].models] == [["zh", "zh-CN", "zh-cn"]]
    assert info.asr[0].models[0].name == "whisper-base"
    voices = [v.name for v in info.tts[0].voices]
    assert "zf_xiaoxiao" in voices and "zm_yunxi" in voices and len(voices) == 8
    assert info.tts[0].supports_synthesize_streaming
    assert [(m.name, m.phrase) for m in info.wake[0].models] == [(w, w) for w in WAKE_WORDS]


async def test_ping(port: int) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Ping(text="在吗").event())
        assert Pong.from_event((await receive(client, "pong"))[-1]).text == "在吗"


@pytest.mark.parametrize(("rate", "channels", "cut_at"), [(16000, 1, None), (48000, 2, None), (16000, 1, b"\n")])
async def test_a_real_recording_is_transcribed(port: int, rate: int, channels: int, cut_at: bytes | None) -> None:
    audio = resample(real("ask_who_are_you.wav"), 16000, rate)
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="zh").event())
        await send_audio(client, audio, rate, channels, cut_at)
        transcript = Transcript.from_event((await receive(client, "transcript"))[-1])
    assert says(transcript.text, "你是谁"), transcript.text


async def test_a_wake_word_said_in_the_same_breath_is_taken_off_the_transcript(port: int) -> None:
    """A satellite sends the request as it was said, 嘿，小智你在吗: Home Assistant must get 你在吗."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="zh-cn").event())
        await send_audio(client, wake_and_request())
        text = Transcript.from_event((await receive(client, "transcript"))[-1]).text
    assert says(text, "在吗") and not says(text, "小智"), text


async def test_a_whole_text_is_spoken_and_heard_back(port: int, loaded: Services) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text="今天天气很好，我们出去走走吧。").event())
        events = await receive(client, "audio-stop")
    assert events[0].type == "audio-start" and AudioStart.from_event(events[0]).rate == 24000
    audio, rate = audio_of(events)
    assert len(audio) / rate > 1.5
    text = await heard_back(loaded, audio, rate)
    assert says(text, "天气") and says(text, "出去"), text


async def test_a_streamed_text_is_spoken_before_the_rest_of_it_is_written(port: int, loaded: Services) -> None:
    whole = "今天天气很好，我们出去走走吧。"
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="zm_yunxi")).event())
        await client.write_event(SynthesizeChunk(text="今天天气很好，").event())
        first = await receive(client, "audio-chunk")  # nothing more has been written yet
        for piece in ("我们出去", "走走吧。"):
            await client.write_event(SynthesizeChunk(text=piece).event())
        await client.write_event(Synthesize(text=whole, voice=SynthesizeVoice(name="zm_yunxi")).event())
        await client.write_event(SynthesizeStop().event())
        events = first + await receive(client, "synthesize-stopped")
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types.count("audio-start") == 1 and types.count("audio-stop") == 1
    assert types[-2:] == ["audio-stop", "synthesize-stopped"]
    assert loaded.tts.voice == "zm_yunxi"  # type: ignore[attr-defined]
    audio, rate = audio_of(events)
    text = await heard_back(loaded, audio, rate)
    assert says(text, "天气") and says(text, "出去"), text  # spoken once: the compat copy is not said again
    assert not says(text.replace("天气", "", 1), "天气"), text


async def test_an_unknown_voice_speaks_with_the_configured_one(port: int, loaded: Services) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize(text="你好。", voice=SynthesizeVoice(name="en_amy")).event())
        events = await receive(client, "audio-stop")
    assert len(audio_of(events)[0]) > 0
    assert loaded.tts.voice == "zf_xiaoxiao"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("clip", "names", "found"), [
    (CORPUS / "039.wav", None, "小爱同学"),
    (CORPUS / "043.wav", None, "小度小度"),
    (CORPUS / "039.wav", ["小度小度"], None),  # heard, but not a word this client asked for
    (REAL / "ask_who_are_you.wav", None, None),
])
async def test_wake_words_are_detected_in_real_recordings(port: int, clip: Path, names: list[str] | None,
                                                          found: str | None) -> None:
    audio = np.concatenate([read_wav(clip, 16000), np.zeros(16000, np.float32)])
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Detect(names=names).event())
        await send_audio(client, audio)
        events = await receive(client, "detection" if found else "not-detected")
    if found:
        detection = Detection.from_event(events[-1])
        assert detection.name == found
        assert 0 < (detection.timestamp or 0) <= 1000 * len(audio) / 16000
    else:
        assert NotDetected.is_type(events[-1].type)


async def test_one_detector_serves_one_stream_at_a_time(port: int) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as first, AsyncTcpClient("127.0.0.1", port) as second:
        await first.write_event(Detect().event())
        await first.write_event(Ping().event())
        await receive(first, "pong")  # the first connection holds the detector now
        await second.write_event(Detect().event())
        refused = Error.from_event((await receive(second, "error"))[-1])
        assert "another stream" in refused.text
        await send_audio(first, np.zeros(8000, np.float32))
        await receive(first, "not-detected")  # the stream ended: the detector is free again
        await second.write_event(Detect().event())
        await send_audio(second, np.zeros(8000, np.float32))
        await receive(second, "not-detected")


async def test_bad_audio_is_refused_with_an_error_and_the_connection_stays(port: int) -> None:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe().event())
        await client.write_event(AudioStart(rate=16000, width=3, channels=1).event())
        error = Error.from_event((await receive(client, "error"))[-1])
        assert "24-bit" in error.text
        await client.write_event(Describe().event())
        await receive(client, "info")


class Written:
    """A TTS double that keeps the texts it was given (what the pipeline made of the request)."""

    sample_rate = 24000

    def __init__(self) -> None:
        self.texts: list[str] = []

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None: ...

    async def synthesize(self, text: str) -> AsyncIterator[np.ndarray]:
        self.texts.append(text)
        yield np.full(2400, 0.1, np.float32)


async def test_the_text_is_normalized_for_the_ear_and_cut_into_clauses() -> None:
    cfg = make_config()
    tts = Written()
    services = Services(describe(cfg, ["matcha"], []), asr=None, tts=tts, kws=None,  # type: ignore[arg-type]
                        options=PipelineOptions.from_config(cfg))
    async with serving(services) as number, AsyncTcpClient("127.0.0.1", number) as client:
        await client.write_event(Synthesize(text="会议在2026年12月3日15:30，共12页。").event())
        await receive(client, "audio-stop")
    spoken = "".join(tts.texts)
    assert "二零二六年十二月三日" in spoken and "三点半" in spoken and "十二页" in spoken, tts.texts
    assert len(tts.texts) >= 2  # clause by clause


def test_serve_refuses_a_bad_address_in_one_line(cli_main) -> None:
    code, _, err = cli_main("serve", "--set", "wyoming.uri='http://127.0.0.1:10700'")
    assert code == 2 and len(err) == 1 and "wyoming.uri" in err[0] and "tcp://HOST:PORT" in err[0]


def test_serve_refuses_a_taken_port_before_loading_any_model(cli_main) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _, err = cli_main("serve", "--set", f"wyoming.uri='tcp://127.0.0.1:{port}'")
    assert code == 2 and len(err) == 1 and "cannot listen" in err[0], err


async def test_zeroconf_advertises_the_services_where_home_assistant_looks() -> None:
    """``_wyoming._tcp`` on the LAN address, found by a second mDNS client; loopback is never advertised."""
    from zeroconf.asyncio import AsyncZeroconf

    from assistant.config import ConfigError
    from assistant.net import lan_address
    from assistant.wyoming.endpoint import advertise

    assert await advertise(AsyncTcpServer("127.0.0.1", 10700), "tingshuo", "wyoming") is None
    host = lan_address()
    if host is None:  # a machine with no LAN at all: said so, not advertised
        with pytest.raises(ConfigError, match="no LAN address"):
            await advertise(AsyncTcpServer("0.0.0.0", 10700), "tingshuo", "wyoming")
        return
    name, port = f"tingshuo-test-{free_port()}", free_port()
    advertised = await advertise(AsyncTcpServer("0.0.0.0", port), name, "wyoming")
    assert advertised is not None
    browser = AsyncZeroconf()
    try:
        info = await browser.async_get_service_info("_wyoming._tcp.local.", f"{name}._wyoming._tcp.local.",
                                                    timeout=5000)
    finally:
        await browser.async_close()
        await advertised.async_close()
    assert info is not None and info.port == port and socket.inet_aton(host) in info.addresses


async def test_the_status_page_hears_of_requests_and_refusals() -> None:
    from assistant.status.board import StatusBoard

    cfg = make_config()
    board = StatusBoard()
    services = Services(describe(cfg, ["matcha"], []), asr=None, tts=Written(), kws=None,  # type: ignore[arg-type]
                        options=PipelineOptions.from_config(cfg), board=board)
    async with serving(services) as number, AsyncTcpClient("127.0.0.1", number) as client:
        await client.write_event(Describe().event())
        await receive(client, "info")
        await client.write_event(Detect().event())  # no wake words here
        await receive(client, "error")
    assert services.served["describe"] == 1 and services.served["detect"] == 1
    assert [e["stage"] for e in board.errors] == ["wyoming detect"] and "wake words" in board.errors[0]["message"]
