"""Thinking: the reply is being worked out (ASR, LLM, first TTS chunk); nothing is playing yet.

Entering starts the reply; it runs on into speaking and is stopped on any other way out. Speech
from the user here (they go on talking) is a barge-in too: listen again from its onset.
"""

from __future__ import annotations

from typing import Any

from states.barge_in import Interruptible, make_detector
from states.reply import Reply


class Thinking(Interruptible):
    name = "thinking"

    async def enter(self, trigger: str, kwargs: dict[str, Any]) -> None:
        s = self.session
        self.detector = make_detector(s, echo_window_from=None)
        s.reply = reply = Reply(s)
        reply.start(kwargs["utterance"], kwargs.get("utterance_start"), kwargs.get("speculation"),
                    heard=(kwargs["audio_from"], kwargs["voiced_end"]) if "voiced_end" in kwargs else None)

    async def exit(self, dest: str) -> None:
        s = self.session
        if dest != "speaking" and s.reply is not None:
            await s.reply.stop()
        await super().exit(dest)
