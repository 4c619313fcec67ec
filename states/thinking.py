"""Thinking: the reply is being worked out (ASR, LLM, first TTS chunk); nothing is playing yet.

Entering starts the reply, or commits the one listening prepared ahead on the same words; it runs
on into speaking and is stopped on any other way out. Speech from the user here (they go on
talking) is a barge-in too: listen again from its onset.
"""

from __future__ import annotations

from states.barge_in import Interruptible, make_detector
from states.inputs import Input, SpeechEnd
from states.reply import Reply


class Thinking(Interruptible):
    name = "thinking"

    async def enter(self, cause: Input) -> None:
        if not isinstance(cause, SpeechEnd):  # the table's one way in
            raise TypeError(f"thinking is entered by speech_end, not {cause.trigger}")
        s = self.session
        self.detector = make_detector(s, echo_window_from=None)
        if cause.ahead and s.reply is not None:
            s.reply.commit()  # prepared before the endpoint on these very words: it may play now
            return
        s.reply = reply = Reply(s)
        reply.start(cause.utterance, cause.utterance_start, cause.speculation,
                    heard=(cause.audio_from, cause.voiced_end))

    async def exit(self, dest: str) -> None:
        s = self.session
        if dest != "speaking" and s.reply is not None:
            await s.reply.interrupt()
            s.reply = None
        await super().exit(dest)
