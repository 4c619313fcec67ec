"""The leak check (``assistant/audio/echo_leak.py``) in reverberant rooms: would it refuse the user?

    .venv/bin/python benchmarks/leak_rooms.py

``benchmarks/echo.py`` hears the reply through a gain and a delay. Here the reply (30 s of real
speech, car_commands_68s.wav) reaches the microphone through a room's impulse response from a
loudspeaker 0.6 m away, and the user (ask_who_are_you.wav) through the talker's one, with the fan
(the near and far rooms of ``benchmarks/rooms.py``, as in ``benchmarks/double_talk_rooms.py``). The
microphone goes through the real AEC3, fed with what was played, as the session does. Every 64 ms,
the check judges the last 128 ms of AEC3's output:

- where the user speaks over the reply (their dry voice above −40 dBFS there): a refusal there would
  delay a real barge-in, so the count of windows it would refuse is the number that matters;
- where only the reply's echo is heard: how much of what AEC3 leaves of the echo a short filter
  explains (a leak it explains is refused; in a reverberant room most of the residue is the tail,
  which it cannot explain, and such a leak passes as it did before the check).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "benchmarks"))

from double_talk_rooms import CHUNK, RATE, microphone, real  # noqa: E402

from assistant.audio.double_talk import power  # noqa: E402
from assistant.audio.echo import EchoCanceller  # noqa: E402
from assistant.audio.echo_leak import LEAK_DB, MAX_LAG, SPAN, unexplained_db  # noqa: E402

HOP = 1024  # judged every 64 ms


def cancelled(mic: np.ndarray, played: np.ndarray) -> np.ndarray:
    """AEC3's output, chunk by chunk as the session feeds it."""
    aec = EchoCanceller(RATE)
    return np.concatenate([aec.process(mic[i:i + CHUNK], played[i:i + CHUNK])
                           for i in range(0, len(mic) - CHUNK + 1, CHUNK)])


def main() -> None:
    played = real("car_commands_68s.wav")[:30 * RATE]
    request = real("ask_who_are_you.wav")
    print("| room | user from (s) | user over the reply: windows refused | their lowest reading (dB) | "
          "echo alone: windows judged | of them a leak (≤ "
          f"{LEAK_DB} dB) | their median reading (dB) |")
    print("|---|---|---|---|---|---|---|")
    for room in ("near", "far"):
        for at_s in (4.0, 12.0, 20.0):
            user = np.zeros_like(played)
            user[int(at_s * RATE):int(at_s * RATE) + len(request)] = request
            out = cancelled(microphone(room, played, user), played)
            users: list[float] = []
            echoes: list[float] = []
            for end in range(SPAN + MAX_LAG, len(out), HOP):
                reading = unexplained_db(out[end - SPAN:end], played[end - SPAN - MAX_LAG:end])
                if reading is None:
                    continue
                speaking = power(user[end - SPAN:end]) > 1e-4
                if speaking:
                    users.append(reading)
                elif not user[max(0, end - SPAN - RATE // 2):end].any():  # clear of the user's reverberant tail
                    echoes.append(reading)
            refused = sum(r <= LEAK_DB for r in users)
            print(f"| {room} | {at_s} | {refused} / {len(users)} | {min(users):.1f} | {len(echoes)} | "
                  f"{sum(r <= LEAK_DB for r in echoes)} | {float(np.median(echoes)):.1f} |", flush=True)


if __name__ == "__main__":
    main()
