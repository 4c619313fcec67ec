"""Kokoro-82M v1.0 (int8 ONNX) speaking Mandarin, with misaki's Chinese G2P.

The text is cut into clauses at punctuation, each clause is turned into phonemes by misaki's
``ZHG2P`` in its default (legacy) mode — IPA with tone arrows, the format Kokoro v1.0 was trained
on (misaki's ``version="1.1"`` writes bopomofo for the separate v1.1-zh model, which this vocab
cannot encode) — and the clauses are grouped into pieces of at most 510 phonemes, the model's
context. Each piece is one onnxruntime call on the backend's worker thread, with the voice's style
row chosen by the piece's phoneme count, and is yielded as soon as it is done.

The first piece closes at the first clause boundary so the first audio comes quickly; later
pieces are whole sentences, cut at clause punctuation only when a sentence is too long.

The model runs in two parts (``models/kokoro_split.py``): the front gives the durations, and the
decoder renders only the voiced frames (not the 0.4 s of silence Kokoro gives every start token,
nor the end token). The first piece of each text is spoken in two steps: its first frames
(``first_frames``, or more for a long piece, so the rest is ready before they have been heard) are
decoded alone and yielded at once; then the whole piece, joined to them with a short cross-fade.

``stop()`` (and cancelling the consumer) sets onnxruntime's per-run terminate flag, so even the
model call in flight ends within a fraction of a second and the worker is free for the next reply.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from models import kokoro_calibrated as kc
from models import kokoro_split as ks
from models.files import verified
from models.manifest import by_name
from models.protocols import ModelError, Samples
from models.worker import Worker

log = structlog.get_logger("tts")

_KOKORO, _VOICES = by_name("kokoro-v1.0-int8"), by_name("kokoro-zh-voices")
MODEL_SHA256 = _KOKORO.file("kokoro-v1.0.int8.onnx").sha256
VOCAB_SHA256 = _KOKORO.file("vocab.json").sha256
VOICE_SHA256 = {f.name: f.sha256 for f in _VOICES.files}

MAX_PHONEMES = 510  # 512 positions less the pad token at each end
STYLE_ROWS, STYLE_DIM = 510, 256
FIRST_PIECE_MIN = 16  # phonemes: a lone "嗯，" is too short a first piece to sound right
INPUTS = {"tokens": "tensor(int64)", "style": "tensor(float)", "speed": "tensor(float)"}

# A clause ends at a run of clause punctuation (with any closing quotes after it); ASCII . , : between
# digits (3.14, 1,299, 10:30) do not end one.
_CLAUSE_END = re.compile(r"(?:[。！？；，、：!?;\n]+|(?<!\d)[.,:]+|[.,:]+(?!\d))[”’」』）)》】]*")
_SENTENCE_END = re.compile(r"[。！？!?.\n]")
_SPOKEN = re.compile(r"\w")  # a clause with no letter or digit (a stray quote, "……") joins the one before
SILENT = ';:,.!?—…"()“” '  # phoneme-string characters that are punctuation or a gap
_SOUNDS = re.compile(f"[^{re.escape(SILENT)}]")  # any phoneme that is not punctuation or a gap
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_CLOCK = re.compile(r"(?<!\d)([01]?\d|2[0-3]):([0-5]\d)(?!\d)")
_LATIN = re.compile(r"[A-Za-z]+")
# misaki (through pypinyin) reads a 调 that jieba leaves alone as diào, as in 调动: 把空调调到二十六度,
# 音量调高, 灯调暗 come out as diào dào, diào gāo. Before a direction or a target it means "adjust",
# tiáo, and 条 (tiáo in every word) stands in for it in what the G2P reads. Not after the words where
# 调 is a tone or a tune (音调, 声调, 强调 …) or part of 空调; 声音调大 is 声音 + 调.
_ADJUST = re.compile(r"(?<![空声语曲强格单论基色腔步低])(?<!(?<!声)音)调(?=[到高低大小成亮暗回])")

# English letter names in Kokoro's phonemes. misaki's legacy Chinese G2P passes Latin text through
# unchanged, so without this capitals outside the vocab (P, K, H …) would simply vanish.
LETTERS = dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", [
    "ˈA", "bˈi", "sˈi", "dˈi", "ˈi", "ˈɛf", "ʤˈi", "ˈAʧ", "ˈI", "ʤˈA", "kˈA", "ˈɛl", "ˈɛm",
    "ˈɛn", "ˈO", "pˈi", "kjˈu", "ˈɑɹ", "ˈɛs", "tˈi", "jˈu", "vˈi", "dˈʌbᵊljˌu", "ˈɛks", "wˈI", "zˈi",
], strict=True))


def clauses(text: str) -> list[tuple[str, bool]]:
    """``text`` cut after each run of clause punctuation: (clause, whether it ends a sentence)."""
    parts: list[tuple[str, bool]] = []
    start = 0
    for m in _CLAUSE_END.finditer(text):
        parts.append((text[start:m.end()], bool(_SENTENCE_END.search(m.group()))))
        start = m.end()
    parts.append((text[start:], True))
    merged: list[tuple[str, bool]] = []
    for clause, ends in parts:
        if merged and not _SPOKEN.search(clause):
            merged[-1] = (merged[-1][0] + clause, merged[-1][1] or ends)
        elif clause.strip():
            merged.append((clause, ends))
    return merged


def normalize(clause: str) -> str:
    """Fix what misaki reads badly: 1,299 (read as 一,二百…), 10:30 (read as 十:三十), Latin letters,
    调 meaning "adjust" (read as diào)."""
    clause = _ADJUST.sub("条", _THOUSANDS.sub("", clause))
    clause = _CLOCK.sub(r"\1点\2分", clause)
    return _LATIN.sub(_latin, clause)


def _latin(m: re.Match[str]) -> str:
    """Acronyms and single letters are spelled (AI, USB); other words go through lower-cased, as IPA letters."""
    word = m.group()
    if len(word) == 1 or (word.isupper() and len(word) <= 5):
        return " " + "".join(LETTERS[c] for c in word.upper()) + " "
    return " " + word.lower().replace("g", "ɡ") + " "  # the vocab has IPA ɡ, not ASCII g


def split_long(phonemes: str, limit: int) -> list[str]:
    """A clause longer than ``limit`` phonemes cut at word gaps (or anywhere, if it has none)."""
    out: list[str] = []
    while len(phonemes) > limit:
        cut = phonemes.rfind(" ", 1, limit + 1)
        cut = cut if cut > 0 else limit
        out.append(phonemes[:cut].strip())
        phonemes = phonemes[cut:].strip()
    return [*out, phonemes] if phonemes else out


def plan(text: str, phonemize: Callable[[str], str], limit: int = MAX_PHONEMES) -> list[str]:
    """The phoneme strings to speak for ``text``, one per piece, each at most ``limit`` long."""
    pieces: list[str] = []
    current = ""
    for clause, ends_sentence in clauses(text):
        for part in split_long(phonemize(clause), limit):
            joined = f"{current} {part}" if current else part
            if current and len(joined) > limit:
                pieces.append(current)
                joined = part
            current = joined
        if current and (ends_sentence or (not pieces and len(current) >= FIRST_PIECE_MIN)):
            pieces.append(current)
            current = ""
    return [*pieces, current] if current else pieces


def _style(path: Path) -> np.ndarray:
    """A voice's style vectors, one row per phoneme count, from its verified file."""
    sha = VOICE_SHA256.get(path.name)
    if sha is None:
        raise ModelError(f"tts: unknown Kokoro voice {path.stem}; expected one of "
                         f"{', '.join(sorted(n.removesuffix('.bin') for n in VOICE_SHA256))}")
    verified(path, sha, "tts")
    return np.fromfile(path, "<f4").reshape(STYLE_ROWS, 1, STYLE_DIM)


class KokoroTts:
    """The ``Tts`` protocol on Kokoro-82M v1.0 int8 with one Mandarin voice."""

    sample_rate = 24000

    def __init__(self, model_path: Path, vocab_path: Path, voice_path: Path, *,
                 threads: int = 2, speed: float = 1.0, first_frames: int = 16,
                 voiced_only: bool = True, onset_frames: int = 0, calibrated: Path | None = None) -> None:
        if threads < 1:
            raise ValueError(f"tts: threads must be at least 1, not {threads}")
        if not 0.5 <= speed <= 2.0:
            raise ValueError(f"tts: speed must be within 0.5–2.0, not {speed}")
        self.model_path = model_path
        self.vocab_path = vocab_path
        self.voice_path = voice_path
        self.threads = threads
        self.speed = speed
        self.first_frames = first_frames  # 0: the first piece is not spoken early
        self.voiced_only = voiced_only  # False: every frame is rendered, exactly as the whole model would
        self.onset_frames = onset_frames  # played before the first phoneme's aligned frame (kokoro_split.span)
        # None: the export's own decoder; else where its calibrated decoder is kept (built there if missing)
        self.calibrated = calibrated
        self._worker = Worker("tts")
        self._front: Any = None  # onnxruntime.InferenceSession of the front, used only on the worker
        self._decoder: Any = None  # ... and of the decoder
        self._front_names: list[str] = []
        self._vocab: dict[str, int] = {}
        self._voice = np.zeros((STYLE_ROWS, 1, STYLE_DIM), np.float32)
        self._g2p: Callable[[str], tuple[str, Any]] | None = None
        self._running: set[Any] = set()  # the onnxruntime.RunOptions of every stream in progress

    def load(self) -> None:
        self._worker.call(self._create)

    @property
    def voice(self) -> str:
        """The voice it speaks with now."""
        return self.voice_path.stem

    @property
    def voices(self) -> list[str]:
        """The Mandarin voices it can speak with: those whose files lie beside the configured one."""
        return sorted(n.removesuffix(".bin") for n in VOICE_SHA256 if (self.voice_path.parent / n).is_file())

    async def use_voice(self, name: str) -> None:
        """Speak with voice ``name`` (one of ``voices``) from the next ``synthesize`` on."""
        if name != self.voice:
            path = self.voice_path.parent / f"{name}.bin"
            self._voice = await self._worker.run(_style, path)
            self.voice_path = path

    def _create(self) -> None:
        verified(self.model_path, MODEL_SHA256, "tts")
        verified(self.vocab_path, VOCAB_SHA256, "tts")
        voice = _style(self.voice_path)

        import onnxruntime as ort
        from misaki.zh import ZHG2P

        self._vocab = {str(k): int(v) for k, v in json.loads(self.vocab_path.read_text("utf-8"))["vocab"].items()}
        self._voice = voice
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # a terminated run is expected, not worth an error line
        # The worker thread spins between the decoder's ~1,200 small ops (a futex wake-up for each
        # costs ~20 ms a head) and stops at the end of every run, leaving the cores to VAD, KWS and LLM.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        options.add_session_config_entry("session.force_spinning_stop", "1")
        front, decoder = ks.split(self.model_path)
        try:
            self._front = ort.InferenceSession(front, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(f"tts: onnxruntime could not load {self.model_path}: {exc}") from None
        self._front_names = [o.name for o in self._front.get_outputs()]
        found = {i.name: i.type for i in self._front.get_inputs()}
        if found != INPUTS:
            raise ModelError(f"tts: {self.model_path} is not a Kokoro v1.0 export (inputs {found})")
        self._g2p = ZHG2P(version=None)  # legacy IPA output: the phoneme set Kokoro v1.0 knows
        logging.getLogger("jieba").setLevel(logging.WARNING)  # it prints its dictionary loading to stderr
        self._g2p("预热")  # jieba builds its dictionary on first use (about 1 s): not on the first reply
        graph: bytes | str = decoder  # the export's, or the calibrated one's file
        where = self.model_path
        if self.calibrated is not None:
            self._calibrate(decoder, self.calibrated)
            graph, where = str(self.calibrated), self.calibrated
        try:
            self._decoder = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(f"tts: onnxruntime could not load the decoder of {where}: {exc}") from None

    def _calibrate(self, decoder: bytes, path: Path) -> None:
        """Build the calibrated decoder at ``path`` unless it is there (``models.kokoro_calibrated``)."""
        if path.is_file():
            return
        import onnxruntime as ort

        log.info("building Kokoro's calibrated decoder, once (about a minute)", path=str(path))
        started = time.monotonic()
        feeds = []
        for text in kc.CALIBRATION:
            for phonemes in self._plan(text):
                front = self._run_front(phonemes, ort.RunOptions())
                if front is not None:
                    s = ks.span(front, phonemes, SILENT, self.onset_frames)
                    feeds.append(front.feed(s.start, s.end))
        try:
            kc.build(decoder, kc.windows(feeds), path)
        except OSError as exc:
            raise ModelError(f"tts: could not write the calibrated decoder to {path}: {exc}") from None
        log.info("calibrated decoder built", seconds=round(time.monotonic() - started, 1))

    def close(self) -> None:
        self.stop()
        self._worker.close()
        self._front = self._decoder = None
        self._g2p = None

    def stop(self) -> None:
        """End every stream now: the model call in flight is terminated, no further piece is made."""
        for options in self._running:
            options.terminate = True

    def pieces(self, text: str) -> list[str]:
        """The phoneme strings ``synthesize`` would speak for ``text``, one per piece (for tests and logs)."""
        return self._worker.call(self._plan, text)

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Float32 audio at 24 kHz, piece by piece; nothing at all for text with nothing to say."""
        import onnxruntime as ort

        options = ort.RunOptions()
        self._running.add(options)
        try:
            for index, phonemes in enumerate(await self._worker.run(self._plan, text)):
                front = await self._worker.run(self._run_front, phonemes, options)
                if front is None:
                    return
                s = ks.span(front, phonemes, SILENT, self.onset_frames) if self.voiced_only else ks.whole(front)
                head = ks.head_frames(s, self.first_frames) if index == 0 and self.first_frames else s.frames
                early = None
                if s.voice + head + 8 < s.end:  # worth it only if something is left for the second step
                    early = await self._worker.run(self._decode, front, s.start, s.voice + head, options)
                    if early is None:
                        return
                    early = ks.played(early, s)
                    yield early[: early.size - ks.FADE]
                whole = await self._worker.run(self._decode, front, s.start, s.end, options)
                if whole is None:
                    return
                whole = ks.played(whole, s)
                yield whole if early is None else ks.splice(early, whole)
        finally:
            options.terminate = True  # a cancelled consumer must not leave the worker busy
            self._running.discard(options)

    def front(self, phonemes: str) -> ks.Front:
        """The front's output for one piece (for the NPU build and its tests)."""
        import onnxruntime as ort

        front = self._worker.call(self._run_front, phonemes, ort.RunOptions())
        if front is None:
            raise ModelError("tts: the front was stopped")
        return front

    def render_whole(self, front: ks.Front) -> Samples:
        """Every frame of a piece decoded in one call: exactly what the whole export renders."""
        import onnxruntime as ort

        audio = self._worker.call(self._decode, front, 0, int(front.durations.sum()), ort.RunOptions())
        if audio is None:
            raise ModelError("tts: the decoder was stopped")
        return audio

    def _plan(self, text: str) -> list[str]:
        return plan(text, self._phonemize)

    def _phonemize(self, clause: str) -> str:
        if self._g2p is None:
            raise ModelError("tts: used before load()")
        try:
            phonemes, _ = self._g2p(normalize(clause))
        except Exception as exc:  # one odd clause must not silence the whole reply
            log.warning("g2p failed; clause skipped", clause=clause, error=repr(exc))
            return ""
        kept = re.sub(r" {2,}", " ", "".join(c for c in phonemes if c in self._vocab)).strip()
        return kept if _SOUNDS.search(kept) else ""  # punctuation alone would be a piece of noise

    def _run_front(self, phonemes: str, options: Any) -> ks.Front | None:
        """Durations and aligned features of one piece; None if it was stopped."""
        if self._front is None:
            raise ModelError("tts: used before load()")
        ids = [self._vocab[c] for c in phonemes]
        style = self._voice[min(len(ids) - 1, STYLE_ROWS - 1)]
        feed = {"tokens": np.array([[0, *ids, 0]], np.int64), "style": style,
                "speed": np.array([self.speed], np.float32)}
        try:
            outputs = self._front.run(self._front_names, feed, options)
        except Exception as exc:
            if options.terminate:
                return None
            raise ModelError(f"tts: kokoro failed on {len(ids)} phonemes: {exc}") from None
        return ks.front_of(outputs, self._front_names, style)

    def _decode(self, front: ks.Front, start: int, end: int, options: Any) -> Samples | None:
        """Frames ``start``–``end`` rendered; None if it was stopped."""
        try:
            (audio,) = self._decoder.run(["audio"], front.feed(start, end), options)
        except Exception as exc:
            if options.terminate:
                return None
            raise ModelError(f"tts: kokoro's decoder failed on frames {start}–{end}: {exc}") from None
        return np.asarray(audio, np.float32).reshape(-1)
