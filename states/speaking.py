"""Speaking: the reply is playing. Owns the echo-suppression window of the barge-in decision:
for ``speaking.echo_window_ms`` after playback starts, VAD cannot interrupt. A reminder that falls
due enters speaking straight from idle; its reply is started here."""

from __future__ import annotations

from assistant.audio.protocols import Samples
from states.barge_in import Interruptible, make_detector
from states.inputs import Input, Remind
from states.reply import Reply
from states.state import VadWindow


class Speaking(Interruptible):
    name = "speaking"

    async def enter(self, cause: Input) -> None:
        s = self.session
        if isinstance(cause, Remind):  # from idle: nothing is playing yet
            s.new_turn()
            s.reply = reply = Reply(s)
            reply.announce(cause.text)
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
        s = self.session
        if s.reply is not None:
            await s.reply.interrupt()  # nothing left to do if it has ended
            s.reply = None
        await super().exit(dest)
