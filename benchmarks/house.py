"""The satellite's turn through a real Home Assistant: end of speech → first reply sample.

A real Home Assistant 2024.3.3 core (tests/home_assistant.py) with `assistant serve` as its STT and
TTS and a Tingshuo satellite, as in tests/test_house.py. The satellite's microphone hears a session
of one-breath device commands (小智，打开客厅灯 …, said by the real TTS, each different so no reply is
in Home Assistant's TTS cache), in real time. Printed per turn and as p50: the satellite's own
endpoint wait, and end of speech → first reply sample (Home Assistant's pipeline: Tingshuo's
Whisper, its zh-cn agent, Tingshuo's Kokoro, then the audio to the satellite); and whether the device
really changed.

    .venv/bin/python benchmarks/house.py
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant import app
from tests.conftest import make_config, silence
from tests.sessions import spoken
from tests.test_house import SETTINGS, house_with_tingshuo, satellite_turn

COMMANDS = [("打开客厅灯", "light.living_room_light", "on"), ("关闭卧室灯", "light.bedroom_light", "off"),
            ("打开窗帘", "cover.curtain", "open"), ("关闭客厅灯", "light.living_room_light", "off"),
            ("打开卧室灯", "light.bedroom_light", "on"), ("关闭窗帘", "cover.curtain", "closed")]


async def main() -> None:
    from assistant import logs

    logs.setup("warning", "console")
    cfg = make_config(*SETTINGS)
    with app.services(cfg) as loaded, tempfile.TemporaryDirectory(prefix="house-") as folder:
        services = dataclasses.replace(loaded, asr_lock=asyncio.Lock(), tts_lock=asyncio.Lock())
        parts = [silence(0.5)]
        for text, _, _ in COMMANDS:
            parts += [await spoken(services.tts, f"小智，{text}。"), silence(7.0)]
        async with house_with_tingshuo(Path(folder) / "ha", services) as (api, stt, tts):
            pipeline = await api.call("assist_pipeline/pipeline/create", name="听说", language="zh-cn",
                                      conversation_engine="homeassistant", conversation_language="zh-cn",
                                      stt_engine=stt, stt_language="zh-CN", tts_engine=tts, tts_language="zh-CN",
                                      tts_voice="zf_xiaoxiao", wake_word_entity=None, wake_word_id=None)
            await api.call("assist_pipeline/pipeline/set_preferred", pipeline_id=pipeline["id"])
            summary, _ = await satellite_turn(api, np.concatenate(parts), Path(folder) / "satellite")
            states = {s["entity_id"]: s["state"] for s in await api.states()}
    print("| # | said | Home Assistant answered | endpoint wait | end of speech → first reply sample |")
    print("|---|---|---|---|---|")
    totals = []
    for i, (turn, (text, _, _)) in enumerate(zip(summary["turns"], COMMANDS, strict=False), 1):
        total = turn["end_of_speech_to_first_audio_s"]
        totals.append(total)
        print(f"| {i} | 小智，{text} | {turn['reply']} | {turn['endpoint_wait_s']:.3f} s | "
              f"{total:.3f} s |" if total is not None else f"| {i} | 小智，{text} | {turn['reply']} | — | — |")
    done = [t for t in totals if t is not None]
    print(f"\nturns {len(summary['turns'])} of {len(COMMANDS)}; answered {len(done)}; "
          f"p50 end of speech → first reply sample {statistics.median(done):.3f} s" if done else "no answer")
    last = {entity: state for _, entity, state in COMMANDS}  # what each device should be at the end
    print("devices at the end: " + ", ".join(f"{e} {states.get(e)} (expected {s})" for e, s in last.items()))
    print(f"errors: {summary['errors']}")


if __name__ == "__main__":
    asyncio.run(main())
