"""Exercises the ALSA source and sink on the `file` plugin (run in a subprocess by test_audio.py,
with HOME pointing at a folder whose .asoundrc defines the devices). Prints JSON results."""

from __future__ import annotations

import asyncio
import json
import sys

import numpy as np

from assistant import logs
from assistant.audio.alsa import AlsaSink, AlsaSource
from assistant.audio.protocols import AudioDeviceError
from assistant.clock import SampleClock


async def main() -> dict[str, object]:
    logs.setup("error")  # on stderr: stdout is the JSON result (the file plugin reads faster than real time)
    clock = SampleClock(16000)
    source = AlsaSource("tscap", clock, 320)
    got = []
    async for chunk in source.chunks():
        got.append(chunk)
        if len(got) == 25:
            break
    source.close()
    captured = np.concatenate(got)

    sink = AlsaSink("tsplay", 16000, buffer_ms=120)
    tone = (0.5 * np.sin(np.arange(8000) * 2 * np.pi * 440 / 16000)).astype(np.float32)
    await sink.write(tone)
    await asyncio.wait_for(sink.wait_playout(), 5)
    position_after_playout = sink.position
    sink.clear()  # drops the device buffer; the next write must re-prepare the stream
    await sink.write(tone[:1600])
    await asyncio.wait_for(sink.wait_playout(), 5)
    position_after_second = sink.position
    sink.close()

    try:
        AlsaSource("no_such_device", SampleClock(16000), 320)
        missing = ""
    except AudioDeviceError as exc:
        missing = str(exc)
    return {"chunks": len(got), "chunk_len": len(got[0]), "samples": captured.round(5).tolist()[:4000],
            "clock_samples": clock.samples, "position_after_playout": position_after_playout,
            "position_after_second": position_after_second, "missing_device_error": missing}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
    sys.exit(0)
