"""Runs the live path (ALSA capture and playback, the session, test doubles for ASR/LLM/TTS) on
ALSA's `file` plugin; run in a subprocess by test_audio.py with HOME holding the .asoundrc.
Prints the events as JSON lines, then stops once the reply is done."""

from __future__ import annotations

import asyncio
import json

from assistant import app, config, frontend, logs
from assistant.clock import SampleClock
from assistant.events import Event, to_record
from models.assets import Assets
from models.protocols import Backends
from models.sherpa_vad import SherpaSileroVad, silero_model_path
from tests.doubles import ScriptedAsr, ScriptedLlm, ToneTts


async def main() -> None:
    cfg = config.load(None, ["wake.mode=always", "dialog.follow_up_s=0", "log.level='warning'",
                             "audio.capture_device='tscap'", "audio.playback_device='tsplay'",
                             "dialog.preempt=false"])  # (its scripted LLM has one reply, for one request)
    logs.setup("warning")
    clock = SampleClock(16000, realtime=True)
    source, sink = frontend.open_devices(cfg, clock)
    vad = SherpaSileroVad(silero_model_path(Assets()))
    vad.load()
    backends = Backends(vad=vad, asr=ScriptedAsr("你是谁"), llm=ScriptedLlm("我是听说。"), tts=ToneTts())

    def on_event(t: float, event: Event) -> None:
        print(json.dumps(to_record(t, event), ensure_ascii=False), flush=True)
        if event.type == "state_changed" and getattr(event, "trigger", "") == "reply_done":
            source.close()

    try:
        await asyncio.wait_for(frontend.hold(app.Parts(cfg, backends), clock, source, sink, [on_event]), 60)
    finally:
        sink.close()
        vad.close()


if __name__ == "__main__":
    asyncio.run(main())
