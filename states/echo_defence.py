"""The echo defence, in one place: what keeps the assistant from taking its own voice for the user's.

The microphone hears the reply through the room. The layers, in the order a sound meets them (every
one can be switched off in ``[echo]`` and ``[speaking]``, and each publishes ``EchoIgnored`` or
``EchoCancelled`` when it acts, so ``summary.json`` counts them):

1. Cancellers (the DSP is in ``assistant/audio``). WebRTC AEC3 cleans every chunk the VAD, the
   keyword spotter and the states hear. Beside it a linear canceller (Speex MDF) keeps a signal
   with no suppressor: a request that begins over the reply, or just after it, is cut from that one
   for the ASR, because the suppressor muffles the user's first syllables there. Away from playback
   the ASR hears the microphone as captured (``echo.asr_hears``): AEC3's filters cost Whisper even
   when nothing was played. The linear canceller also tells double talk (``talk()``): a window in which
   it finds the user over the echo lets a muffled barge-in count (``barge_in.double_talk``). A live
   session's linear canceller starts from the room's echo path as the last session learnt it
   (``echo.remember_room``, ``assistant/audio/room_memory.py``).
   A barge-in whose last 128 ms AEC3 let through are explained by what was played is refused
   (``is_leak()``, ``echo.leak_check``, ``assistant/audio/echo_leak.py``): a cold AEC3 sometimes
   passes a syllable of the first reply almost whole, and the VAD is sure of it.
2. The echo window: for ``speaking.echo_window_ms`` after playback starts, speech cannot barge in;
   and its mirror after a barge-in: for ``echo.tail_ms`` after playback stopped, quiet does not end
   the new utterance (AEC3 still suppresses the reply's tail, and the user under it).
3. Own words: a stop or wake word is ignored while the reply being spoken contains it.
4. The transcript filter: an utterance heard while or just after the assistant spoke, whose
   transcript is what it said, is dropped.

Layers 3 and 4 compare with the spoken-text memory: what the last two replies said, kept here from
the reply's text chunks, with when playback last ended.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import structlog

from assistant.audio import echo_leak
from assistant.audio.double_talk import DoubleTalk
from assistant.audio.history import AudioHistory
from assistant.audio.protocols import Samples
from assistant.audio.room_memory import RoomMemory
from assistant.events import EchoCancelled, EchoIgnored, Event, EventBus, PlaybackFinished, TextChunk
from assistant.text.echo_match import is_echo, match

if TYPE_CHECKING:
    from pathlib import Path

    from assistant.audio.echo import EchoCanceller
    from assistant.audio.linear_echo import LinearEchoCanceller
    from assistant.clock import SampleClock
    from assistant.config import Config

log = structlog.get_logger("echo")


class EchoDefence:
    """The session's echo defence: its cancellers, its memory of what was said, and its checks."""

    def __init__(self, cfg: Config, clock: SampleClock, bus: EventBus, history_samples: int,
                 vad_window: int = 512, room: Path | None = None) -> None:
        self.cfg, self.clock, self.bus = cfg, clock, bus
        self.canceller = _canceller(cfg)
        self.linear = _linear(cfg) if self.canceller is not None else None
        self.linear_history = AudioHistory(history_samples) if self.linear is not None else None
        # double talk, from the linear canceller: the user heard over the reply, judged per VAD window
        self.double_talk = (DoubleTalk(cfg.audio.sample_rate, vad_window)
                            if self.linear is not None and cfg.barge_in.double_talk else None)
        # the room's echo path, kept between sessions in ``room`` (the learnt judgement is the test's)
        self.room = (RoomMemory(room, self.linear) if room is not None and cfg.echo.remember_room
                     and self.linear is not None and self.double_talk is not None else None)
        if self.room is not None:
            self.room.recall()
        # what the speaker played, for the leak check
        self.played = (AudioHistory(echo_leak.SPAN + echo_leak.MAX_LAG)
                       if self.canceller is not None and cfg.echo.leak_check else None)
        self.microphone = cfg.echo.asr_hears == "microphone"  # the ASR hears the raw microphone away from playback
        self.spoken: deque[list[str]] = deque(maxlen=2)  # the text of the last two replies, by chunk
        self.playing = False
        self.playback_end: int | None = None
        self.linear_out: Samples | None = None  # the linear canceller's output for the last chunk cleaned
        bus.subscribe(self._follow_playback)

    # -- layer 1: the cancellers ----------------------------------------------------------------
    def clean(self, mic: Samples, played: Samples) -> Samples:
        """The microphone chunk without the echo of ``played`` (what the speaker played meanwhile)."""
        if self.played is not None:
            self.played.append(played)
        if self.linear is not None and self.linear_history is not None:
            linear = self.linear_out = self.linear.process(mic, played)  # fed always: it stays adapted
            if self.room is not None:
                self.room.hear(played)
            if self.double_talk is not None:
                self.double_talk.feed(mic, linear, played, self.linear.lag)
            near = not self.microphone or self.near_playback(self.clock.samples)
            self.linear_history.append(linear if near else mic)
        return mic if self.canceller is None else self.canceller.process(mic, played)

    def talk(self, end: int) -> bool:
        """Did the linear canceller find the user over the reply's echo in the VAD window ending at ``end``?"""
        return self.double_talk is not None and self.double_talk.at(end)

    def is_leak(self, heard: AudioHistory) -> bool:
        """Are the last 128 ms of ``heard`` (AEC3's output, kept in step with ``clean``'s chunks) the
        reply's own echo, let through? (Published when they are.)"""
        if self.played is None:
            return False
        end = self.played.end
        out = heard.slice(end - echo_leak.SPAN, end)
        played = self.played.slice(end - echo_leak.SPAN - echo_leak.MAX_LAG, end)
        if len(out) < echo_leak.SPAN or len(played) < echo_leak.SPAN + echo_leak.MAX_LAG:
            return False  # the session's first 300 ms
        unexplained = echo_leak.unexplained_db(out, played)
        if unexplained is None or unexplained > echo_leak.LEAK_DB:
            return False
        log.info("barge-in refused: the reply's own echo, let through", unexplained_db=round(unexplained, 1))
        self.bus.publish(EchoIgnored(layer="leak", detail=f"{unexplained:.1f} dB unexplained by what was played"))
        return True

    def heard(self, history: AudioHistory, start: int, stop: int) -> Samples:
        """Samples ``[start, stop)`` for the ASR: from the linear canceller when the speech began while
        the assistant played or just after; else the microphone as captured (``asr_hears``
        "microphone"), or ``history``, what the states heard ("cancelled")."""
        if self.linear_history is not None and (self.microphone or self.near_playback(start)):
            return self.linear_history.slice(start, stop)
        return history.slice(start, stop)

    def cancelled(self) -> EchoCancelled | None:
        """The canceller's counters for the session, or None without one."""
        if self.canceller is None:
            return None
        st = self.canceller.stats
        talk = self.double_talk
        return EchoCancelled(chunks=st.chunks, echo_chunks=st.echo_chunks, acted_chunks=st.acted_chunks,
                             erle_db=None if st.erle_db is None else round(st.erle_db, 1),
                             double_talk_windows=None if talk is None else talk.marked,
                             linear_learnt=None if talk is None else talk.was_learnt,
                             room_recalled=None if self.room is None else self.room.recalled)

    def close(self) -> None:
        if self.linear is not None:
            self.linear.close()

    # -- layer 2: the echo window ---------------------------------------------------------------
    def window_end(self, playback_from: int) -> int:
        """The last sample of the echo window for playback that started at ``playback_from``."""
        return playback_from + self.cfg.speaking.echo_window_ms * self.cfg.audio.sample_rate // 1000

    def tail_end(self) -> int:
        """Until when, after playback stopped, the canceller may still suppress speech as echo
        (``echo.tail_ms``): quiet heard before then is not trusted to end an utterance."""
        if self.canceller is None or self.playback_end is None:
            return 0
        return self.playback_end + self.cfg.echo.tail_ms * self.cfg.audio.sample_rate // 1000

    def window_muted(self) -> None:
        self.bus.publish(EchoIgnored(layer="echo_window", detail="speech right after playback started"))

    # -- layers 3 and 4: what the assistant said ------------------------------------------------
    def said_it_myself(self, word: str) -> bool:
        """Own words: is the keyword ``word`` in what the assistant is saying? (Published when it is.)"""
        if not self.cfg.echo.own_words or match(word, self.spoken_texts()).score < 0.999:
            return False
        log.info("own word ignored: the reply says it", keyword=word)
        self.bus.publish(EchoIgnored(layer="own_words", detail=word))
        return True

    def is_own_echo(self, text: str, utterance_start: int) -> bool:
        """The transcript filter: is ``text``, heard from ``utterance_start``, the assistant's own words?"""
        cfg = self.cfg.echo
        if not cfg.transcript_filter or not self.near_playback(utterance_start):
            return False
        spoken = self.spoken_texts()
        if not is_echo(text, spoken, threshold=cfg.transcript_similarity):
            return False
        found = match(text, spoken)
        log.info("echo dropped: the transcript is the assistant's own words", transcript=text,
                 score=round(found.score, 2), spoken=found.span)
        self.bus.publish(EchoIgnored(layer="transcript", detail=text))
        return True

    def reply_started(self) -> None:
        """A new reply: what it says is collected for the checks."""
        self.spoken.append([])

    def playback_started(self) -> None:
        self.playing = True

    def spoken_texts(self) -> list[str]:
        """The last replies, each as one text (so a match may run across its chunks)."""
        return ["".join(reply) for reply in self.spoken if reply]

    def near_playback(self, sample: int) -> bool:
        """Was the assistant playing at ``sample``, or had it stopped only just before?"""
        if self.playing:
            return True
        window = int(self.cfg.echo.transcript_window_s * self.cfg.audio.sample_rate)
        return self.playback_end is not None and sample <= self.playback_end + window

    def _follow_playback(self, t: float, event: Event) -> None:
        if isinstance(event, TextChunk) and self.spoken:
            self.spoken[-1].append(event.text)
        elif isinstance(event, PlaybackFinished):
            self.playing, self.playback_end = False, self.clock.samples
            if self.room is not None and self.double_talk is not None and self.double_talk.learnt:
                self.room.keep()


def _canceller(cfg: Config) -> EchoCanceller | None:
    if not cfg.echo.cancel:
        return None
    from assistant.audio.echo import EchoCanceller

    return EchoCanceller(cfg.audio.sample_rate, noise_suppression=cfg.echo.noise_suppression,
                         gain_control=cfg.echo.gain_control)


def _linear(cfg: Config) -> LinearEchoCanceller | None:
    if not cfg.echo.linear:
        return None
    from assistant.audio.linear_echo import LinearEchoCanceller

    return LinearEchoCanceller(cfg.audio.sample_rate, filter_ms=cfg.echo.linear_filter_ms)
