"""Speaking: the reply is playing. Owns the echo-suppression window of the barge-in decision:
for ``speaking.echo_window_ms`` after playback starts, VAD cannot interrupt."""

from __future__ import annotations

from typing import Any

from states.barge_in import Interruptible, make_detector


class Speaking(Interruptible):
    name = "speaking"

    async def enter(self, trigger: str, kwargs: dict[str, Any]) -> None:
        s = self.session
        started = s.reply.first_audio_sample if s.reply is not None else None
        self.detector = make_detector(s, echo_window_from=s.clock.samples if started is None else started)

    async def exit(self, dest: str) -> None:
        if self.session.reply is not None:
            await self.session.reply.stop()
        await super().exit(dest)
