"""The linear canceller's double-talk test (``assistant/audio/double_talk.py``) in reverberant rooms.

    .venv/bin/python benchmarks/double_talk_rooms.py

``benchmarks/echo.py`` hears the reply through a gain and a delay, an echo path the linear filter
learns well. Here the reply (30 s of real speech, car_commands_68s.wav) reaches the microphone
through a room's impulse response from a loudspeaker 0.6 m away (the near and far rooms of
``benchmarks/rooms.py``, with their fan noise), at about half its level, and the user
(ask_who_are_you.wav) through the talker's one; no user at all, or from 4, 12 or 20 s. Speex runs
with the shipped filter length (128 ms) and a longer one (256 ms). Per case: how many windows of the
echo alone the test marks as the user (a window where the dry user is silent: the user's own
reverberant tail is counted here too), the longest run of them, and how many of the windows where
both talk it marks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "benchmarks"))

import rooms  # noqa: E402
from scipy.signal import fftconvolve  # noqa: E402

from assistant.audio.double_talk import DoubleTalk, power  # noqa: E402
from assistant.audio.linear_echo import LinearEchoCanceller  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402

RATE, CHUNK, WINDOW = 16000, 320, 512
REAL = ROOT.parent / "shared" / "audio" / "real"
SPEAKER_OFFSET = (0.5, 0.3, -0.5)  # from the microphone, m: about 0.6 m away, lower


def real(name: str) -> np.ndarray:
    """A real recording from ../shared/audio/real/ at 16 kHz."""
    return read_wav(REAL / name, RATE)


def microphone(room: str, played: np.ndarray, user: np.ndarray) -> np.ndarray:
    a = rooms.acoustics(room)
    where = tuple(m + d for m, d in zip(rooms.MIC, SPEAKER_OFFSET, strict=True))
    speaker = rooms._rir(a.room.rt60_s, where)
    echo = fftconvolve(played, speaker)[:len(played)] * 0.5 / np.sqrt(np.sum(speaker ** 2))
    voice = fftconvolve(user, a.talker)[:len(user)] / np.sqrt(np.sum(a.talker ** 2))
    fan = fftconvolve(rooms.fan_noise(len(played)), a.fan)[:len(played)]
    fan *= np.sqrt(rooms.voiced_power(real("ask_who_are_you.wav")) / 10 ** (a.room.snr_db / 10) / np.mean(fan ** 2))
    return (echo + voice + fan).astype(np.float32)


def verdicts(mic: np.ndarray, played: np.ndarray, filter_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Each window's end sample and whether the test marked it."""
    canceller, talk = LinearEchoCanceller(RATE, filter_ms=filter_ms), DoubleTalk(RATE, WINDOW)
    judged: dict[int, bool] = {}
    for i in range(0, len(mic) - CHUNK + 1, CHUNK):
        out = canceller.process(mic[i:i + CHUNK], played[i:i + CHUNK])
        talk.feed(mic[i:i + CHUNK], out, played[i:i + CHUNK], canceller.lag)
        for end in range(WINDOW, i + CHUNK + 1, WINDOW):
            if end not in judged and end > i + CHUNK - 2 * WINDOW:
                judged[end] = talk.at(end)
    canceller.close()
    ends = np.array(sorted(judged))
    return ends, np.array([judged[e] for e in ends])


def main() -> None:
    played = real("car_commands_68s.wav")[:30 * RATE]
    request = real("ask_who_are_you.wav")
    print("| room | filter (ms) | user from (s) | echo alone marked (longest run) | both talking, marked |")
    print("|---|---|---|---|---|")
    for room in ("near", "far"):
        for filter_ms in (128, 256):
            for at_s in (None, 4.0, 12.0, 20.0):
                user = np.zeros_like(played)
                if at_s is not None:
                    user[int(at_s * RATE):int(at_s * RATE) + len(request)] = request
                ends, marked = verdicts(microphone(room, played, user), played, filter_ms)
                speaking = np.array([power(user[e - WINDOW:e]) > 1e-4 for e in ends])
                playing = np.array([power(played[max(0, e - 4 * WINDOW):e]) > 1e-4 for e in ends])
                longest = run = 0
                for alone in marked & ~speaking:
                    run = run + 1 if alone else 0
                    longest = max(longest, run)
                both = speaking & playing
                print(f"| {room} | {filter_ms} | {'-' if at_s is None else at_s} | {int((marked & ~speaking).sum())} "
                      f"({longest}) | {int((marked & both).sum())} / {int(both.sum())} |", flush=True)


if __name__ == "__main__":
    main()
