"""The room, remembered (assistant/audio/room_memory.py): the linear canceller's echo path read back,
taught to a new canceller, and kept between sessions by the echo defence, on real recordings played
back at half level 40 ms late (as the hands-free tests hear them) with a weaker reflection after."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant.audio.linear_echo import LinearEchoCanceller
from assistant.audio.room_memory import REHEARSAL_S, RoomMemory
from assistant.clock import SampleClock
from assistant.events import EventBus, PlaybackFinished
from states.echo_defence import EchoDefence
from tests.conftest import make_config, real

RATE = 16000
CHUNK = 512


def room(played: np.ndarray) -> np.ndarray:
    """The microphone: ``played`` at 0.5 after 40 ms, and at 0.15 after 55 ms."""
    mic = np.zeros_like(played)
    mic[640:] += 0.5 * played[:-640]
    mic[880:] += 0.15 * played[:-880]
    return mic


@pytest.fixture(scope="module")
def learnt() -> np.ndarray:
    """The path a canceller learnt over 10 s of a real voice."""
    voice = real("greeting_10s.wav")[:10 * RATE]
    canceller = LinearEchoCanceller(RATE)
    canceller.process(room(voice), voice)
    path = canceller.response()
    canceller.close()
    return path


def residual_db(canceller: LinearEchoCanceller, played: np.ndarray) -> np.ndarray:
    """Per 32 ms window of audible echo: the canceller's output under the microphone, in dB."""
    mic = room(played)
    out = np.concatenate([canceller.process(mic[i:i + CHUNK], played[i:i + CHUNK])
                          for i in range(0, len(mic) - CHUNK + 1, CHUNK)])
    n = len(out) // CHUNK
    heard = np.mean(mic[:n * CHUNK].reshape(n, CHUNK) ** 2, axis=1)
    left = np.mean(out[:n * CHUNK].reshape(n, CHUNK) ** 2, axis=1)
    loud = heard > 10 ** (-45 / 10)
    return (10 * np.log10(left[loud] + 1e-12) - 10 * np.log10(heard[loud]))


def test_the_path_read_back_is_the_room(learnt):
    assert len(learnt) == 2048  # 128 ms at 16 kHz
    assert int(np.argmax(learnt)) == 640 and learnt[640] == pytest.approx(0.5, abs=0.05)
    assert learnt[880] == pytest.approx(0.15, abs=0.05)
    assert np.abs(np.delete(learnt, [640, 880])).max() < 0.05


def test_a_rehearsed_canceller_knows_the_room_from_the_first_words(learnt):
    reply = real("car_commands_68s.wav")[5 * RATE:7 * RATE]  # another voice than the one it learnt from
    rehearsal = real("car_commands_68s.wav")[20 * RATE:int((20 + REHEARSAL_S) * RATE)]
    new, warm = LinearEchoCanceller(RATE), LinearEchoCanceller(RATE)
    warm.rehearse(rehearsal, learnt)
    cold_db, warm_db = residual_db(new, reply), residual_db(warm, reply)
    first = len(cold_db) // 4  # the reply's first 0.5 s
    assert np.median(cold_db[:first]) > -8  # measured −4.5 dB on greeting_10s
    assert np.median(warm_db[:first]) < -12  # measured −17 dB
    assert np.median(warm_db) < np.median(cold_db)


def test_rehearsing_during_the_stream_is_refused(learnt):
    canceller = LinearEchoCanceller(RATE)
    canceller.process(np.zeros(CHUNK, np.float32), np.zeros(CHUNK, np.float32))
    with pytest.raises(RuntimeError, match="before the stream"):
        canceller.rehearse(np.zeros(RATE, np.float32), learnt)


def test_the_memory_holds_the_last_audible_seconds_played(tmp_path: Path, learnt):
    canceller = LinearEchoCanceller(RATE)
    memory = RoomMemory(tmp_path / "room-echo.npz", canceller)
    voice = real("car_commands_68s.wav")[:8 * RATE]
    silence = np.zeros(CHUNK, np.float32)
    for i in range(0, len(voice), CHUNK):
        memory.hear(voice[i:i + CHUNK])
        memory.hear(silence)  # not held: nothing to learn from
    canceller.process(room(voice), voice)
    memory.keep()
    with np.load(tmp_path / "room-echo.npz") as kept:
        assert int(kept["sample_rate"]) == RATE and kept["played"].dtype == np.int16
        assert len(kept["played"]) == REHEARSAL_S * RATE
        assert not np.any(np.all(kept["played"].reshape(-1, CHUNK) == 0, axis=1))
        np.testing.assert_allclose(kept["played"] / 32767.0, voice[-int(REHEARSAL_S * RATE):], atol=1e-4)
        assert int(np.argmax(kept["response"])) == 640


def test_no_memory_a_broken_one_or_another_set_up_starts_afresh(tmp_path: Path, learnt):
    path = tmp_path / "room-echo.npz"
    memory = RoomMemory(path, LinearEchoCanceller(RATE))
    assert not memory.recall()
    path.write_bytes(b"not a memory")
    assert not memory.recall()
    np.savez(path, sample_rate=RATE, played=np.zeros(RATE, np.int16), response=learnt[:1024])
    assert not memory.recall()  # a 64 ms filter
    np.savez(path, sample_rate=8000, played=np.zeros(RATE, np.int16), response=learnt)
    assert not memory.recall()


def test_a_memory_that_cannot_be_written_is_let_go(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    memory = RoomMemory(blocker / "room-echo.npz", LinearEchoCanceller(RATE))
    memory.hear(real("greeting_10s.wav")[:RATE])
    memory.keep()  # logged, not raised: the room is learnt again next time
    assert not (blocker / "room-echo.npz").exists()


class Session:
    """An echo defence over a reply of real speech, ended by PlaybackFinished."""

    def __init__(self, path: Path, *overrides: str) -> None:
        self.clock = SampleClock(RATE)
        self.bus = EventBus(self.clock)
        self.echo = EchoDefence(make_config("echo.cancel=true", *overrides), self.clock, self.bus, 30 * RATE,
                                room=path)

    def reply(self, played: np.ndarray) -> float | None:
        """Play ``played``; the seconds into it at which the double-talk test found the canceller learnt."""
        mic, at = room(played), None
        talk = self.echo.double_talk
        for i in range(0, len(played) - CHUNK + 1, CHUNK):
            self.echo.clean(mic[i:i + CHUNK], played[i:i + CHUNK])
            self.clock.advance(CHUNK)
            if at is None and talk is not None and talk.learnt:
                at = (i + CHUNK) / RATE
        self.bus.publish(PlaybackFinished(interrupted=False))
        return at


def test_the_next_session_starts_with_the_room_learnt(tmp_path: Path):
    path = tmp_path / "room-echo.npz"
    first = Session(path)
    assert first.echo.room is not None and not first.echo.room.recalled
    learnt_at = first.reply(real("greeting_10s.wav")[:6 * RATE])
    assert learnt_at is not None and learnt_at > 1.0 and path.is_file()
    second = Session(path)
    assert second.echo.room is not None and second.echo.room.recalled
    warm_at = second.reply(real("car_commands_68s.wav")[5 * RATE:8 * RATE])
    assert warm_at is not None and warm_at < 0.7 < learnt_at  # measured 0.35 s, against 2.3 s cold on this reply
    first_account, second_account = first.echo.cancelled(), second.echo.cancelled()  # summary.json's
    assert first_account is not None and first_account.room_recalled is False
    assert second_account is not None and second_account.room_recalled is True


def test_a_reply_before_the_room_is_learnt_keeps_nothing(tmp_path: Path):
    path = tmp_path / "room-echo.npz"
    Session(path).reply(real("greeting_10s.wav")[:RATE // 2])
    assert not path.exists()


@pytest.mark.parametrize("overrides", [("echo.remember_room=false",), ("barge_in.double_talk=false",),
                                       ("echo.linear=false",)])
def test_without_the_memory_or_what_it_rests_on_nothing_is_kept(tmp_path: Path, overrides):
    path = tmp_path / "room-echo.npz"
    session = Session(path, *overrides)
    assert session.echo.room is None
    session.reply(real("greeting_10s.wav")[:6 * RATE])
    assert not path.exists()


def test_a_defence_given_no_room_keeps_none():  # a replay's: it starts with a new canceller
    clock = SampleClock(RATE)
    defence = EchoDefence(make_config("echo.cancel=true"), clock, EventBus(clock), RATE)
    account = defence.cancelled()
    assert defence.room is None and account is not None and account.room_recalled is None
