"""``assistant run --record DIR`` and the replay of what it saved.

A live session runs on ALSA's `file` plugin (tests/record_probe.py, in a subprocess) with a session
recorder; its folder must hold the microphone exactly as captured, the playback on the microphone's
timeline and the session's events, and replaying that folder must take the same turn. The wav files
grow while they are written and must stay readable, and survive a crash but for the last second.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.app import Parts
from assistant.audio.recorder import GrowingWav
from assistant.audio.reference import PlayedAudio
from assistant.audio.wav import read_wav, write_wav
from assistant.replay import replay
from models.assets import Assets
from models.protocols import Backends
from models.sherpa_vad import silero_model_path
from models.silero_vad import SileroVad
from tests.conftest import ROOT, make_config, real, session_of, silence
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts
from tests.test_audio import run_on_file_plugin

pytestmark = pytest.mark.slow

RATE = 16000
TURN = [("idle", "listening", "wake"), ("listening", "thinking", "speech_end"),
        ("thinking", "speaking", "first_audio"), ("speaking", "idle", "reply_done")]
REPLY = "我是听说。"
REPLY_S = len(REPLY) * ToneTts().seconds_per_char  # the tone ToneTts plays for it: 1.25 s


def pcm16(path: Path) -> tuple[wave._wave_params, np.ndarray]:
    """The header and the samples of a 16-bit wav, read with the stdlib as any other program would."""
    with wave.open(str(path), "rb") as w:
        return w.getparams(), np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int32)


def transitions(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["from"], e["to"], e["trigger"]) for e in events if e["type"] == "state_changed"]


def at(events: list[dict[str, Any]], trigger: str) -> float:
    return next(e["t"] for e in events if e["type"] == "state_changed" and e["trigger"] == trigger)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One live session recorded through the ALSA file plugin: a real request, then silence."""
    home = tmp_path_factory.mktemp("alsa")
    infile = (session_of(real("ask_who_are_you.wav"), silence(10.0)) * 32767).astype("<i2")
    (home / "in.raw").write_bytes(infile.tobytes())
    result = run_on_file_plugin(home, "tests.record_probe")  # records under $HOME/rec
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return {"home": home, "infile": infile.astype(np.int32), "folder": Path(lines[-1]),
            "events": [json.loads(line) for line in lines[:-1]]}


def test_run_record_saves_the_microphone_the_playback_and_the_events(recorded):
    folder, events = recorded["folder"], recorded["events"]
    assert folder.parent == recorded["home"] / "rec"
    assert re.fullmatch(r"session-\d{8}-\d{6}", folder.name), folder.name
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl", "mic.wav", "played.wav"]
    assert transitions(events) == TURN

    # mic.wav: the microphone exactly as captured (the file plugin captures silence past the infile).
    mic_params, mic = pcm16(folder / "mic.wav")
    assert (mic_params.nchannels, mic_params.sampwidth, mic_params.framerate) == (1, 2, RATE)
    infile = recorded["infile"]
    n = min(len(mic), len(infile))
    assert n >= int(at(events, "reply_done") * RATE)  # the whole session up to the reply's end
    assert np.abs(mic[:n] - infile[:n]).max() <= 1  # int16 precision (captured v/32768, written x32767)
    assert not mic[n:].any()

    # played.wav: the playback, sample for sample on the microphone's timeline.
    played_params, played = pcm16(folder / "played.wav")
    assert (played_params.nchannels, played_params.sampwidth, played_params.framerate) == (1, 2, RATE)
    assert len(played) == len(mic)
    loud = np.flatnonzero(np.abs(played) > 0.02 * 32767)  # ToneTts plays a 0.1 amplitude sine
    assert len(loud), "nothing played"
    start, end = loud[0] / RATE, (loud[-1] + 1) / RATE
    speech_end, first_audio = at(events, "speech_end"), at(events, "first_audio")
    # silence while the user spoke: a reply prepared ahead may start in the very chunk (20 ms) whose
    # audio decided the endpoint, and the events' times are rounded to the millisecond
    assert not played[:int((speech_end - 0.021) * RATE)].any()
    assert speech_end - 0.021 <= start <= first_audio + 0.1  # the reply begins as the machine starts speaking
    assert end - start == pytest.approx(REPLY_S, abs=0.05)  # and all of it is there,
    assert np.diff(loud).max() < int(0.002 * RATE)  # in one piece (only the sine's zero crossings dip)
    assert 0.08 < np.abs(played[loud[0]:loud[-1] + 1]).max() / 32767 < 0.12
    assert not played[loud[-1] + int(0.05 * RATE):].any()  # silence after it

    # events.jsonl: the very events the session published.
    saved = [json.loads(line) for line in (folder / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert saved == events
    assert [e["type"] for e in saved] == [e["type"] for e in events]
    assert [e["text"] for e in saved if e["type"] == "transcript"] == ["你是谁"]


@pytest.mark.parametrize("cancel", ["false", "true"])
async def test_a_recorded_session_replays_with_its_playback_as_the_reference(recorded, tmp_path, monkeypatch,
                                                                             cancel):
    folder, live = recorded["folder"], recorded["events"]
    mic, played = read_wav(folder / "mic.wav", RATE), read_wav(folder / "played.wav", RATE)
    taken: list[np.ndarray] = []  # what the audio pump hands the echo canceller as the reference
    original_take = PlayedAudio.take

    def take(self: PlayedAudio, n: int) -> np.ndarray:
        chunk = original_take(self, n)
        taken.append(chunk.copy())
        return chunk

    monkeypatch.setattr(PlayedAudio, "take", take)
    vad = SileroVad(silero_model_path(Assets()))
    vad.load()
    try:
        backends = Backends(vad=vad, asr=ScriptedAsr("你是谁"), llm=ScriptedLlm(REPLY), tts=ToneTts())
        out = tmp_path / "out"
        summary = await replay(Parts(make_config("dialog.follow_up_s=0", f"echo.cancel={cancel}"), backends), mic, out,
                               reference=played)
    finally:
        vad.close()
    events = [json.loads(line) for line in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert transitions(events) == transitions(live) == TURN
    assert [e["text"] for e in events if e["type"] == "transcript"] == ["你是谁"]
    assert len(summary["turns"]) == 1
    # The same audio, the same VAD: the request ends at the same sample as in the room.
    assert at(events, "speech_end") == pytest.approx(at(live, "speech_end"), abs=0.021)
    # The reference is the recorded playback, sample for sample, not the replay's new one.
    reference = np.concatenate(taken)
    assert len(reference) == len(mic)
    assert np.array_equal(reference, played)


def test_a_growing_wav_is_readable_while_it_is_written(tmp_path):
    path = tmp_path / "grow.wav"
    signal = (0.5 * np.sin(np.arange(3 * RATE) * 2 * np.pi * 330 / RATE)).astype(np.float32)
    expected = (signal * 32767).round().astype(np.int32)
    gw = GrowingWav(path, RATE)
    params, data = pcm16(path)
    assert (params.nchannels, params.sampwidth, params.framerate, params.nframes) == (1, 2, RATE, 0)
    assert len(data) == 0
    updates = 0
    for i in range(0, len(signal), 480):  # 30 ms chunks: the header is due after 1.02 s, then 2.04 s
        gw.write(signal[i:i + 480])
        params, data = pcm16(path)  # readable at any moment, by another reader
        assert params.framerate == RATE and len(data) == params.nframes
        assert np.array_equal(data, expected[:params.nframes])
        assert gw.samples - params.nframes < RATE  # behind by less than a second
        if gw._since_update == 0:  # the header has just been brought up to date
            updates += 1
            assert params.nframes == gw.samples
    assert updates == 2
    gw.close()
    gw.close()  # twice is harmless
    params, data = pcm16(path)
    assert params.nframes == 3 * RATE and np.array_equal(data, expected)
    assert path.stat().st_size == 44 + 2 * 3 * RATE
    assert np.array_equal(read_wav(path, RATE), expected / 32768)  # and the project reads it too


CRASH = """
import os, sys
import numpy as np
from pathlib import Path
from assistant.audio.recorder import SessionRecorder

rec = SessionRecorder(Path(sys.argv[1]), 16000)
audio = (0.5 * np.sin(np.arange(2 * 16000 + 8000) * 2 * np.pi * 330 / 16000)).astype(np.float32)
for i in range(0, len(audio), 320):
    rec(audio[i:i + 320], 0.5 * audio[i:i + 320])
os._exit(1)  # a crash: no close(), no flush, no header brought up to date
"""


def test_a_crash_loses_at_most_the_last_second(tmp_path):
    folder = tmp_path / "session"
    result = subprocess.run([sys.executable, "-c", CRASH, str(folder)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 1, result.stderr
    audio = (0.5 * np.sin(np.arange(2 * RATE + RATE // 2) * 2 * np.pi * 330 / RATE)).astype(np.float32)
    for name, gain in (("mic.wav", 1.0), ("played.wav", 0.5)):
        params, data = pcm16(folder / name)
        assert params.framerate == RATE
        assert 2.0 <= params.nframes / RATE <= 2.5, name
        assert np.array_equal(data, (gain * audio[:params.nframes] * 32767).round().astype(np.int32))
        assert len(read_wav(folder / name, RATE)) == params.nframes


def test_replay_of_a_folder_without_mic_wav_is_one_line_and_exit_2(tmp_path, cli_main):
    folder = tmp_path / "session-20250101-120000"
    folder.mkdir()
    write_wav(folder / "played.wav", silence(1.0), RATE)
    out = tmp_path / "out"
    code, stdout, err = cli_main("replay", str(folder), "--out", str(out))
    assert code == 2 and stdout == ""
    assert len(err) == 1, err
    assert err[0].startswith("assistant: ") and "without mic.wav" in err[0] and str(folder) in err[0]
    assert not out.exists()


def test_replay_refuses_echo_on_a_recorded_folder(tmp_path, cli_main):
    folder = tmp_path / "session-20250101-120000"
    folder.mkdir()
    write_wav(folder / "mic.wav", session_of(silence(0.5), 0.1 * np.ones(8000, np.float32)), RATE)
    write_wav(folder / "played.wav", silence(1.0), RATE)
    out = tmp_path / "out"
    code, stdout, err = cli_main("replay", str(folder), "--out", str(out), "--echo", "0.3:40")
    assert code == 2 and stdout == ""
    assert len(err) == 1, err
    assert err[0].startswith("assistant: ") and "--echo" in err[0] and str(folder) in err[0]
    assert not out.exists()


def test_a_recording_stops_growing_at_what_a_wav_header_can_count(tmp_path, monkeypatch):
    from assistant.audio import recorder as rec_mod

    monkeypatch.setattr(rec_mod, "MAX_DATA_BYTES", 2 * 1000)
    wav = rec_mod.GrowingWav(tmp_path / "full.wav", 16000)
    wav.write(np.zeros(800, np.float32))
    wav.write(np.zeros(800, np.float32))  # would pass the limit: dropped, with one warning
    wav.close()
    assert wav.full and wav.samples == 800
    with wave.open(str(tmp_path / "full.wav")) as w:
        assert w.getnframes() == 800


def test_a_long_recording_is_rotated_and_only_the_last_folders_are_kept(tmp_path):
    from itertools import count

    from assistant.audio.recorder import SessionRecorder
    from assistant.audio.wav import read_wav
    from assistant.events import PlaybackStarted

    names = count(2)
    rec = SessionRecorder(tmp_path / "s1", 16000, max_s=1.0, keep=2, next_folder=lambda: tmp_path / f"s{next(names)}")
    chunk = np.full(320, 0.1, np.float32)
    for i in range(175):  # 3.5 s in 20 ms chunks
        rec(chunk, chunk * 0)
        if i == 160:
            rec.event(3.2, PlaybackStarted())
    rec.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s3", "s4"]  # s1 and s2 rotated out
    assert len(read_wav(tmp_path / "s3" / "mic.wav", 16000)) == 16000  # a whole second, no more
    assert len(read_wav(tmp_path / "s4" / "mic.wav", 16000)) == 8000
    assert "playback_started" in (tmp_path / "s4" / "events.jsonl").read_text("utf-8")
    assert rec.folders == [tmp_path / "s3", tmp_path / "s4"]
