"""A second ear: the keyword spotter's zipformer as a recogniser of syllables.

The KWS model (sherpa-onnx's streaming zipformer transducer, WenetSpeech, 3.3 M parameters) is
trained on 10,000 hours of real Mandarin with pinyin initials and toned finals as its units. Decoded
freely (greedy, no keyword graph) it writes what it heard as syllables: 告诉我你是谁你叫什么名字
came out gào sù wǒ nǐ shì shuí nǐ jiā shén me míng zì, 但是对他们是很大的刺激的这些事情 exactly. It
errs in other places than Whisper, so where the two disagree the transcript can be spelled again
(``assistant.text.ear_repair``). ``syllables(samples)`` gives toneless syllables (ü as v), as
pypinyin writes them; English letters and unknown units are dropped.

It runs on its caller's thread (the ASR's worker): a short request takes a few tens of milliseconds.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import numpy as np

from models.protocols import ModelError, Samples
from models.sherpa_kws import DECODER, ENCODER, JOINER, TOKENS

INITIALS = frozenset(("b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h", "j", "q", "x", "zh", "ch", "sh", "r",
                      "z", "c", "s", "y", "w"))
TAIL_S = 0.5  # silence after the utterance, so the streaming encoder emits its last frames


def toneless(unit: str) -> str:
    """A toned final as pypinyin writes it without tones: ǎo → ao, ǚ → v."""
    bare = "".join(c for c in unicodedata.normalize("NFD", unit) if not unicodedata.combining(c) or c == "\u0308")
    return unicodedata.normalize("NFC", bare).replace("u\u0308", "v").replace("ü", "v")


def syllables_of(units: list[str]) -> list[str]:
    """Initials and finals joined into syllables: ["n", "ǐ", "h", "ǎo"] → ["ni", "hao"]."""
    out, initial = [], ""
    for unit in units:
        unit = toneless(unit.strip())
        if unit in INITIALS:
            initial = unit
        elif unit.isalpha() and unit.islower():
            out.append(initial + unit)
            initial = ""
        else:  # an English letter or a special unit
            initial = ""
    return out


class PinyinEar:
    """Syllables heard in an utterance, by the KWS zipformer decoded without keywords."""

    sample_rate = 16000

    def __init__(self, model_dir: Path, *, threads: int = 1) -> None:
        self.model_dir = model_dir
        self.threads = threads
        self._recognizer: Any = None

    def load(self) -> None:
        import sherpa_onnx

        files = {name: self.model_dir / name for name in (ENCODER, DECODER, JOINER, TOKENS)}
        missing = [name for name, path in files.items() if not path.is_file()]
        if missing:
            raise ModelError(f"ear: {self.model_dir} lacks {', '.join(missing)}")
        self._recognizer = sherpa_onnx.OnlineRecognizer.from_transducer(
            tokens=str(files[TOKENS]), encoder=str(files[ENCODER]), decoder=str(files[DECODER]),
            joiner=str(files[JOINER]), num_threads=self.threads, sample_rate=self.sample_rate, feature_dim=80,
            decoding_method="greedy_search")

    def close(self) -> None:
        self._recognizer = None

    def syllables(self, samples: Samples) -> list[str]:
        recognizer = self._recognizer
        if recognizer is None:
            raise ModelError("ear: used before load()")
        stream = recognizer.create_stream()
        stream.accept_waveform(self.sample_rate, np.asarray(samples, dtype=np.float32))
        stream.accept_waveform(self.sample_rate, np.zeros(int(TAIL_S * self.sample_rate), np.float32))
        stream.input_finished()
        while recognizer.is_ready(stream):
            recognizer.decode_stream(stream)
        return syllables_of(list(recognizer.get_result_all(stream).tokens))
