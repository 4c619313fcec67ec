"""Text → token ids for the Matcha acoustic model, cut into windows of the model's fixed input length.

The icefall ``matcha-icefall-zh-baker`` recipe the model comes from defines the files:

- ``tokens.txt``: ``symbol id`` per line; the line of the word gap " " has only its id. Its symbols are
  pinyin syllables with tone digits (``ni3``), the punctuation ``, . ! ? : " '``, and ``_``, the
  blank that is put between every two tokens and at both ends (``add_blank``: n tokens → 2n + 1).
- ``lexicon.txt``: ``word symbol symbol …`` per line, for single characters and for phrases (so a
  word's tone sandhi is in the lexicon, not in code).

Chinese is matched against the lexicon longest word first, else per character; a character in
neither is skipped (one debug line per text lists them). Chinese punctuation becomes the model's
ASCII punctuation token (，→ , 。→ . …) and, at ``， 。 ！ ？ ； ：`` and the like, ends a clause.
English words go through espeak-ng's IPA (``Espeak``); the IPA symbols the token table has are kept.
The baker table has none but a few vowel letters, so that model says English barely or not at all —
a model trained with espeak symbols says it properly. Without a configured espeak library English
words are skipped, with one warning per text.

``windows`` packs the words into windows of at most ``x_len`` ids (with blanks), whole clauses while
they fit; a clause too long for a window is cut between words, a word too long, anywhere. The first
window is not cut short at the first clause: the models have static shapes, so every call costs the
same (293.6 ms + 54.7 ms measured) whatever its length, and the first audio comes after one call
whether that call holds one clause or three — a shorter first window would only add calls.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from models.protocols import ModelError

log = structlog.get_logger("tts")

BLANK = "_"
# Chinese (and full-width) punctuation → the baker table's ASCII punctuation.
PUNCTUATION = {"，": ",", "、": ",", "；": ",", ";": ",", "。": ".", "！": "!", "？": "?", "：": ":",
               "“": '"', "”": '"', "‘": "'", "’": "'", "…": ".", "—": ",", "～": ",",
               "（": ",", "）": ",", "(": ",", ")": ","}
CLAUSE_END = frozenset(",.!?:;，、；。！？：…")
MAX_WORD_CHARS = 12  # longest lexicon word tried (pypinyin's phrases are rarely longer)
_ENGLISH = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")

# espeak-ng's speak_lib.h
AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_INITIALIZE_DONT_EXIT = 0x8000
ESPEAK_CHARS_UTF8 = 1
ESPEAK_PHONEMES_IPA = 0x02


@dataclass(frozen=True)
class Word:
    """The token ids of one word (or punctuation mark), and whether a clause ends after it."""

    ids: tuple[int, ...]
    clause_end: bool = False


def read_tokens(path: Path) -> dict[str, int]:
    """``tokens.txt``: symbol → id (a line holding only an id is the word gap " ")."""
    table: dict[str, int] = {}
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            symbol, idx = (" ", int(parts[0])) if len(parts) == 1 else (parts[0], int(parts[1]))
        except ValueError:
            raise ModelError(f"tts: {path} line {number} is not 'symbol id': {line!r}") from None
        table[symbol] = idx
    if not table:
        raise ModelError(f"tts: {path} holds no tokens")
    return table


def read_lexicon(path: Path) -> dict[str, tuple[str, ...]]:
    """``lexicon.txt``: word → its symbols (the first entry of a word wins)."""
    lexicon: dict[str, tuple[str, ...]] = {}
    for line in path.read_text("utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            lexicon.setdefault(parts[0], tuple(parts[1:]))
    if not lexicon:
        raise ModelError(f"tts: {path} holds no words")
    return lexicon


class Espeak:
    """espeak-ng's text → IPA, through ctypes from an absolute library path.

    The library is opened with RTLD_GLOBAL from the configured path (LD_LIBRARY_PATH is not reliably
    passed on to subprocesses). espeak-ng keeps global state, so every call goes through one lock.
    """

    _lock = threading.Lock()

    def __init__(self, library: Path, data: Path | None = None, voice: str = "en-us") -> None:
        self.library = library
        self.data = data
        self.voice = voice
        self._lib: ctypes.CDLL | None = None

    def load(self) -> None:
        if not self.library.is_absolute() or not self.library.is_file():
            raise ModelError(f"tts: espeak-ng library {self.library} is missing (matcha.espeak_lib must be an "
                             "absolute path to libespeak-ng.so, or empty to skip English)")
        if self.data is not None and not self.data.is_dir():
            raise ModelError(f"tts: espeak-ng data folder {self.data} is missing (matcha.espeak_data)")
        try:
            lib = ctypes.CDLL(str(self.library), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise ModelError(f"tts: cannot open the espeak-ng library {self.library}: {exc}") from None
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        data = str(self.data).encode() if self.data is not None else None
        with self._lock:
            # DONT_EXIT: a missing data folder must be an error here, not the end of the process.
            if lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, data, ESPEAK_INITIALIZE_DONT_EXIT) < 0:
                raise ModelError(f"tts: espeak-ng ({self.library}) could not start with data {self.data}")
            if lib.espeak_SetVoiceByName(self.voice.encode()) != 0:
                raise ModelError(f"tts: espeak-ng has no voice {self.voice!r} (data {self.data})")
        self._lib = lib

    def ipa(self, text: str) -> str:
        """The IPA of ``text``, clauses joined by a space."""
        if self._lib is None:
            raise ModelError("tts: espeak-ng used before load()")
        buffer = ctypes.create_string_buffer(text.encode("utf-8"))
        pointer = ctypes.c_void_p(ctypes.addressof(buffer))
        parts: list[str] = []
        with self._lock:
            while pointer.value:
                out = self._lib.espeak_TextToPhonemes(ctypes.byref(pointer), ESPEAK_CHARS_UTF8, ESPEAK_PHONEMES_IPA)
                if out:
                    parts.append(out.decode("utf-8", "replace"))
        return " ".join(p.strip() for p in parts if p.strip())


class MatchaFrontend:
    """Text → ``Word``s of token ids for one lexicon and token table."""

    def __init__(self, lexicon: Path, tokens: Path, *, espeak: Espeak | None = None, add_blank: bool = True) -> None:
        self.lexicon_path = lexicon
        self.tokens_path = tokens
        self.espeak = espeak
        self.add_blank = add_blank
        self.tokens: dict[str, int] = {}
        self.lexicon: dict[str, tuple[str, ...]] = {}
        self.silent: frozenset[int] = frozenset()  # ids of punctuation, gaps and the blank: no sound alone
        self._longest = 1

    def load(self) -> None:
        self.tokens = read_tokens(self.tokens_path)
        self.lexicon = read_lexicon(self.lexicon_path)
        if self.add_blank and BLANK not in self.tokens:
            raise ModelError(f"tts: {self.tokens_path} has no blank token {BLANK!r}")
        self._longest = min(MAX_WORD_CHARS, max(len(w) for w in self.lexicon))
        self.silent = frozenset(i for s, i in self.tokens.items() if not any(c.isalnum() for c in s) or s == BLANK)
        if self.espeak is not None:
            self.espeak.load()

    @property
    def blank(self) -> int:
        return self.tokens.get(BLANK, 0)

    def words(self, text: str) -> list[Word]:
        """The words of ``text`` as token ids, in order; what cannot be said is skipped (and logged)."""
        words: list[Word] = []
        unknown: set[str] = set()
        english_skipped = False
        i = 0
        while i < len(text):
            ch = text[i]
            if english := _ENGLISH.match(text, i):
                if self.espeak is None:
                    english_skipped = True
                elif ids := self._ids(self.espeak.ipa(english.group()), chars=True):
                    words.append(Word(ids))
                else:  # the token table has none of its IPA symbols (the baker table has next to none)
                    unknown.add(english.group())
                i = english.end()
                continue
            if ch in CLAUSE_END or ch in PUNCTUATION or (ch in self.tokens and not ch.isspace()):
                symbol = PUNCTUATION.get(ch, ch)
                ids = (self.tokens[symbol],) if symbol in self.tokens else ()
                if words and ch in CLAUSE_END:  # a mark that ends a clause closes the word before it
                    words[-1] = Word(words[-1].ids + ids, clause_end=True)
                elif ids:
                    words.append(Word(ids))
                i += 1
                continue
            for size in range(min(self._longest, len(text) - i), 0, -1):
                if (symbols := self.lexicon.get(text[i:i + size])) is not None:
                    if ids := self._ids(symbols):
                        words.append(Word(ids))
                    i += size
                    break
            else:
                if not ch.isspace():
                    unknown.add(ch)
                i += 1
        if unknown:
            log.debug("characters the lexicon does not have were skipped", chars=" ".join(sorted(unknown)))
        if english_skipped:
            log.warning("English words skipped: matcha.espeak_lib is not set", text=text)
        return words

    def _ids(self, symbols: Sequence[str] | str, *, chars: bool = False) -> tuple[int, ...]:
        """Token ids of the symbols the table has (IPA strings go character by character)."""
        found = [self.tokens[s] for s in symbols if s in self.tokens and not (chars and s.isspace())]
        return tuple(found)

    def with_blanks(self, ids: Sequence[int]) -> list[int]:
        """The model's input for ``ids``: a blank before, between and after them (when the model uses blanks)."""
        if not self.add_blank:
            return list(ids)
        out = [self.blank]
        for i in ids:
            out += [i, self.blank]
        return out


def capacity(x_len: int, add_blank: bool) -> int:
    """Tokens one window holds: n tokens with blanks take 2n + 1 of the model's ``x_len`` positions."""
    return (x_len - 1) // 2 if add_blank else x_len


def windows(words: Sequence[Word], limit: int) -> list[list[int]]:
    """Token ids (without blanks) per model call, each at most ``limit`` long: whole clauses while
    they fit, a longer clause cut between words, a longer word anywhere."""
    if limit < 1:
        raise ValueError(f"windows: limit must be positive, not {limit}")
    clauses: list[list[tuple[int, ...]]] = [[]]
    for word in words:
        clauses[-1].append(word.ids)
        if word.clause_end:
            clauses.append([])
    out: list[list[int]] = []
    current: list[int] = []
    for clause in clauses:
        for piece in _pieces(clause, limit):
            if current and len(current) + len(piece) > limit:
                out.append(current)
                current = []
            current += piece
    return [*out, current] if current else out


def _pieces(clause: Sequence[tuple[int, ...]], limit: int) -> list[list[int]]:
    """A clause as pieces of at most ``limit`` tokens: whole if it fits, else cut between words."""
    pieces: list[list[int]] = [[]]
    for ids in clause:
        for start in range(0, len(ids), limit):  # a word longer than a window: cut anywhere
            part = list(ids[start:start + limit])
            if pieces[-1] and len(pieces[-1]) + len(part) > limit:
                pieces.append([])
            pieces[-1] += part
    return [p for p in pieces if p]
