"""Audio I/O: wav reading in any format, the replay device's timeline and acoustic loop, the
wav and null sinks, and the ALSA path on ALSA's `file` plugin (no sound card needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from assistant.audio.history import AudioHistory
from assistant.audio.replay import ReplayDevice
from assistant.audio.wav import BadAudioFile, NullSink, WavFileSink, WavFileSource, read_wav, write_wav
from assistant.clock import SampleClock
from tests.conftest import REAL, ROOT


def write_pcm(path: Path, frames: np.ndarray, rate: int, width: int) -> Path:
    """Write int frames (n, channels) as a PCM wav of ``width`` bytes per sample."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(frames.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        if width == 3:
            b = frames.astype("<i4").tobytes()
            w.writeframes(b"".join(b[i:i + 3] for i in range(0, len(b), 4)))
        else:
            w.writeframes(frames.astype({1: np.uint8, 2: "<i2", 4: "<i4"}[width]).tobytes())
    return path


def test_any_pcm_wav_is_read_as_16k_mono(tmp_path):
    voice = read_wav(REAL / "cmd_qiehuan_1.wav", 16000)
    t = np.arange(44100) / 44100
    tone = np.sin(2 * np.pi * 440 * t)
    stereo24 = write_pcm(tmp_path / "s24.wav", np.stack([tone, tone], 1) * 0.5 * (1 << 23), 44100, 3)
    mono8 = write_pcm(tmp_path / "u8.wav", (tone[:, None] * 0.5 * 127 + 128).round(), 44100, 1)
    for path in (stereo24, mono8):
        audio = read_wav(path, 16000)
        assert audio.dtype == np.float32 and len(audio) == 16000
        assert 0.45 < np.abs(audio[100:-100]).max() < 0.55
        spectrum = np.abs(np.fft.rfft(audio))
        assert abs(np.argmax(spectrum) - 440) <= 1  # 1 s at 16 kHz: one bin per Hz
    assert 1.8 < len(voice) / 16000 < 2.0 and voice.dtype == np.float32


def test_write_then_read_round_trips(tmp_path):
    audio = (0.3 * np.sin(np.arange(16000) / 10)).astype(np.float32)
    write_wav(tmp_path / "a.wav", audio, 16000)
    assert np.allclose(read_wav(tmp_path / "a.wav", 16000), audio, atol=1 / 32768)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]  # no temporary file left


def test_two_writers_of_one_path_never_share_a_temporary_file(tmp_path):
    # two benchmark processes caching the same utterance: each renames its own whole file
    from concurrent.futures import ThreadPoolExecutor

    audio = (0.3 * np.sin(np.arange(16000) / 10)).astype(np.float32)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: write_wav(tmp_path / "a.wav", audio, 16000), range(16)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]
    assert np.allclose(read_wav(tmp_path / "a.wav", 16000), audio, atol=1 / 32768)


def test_bad_files_raise_one_clear_error(tmp_path):
    (tmp_path / "x.wav").write_bytes(b"RIFF....WAVEjunk")
    with pytest.raises(BadAudioFile, match="not a readable PCM wav"):
        read_wav(tmp_path / "x.wav", 16000)


async def test_replay_device_plays_on_the_mic_timeline_and_echoes_it():
    rate, n = 16000, 320
    recording = (0.01 * np.ones(rate)).astype(np.float32)
    clock = SampleClock(rate)
    device = ReplayDevice(recording, clock, n, echo_gain=0.5, echo_delay_ms=40)
    reply = np.linspace(0.1, 0.2, 1600).astype(np.float32)
    heard = []
    async for chunk in device.chunks():
        heard.append(chunk)
        if len(heard) == 10:  # written while the 10th chunk (ending at 3200) is processed ...
            await device.speaker.write(reply)  # ... it plays from the next chunk on

    mic = np.concatenate(heard)
    played = device.played()
    assert len(played) == len(mic) == rate == clock.samples
    assert np.all(played[:3200] == 0) and np.allclose(played[3200:4800], reply)
    assert np.all(played[4800:] == 0)
    delay = 640  # 40 ms at 16 kHz
    expected = recording.copy()
    expected[3200 + delay:4800 + delay] += 0.5 * reply
    assert np.allclose(mic, expected, atol=1e-6)
    assert device.speaker.position == 1600


async def test_replay_device_clear_discards_queued_audio():
    clock = SampleClock(16000)
    device = ReplayDevice(np.zeros(3200, np.float32), clock, 320)
    chunks = device.chunks()
    await anext(chunks)
    await device.speaker.write(np.ones(16000, np.float32))
    await anext(chunks)
    device.speaker.clear()
    await device.speaker.wait_playout()
    rest = [c async for c in chunks]
    assert len(rest) == 8
    assert device.played()[640:].max() == 0 and device.played()[320:640].min() == 1


async def test_wav_source_paces_the_clock_and_sinks_collect(tmp_path):
    clock = SampleClock(16000)
    source = WavFileSource(REAL / "cmd_qiehuan_1.wav", clock, 320)
    chunks = [c async for c in source.chunks()]
    assert all(len(c) == 320 for c in chunks)
    assert clock.samples == 320 * len(chunks) and clock.now() == clock.samples / 16000
    sink = WavFileSink(tmp_path / "out.wav", 16000)
    for c in chunks:
        await sink.write(c)
    sink.close()
    assert sink.position == clock.samples
    assert np.allclose(read_wav(tmp_path / "out.wav", 16000), np.concatenate(chunks), atol=1 / 32768)
    null = NullSink(16000)
    await null.write(chunks[0])
    assert null.position == 320


def test_history_returns_audio_by_absolute_sample():
    h = AudioHistory(1000)
    x = np.arange(5000, dtype=np.float32)
    for i in range(0, 5000, 320):
        h.append(x[i:i + 320])
    assert h.start == 4000 and h.end == 5000
    assert np.array_equal(h.slice(4100, 4200), x[4100:4200])
    assert np.array_equal(h.slice(3000, 4010), x[4000:4010])
    assert len(h.slice(0, 10)) == 0


def file_plugin_env(folder: Path) -> dict[str, str]:
    """The environment for a process whose ALSA devices `tscap` and `tsplay` are folder/.asoundrc's."""
    (folder / ".asoundrc").write_text(f"""
pcm.tscap {{ type file  slave.pcm "null"  file "/dev/null"  infile "{folder}/in.raw"  format "raw" }}
pcm.tsplay {{ type file  slave.pcm "null"  file "{folder}/out.raw"  format "raw" }}
""", encoding="utf-8")
    from models.assets import default_store

    # HOME is moved for ALSA only: the model store stays where setup put the models (the VAD's, fetched
    # from its wheel, are nowhere else)
    return {**os.environ, "HOME": str(folder), "PYTHONPATH": str(ROOT), "TINGSHUO_MODEL_STORE": str(default_store())}


def run_on_file_plugin(folder: Path, module: str) -> subprocess.CompletedProcess[str]:
    """Run ``module`` with ALSA devices `tscap` (capture from folder/in.raw) and `tsplay` (playback
    into folder/out.raw) defined by the `file` plugin in folder/.asoundrc: no sound card needed."""
    env = file_plugin_env(folder)
    return subprocess.run([sys.executable, "-m", module], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_alsa_capture_and_playback_through_the_file_plugin(tmp_path):
    tone = (0.25 * np.sin(np.arange(16000) * 2 * np.pi * 300 / 16000) * 32767).astype("<i2")
    (tmp_path / "in.raw").write_bytes(tone.tobytes())
    result = run_on_file_plugin(tmp_path, "tests.alsa_probe")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert got["chunks"] == 25 and got["chunk_len"] == 320 and got["clock_samples"] == 8000
    assert np.allclose(got["samples"], tone[:4000] / 32768, atol=1e-4)  # captured exactly the infile
    assert got["position_after_playout"] == 8000
    assert got["position_after_second"] == 8000 + 1600
    played = np.frombuffer((tmp_path / "out.raw").read_bytes(), "<i2")
    expected = (np.clip(0.5 * np.sin(np.arange(8000) * 2 * np.pi * 440 / 16000), -1, 1) * 32767).round()
    assert len(played) == 9600
    assert np.array_equal(played[:8000], expected.astype("<i2"))
    assert "cannot open capture device 'no_such_device'" in got["missing_device_error"]


def test_live_session_on_alsa_devices(tmp_path):
    """The live path end to end: ALSA capture of a real request, the machine, ALSA playback."""
    from tests.conftest import real, session_of, silence

    mic = session_of(real("ask_who_are_you.wav"), silence(10.0))
    (tmp_path / "in.raw").write_bytes((mic * 32767).astype("<i2").tobytes())
    result = run_on_file_plugin(tmp_path, "tests.live_probe")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    transitions = [(e["from"], e["to"], e["trigger"]) for e in events if e["type"] == "state_changed"]
    assert transitions == [("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
                           ("thinking", "speaking", "first_audio"), ("speaking", "idle", "reply_done")]
    assert [e["text"] for e in events if e["type"] == "transcript"] == ["你是谁"]
    played = np.frombuffer((tmp_path / "out.raw").read_bytes(), "<i2")
    assert len(played) >= int(1.25 * 16000)  # the whole 1.25 s reply reached the speaker
    assert np.abs(played).max() > 3000


@pytest.mark.slow
def test_run_on_a_capture_that_has_ended_stays_real_time_and_stops_on_sigterm(tmp_path):
    """ALSA's `file` plugin over a `null` slave hands out silence as fast as it is read once its input
    file has ended. `assistant run` must hold capture to real time (the session clock, the recording
    and the CPU do not run away) and stop within a couple of seconds of SIGTERM."""
    import signal
    import time

    from tests.conftest import real

    (tmp_path / "in.raw").write_bytes((real("ask_who_are_you.wav")[:16000] * 32767).astype("<i2").tobytes())
    from models.assets import default_store

    env = {**file_plugin_env(tmp_path), "TINGSHUO_MODEL_STORE": str(default_store())}  # HOME moves, the models stay
    log = (tmp_path / "stderr.txt").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "assistant", "run", "--record", str(tmp_path / "rec"),
                             "--set", "audio.capture_device='tscap'", "--set", "audio.playback_device='tsplay'",
                             "--set", "wake.mode='keyword'", "--set", "log.format='json'"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 180
        while '"event": "ready"' not in (tmp_path / "stderr.txt").read_text("utf-8"):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr.txt").read_text("utf-8")
            time.sleep(0.2)
        listening = time.monotonic()
        time.sleep(4.0)  # the input file (1 s) has long ended
        cpu = _cpu_seconds(proc.pid)
        time.sleep(2.0)
        busy = _cpu_seconds(proc.pid) - cpu
        proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        code = proc.wait(timeout=10)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    assert code == 0, (tmp_path / "stderr.txt").read_text("utf-8")[-2000:]
    assert took < 3.0, f"stopped {took:.1f} s after SIGTERM"
    assert busy < 1.5, f"{busy:.2f} CPU-s in 2 s of silence"  # not a core spinning (2.0)
    (session,) = (tmp_path / "rec").iterdir()
    recorded_s = (session / "mic.wav").stat().st_size / 32000
    assert recorded_s < stopped - listening + 3.0, f"recorded {recorded_s:.0f} s in {stopped - listening:.0f} s"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children so far."""
    total = 0.0
    for p in [pid, *_children(pid)]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in found] + [g for c in found for g in _children(int(c))]


def _opens(*devices: object) -> Callable[..., object]:
    """A stand-in for ``alsa._open``: each call gives the next device, or raises it if it is an error."""
    queue = iter(devices)

    def open_next(*_: object) -> object:
        device = next(queue)
        if isinstance(device, Exception):
            raise device
        return device

    return open_next


class _FakeCapture:
    """A stand-in capture PCM: ``reads`` periods of a level, then the device is gone (``read`` raises)."""

    def __init__(self, level: int, reads: int | None) -> None:
        self.level, self.reads = level, reads
        self.closed = False

    def read(self) -> tuple[int, bytes]:
        if self.reads is not None:
            if self.reads <= 0:
                raise OSError("No such device")  # pyalsaaudio raises ALSAAudioError, an OSError-like error
            self.reads -= 1
        return 320, np.full(320, self.level, "<i2").tobytes()

    def close(self) -> None:
        self.closed = True


async def test_a_capture_device_that_goes_away_gives_silence_in_real_time_until_it_is_back(monkeypatch):
    import time

    from assistant.audio import alsa
    from assistant.audio.protocols import AudioDeviceError

    first = _FakeCapture(1000, reads=10)
    back = _FakeCapture(2000, reads=None)
    monkeypatch.setattr(alsa, "_open", _opens(first, AudioDeviceError("gone"), AudioDeviceError("gone"), back))
    monkeypatch.setattr(alsa, "REOPEN_S", 0.1)
    source = alsa.AlsaSource("fake", SampleClock(16000), 320)
    levels: list[int] = []
    started = time.monotonic()
    async for chunk in source.chunks():
        levels.append(round(float(chunk[0]) * 32768))
        if levels.count(2000) == 5:
            break
    took = time.monotonic() - started
    source.close()
    assert levels[:10] == [1000] * 10  # what the device gave before it went away
    outage = levels[10:levels.index(2000)]
    assert outage and set(outage) == {0}  # silence while it was gone: the pump went on
    assert levels[-5:] == [2000] * 5 and source.outages == 1 and first.closed
    assert took >= len(levels) * 0.02 - alsa.AHEAD_MAX_S - 0.05  # in real time (within its lead), not a flood


class _FakePlayback:
    """A stand-in playback PCM that takes ``writes`` periods, then is gone (``write`` raises)."""

    def __init__(self, writes: int | None) -> None:
        self.writes, self.taken = writes, 0

    def write(self, data: bytes) -> int:
        if self.writes is not None:
            if self.writes <= 0:
                raise OSError("No such device")
            self.writes -= 1
        self.taken += len(data) // 2
        return len(data) // 2

    def avail(self) -> int:
        return 10**6  # everything written has played

    def drop(self) -> None: ...

    def close(self) -> None: ...


async def test_a_playback_device_that_goes_away_lets_replies_end_and_is_opened_again(monkeypatch):
    import asyncio

    from assistant.audio import alsa
    from assistant.audio.protocols import AudioDeviceError

    first, back = _FakePlayback(writes=5), _FakePlayback(writes=None)
    monkeypatch.setattr(alsa, "_open", _opens(first, AudioDeviceError("gone"), back))
    monkeypatch.setattr(alsa, "REOPEN_S", 0.05)
    sink = alsa.AlsaSink("fake", 16000, buffer_ms=120)
    try:
        reply = np.full(16000, 0.2, np.float32)  # 1 s: the device goes away after 5 periods of it
        await sink.write(reply)
        await asyncio.wait_for(sink.wait_playout(), 5)  # the reply still ends
        await asyncio.sleep(0.2)
        await sink.write(reply[:3200])
        await asyncio.wait_for(sink.wait_playout(), 5)
    finally:
        sink.close()
    assert first.taken == 5 * sink.period and sink.outages == 1
    assert 3200 <= back.taken < 16000 + 3200 - first.taken  # what came while it was away was let go, not queued
