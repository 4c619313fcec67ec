"""Speaking: the reply is playing. Owns the echo-suppression window of the barge-in decision:
for ``speaking.echo_window_ms`` after playback starts, VAD cannot interrupt. A reminder that falls
due enters speaking straight from idle; its reply is started here."""

from __future__ import annotations

from typing import Any

from assistant.audio.protocols import Samples
from states.barge_in import Interruptible, make_detector
from states.reply import Reply
from states.state import VadWindow


class Speaking(Interruptible):
    name = "speaking"

    async def enter(self, trigger: str, kwargs: dict[str, Any]) -> None:
        s = self.session
        if trigger == "remind":  # from idle: nothing is playing yet
            s.new_turn()
            s.reply = reply = Reply(s)
            reply.announce(kwargs["text"])
        started = s.reply.first_audio_sample if s.reply is not None else None
        self.window_set = started is not None
        self.detector = make_detector(s, echo_window_from=s.clock.samples if started is None else started)

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        if not self.window_set and s.reply is not None and s.reply.first_audio_sample is not None:
            self.detector = make_detector(s, echo_window_from=s.reply.first_audio_sample)
            self.window_set = True
        await super().on_audio(chunk, windows)

    async def exit(self, dest: str) -> None:
        if self.session.reply is not None:
            await self.session.reply.stop()
        await super().exit(dest)
