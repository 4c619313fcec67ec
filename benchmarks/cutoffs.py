"""Cut-offs: how many utterances the endpointer makes of real speech with pauses, Smart Turn on and off.

    .venv/bin/python benchmarks/cutoffs.py

Recordings with pauses inside a request (greeting_10s, hey_xiaozhi — 你在吗 then 今天怎么样 —,
ask_who_are_you) and the 68.8 s list of car commands, replayed in lockstep (model compute takes no
session time, so the count is the endpointer's alone) with the real VAD, the real Smart Turn and
doubles for the ASR, LLM and TTS (replies of a few ms of tone, no follow-up window). Printed: the
utterances found and the mean endpoint wait (last voiced sample → decision) per setting. Fewer
utterances on greeting_10s / hey_xiaozhi / ask_who_are_you means fewer requests cut in two.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from assistant import backends, config  # noqa: E402
from assistant.app import Parts  # noqa: E402
from assistant.audio.wav import read_wav  # noqa: E402
from assistant.replay import replay  # noqa: E402
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts  # noqa: E402

REAL = ROOT.parent / "shared" / "audio" / "real"
CLIPS = ("greeting_10s.wav", "hey_xiaozhi.wav", "ask_who_are_you.wav", "car_commands_68s.wav")
SETTINGS = {"silence endpoint (before)": ["vad.turn_model=false", "vad.speculative_silence_ms=150"],
            "Smart Turn (default)": []}


async def count(cfg: config.Config, turn: object, audio: np.ndarray) -> tuple[int, float]:
    a = backends.assets_for(cfg)
    vad = backends.vad(cfg, a)
    vad.load()
    models = backends.Backends(vad=vad, asr=ScriptedAsr(*["好"] * 200), llm=ScriptedLlm(*["好。"] * 200),
                               tts=ToneTts(seconds_per_char=0.01), turn=turn)  # type: ignore[arg-type]
    summary = await replay(Parts(cfg, models), audio, Path(tempfile.mkdtemp(prefix="cutoffs-")))
    waits = [t["endpoint_wait_s"] for t in summary["turns"]]
    return len(waits), statistics.mean(waits) if waits else float("nan")


async def main() -> None:
    print("| recording | " + " | ".join(f"{s}: utterances, mean endpoint wait" for s in SETTINGS) + " |")
    print("|---|" + "---|" * len(SETTINGS))
    for clip in CLIPS:
        audio = np.concatenate([read_wav(REAL / clip, 16000), np.zeros(32000, np.float32)])
        cells = []
        for overrides in SETTINGS.values():
            cfg = config.load(None, ["wake.mode='always'", "dialog.follow_up_s=0", "log.level='error'", *overrides])
            turn = backends.turn(cfg, backends.assets_for(cfg))
            if turn is not None:
                turn.load()
            n, wait = await count(cfg, turn, audio)
            cells.append(f"{n}, {wait:.3f} s")
        print(f"| {clip} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
