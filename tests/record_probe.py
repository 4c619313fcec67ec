"""Runs ``assistant run --record`` 's live path (ALSA capture and playback through the `file` plugin,
the session, the real VAD, test doubles for ASR/LLM/TTS) with a session recorder; run in a
subprocess by test_record.py with HOME holding the .asoundrc. The recording folder is argv[1], else
$HOME/rec (tests.test_audio.run_on_file_plugin passes no arguments).

Prints the events as JSON lines, stops soon after the reply is done, and prints the session folder last.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from assistant import app, config, frontend, logs
from assistant.clock import SampleClock
from assistant.events import Event, to_record
from models.assets import Assets
from models.protocols import Backends
from models.sherpa_vad import silero_model_path
from models.silero_vad import SileroVad
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts

TAIL_S = 2.0


async def main(folder: Path) -> Path:
    cfg = config.load(None, ["wake.mode=always", "dialog.follow_up_s=0", "log.level='warning'",
                             "echo.cancel=false",  # the ToneTts tone is no speech (see tests/conftest.py)
                             "audio.capture_device='tscap'", "audio.playback_device='tsplay'"])
    logs.setup("warning")
    clock = SampleClock(16000, realtime=True)
    source, sink = frontend.open_devices(cfg, clock)
    vad = SileroVad(silero_model_path(Assets()))
    vad.load()
    # the request's pauses each have a reply prepared ahead and dropped (the default): each takes one
    backends = Backends(vad=vad, asr=ScriptedAsr("你是谁"), llm=ScriptedLlm(*["我是听说。"] * 4), tts=ToneTts())
    rec = frontend.recorder(folder, cfg.audio.sample_rate)

    reply_done = asyncio.Event()

    def on_event(t: float, event: Event) -> None:
        print(json.dumps(to_record(t, event), ensure_ascii=False), flush=True)
        if event.type == "state_changed" and getattr(event, "trigger", "") == "reply_done":
            reply_done.set()

    async def stop_after_reply() -> None:
        """Close the microphone TAIL_S of session time after the reply: the end of the playback, still
        in the played-audio queue when the device is done, reaches played.wav however fast the capture."""
        await reply_done.wait()
        end = clock.samples + int(TAIL_S * clock.sample_rate)
        while clock.samples < end:  # noqa: ASYNC110 - the sample clock has no event
            await asyncio.sleep(0.005)
        source.close()

    stopper = asyncio.create_task(stop_after_reply())
    try:
        held = frontend.hold(app.Parts(cfg, backends), clock, source, sink, [on_event], recorder=rec)
        await asyncio.wait_for(held, 60)
    finally:
        stopper.cancel()
        source.close()
        sink.close()
        vad.close()
        rec.close()
    return rec.folder


if __name__ == "__main__":
    print(asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / "rec")), flush=True)
