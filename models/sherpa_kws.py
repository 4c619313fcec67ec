"""Keyword spotting with sherpa-onnx's streaming zipformer (WenetSpeech 3.3M, pinyin units).

Wake words are configured in Chinese characters; at load they are turned into the model's pinyin
tokens (``sherpa_onnx.text2token``, with pypinyin), each with the boost score and trigger threshold
from config, and written to the keywords file sherpa-onnx reads.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models import sherpa_build
from models.files import runtime_dir
from models.protocols import ModelError, Samples
from models.worker import Worker

MODEL = "kws-zipformer-wenetspeech-3.3M"
ENCODER = "encoder-epoch-12-avg-2-chunk-16-left-64.int8.onnx"
DECODER = "decoder-epoch-12-avg-2-chunk-16-left-64.onnx"
JOINER = "joiner-epoch-12-avg-2-chunk-16-left-64.int8.onnx"
TOKENS = "tokens.txt"


@dataclass(frozen=True)
class Keyword:
    text: str  # in Chinese characters
    boost: float = 1.0  # sherpa-onnx keywords_score: how much the keyword's path is favoured
    threshold: float = 0.25  # trigger threshold: higher fires less often


def keyword_lines(keywords: list[Keyword], tokens: Path) -> list[str]:
    """The keywords file lines, e.g. ``x iǎo zh ì x iǎo zh ì :1.0 #0.25 @小智小智``."""
    import sherpa_onnx

    for kw in keywords:
        if not kw.text or any(not ("\u4e00" <= ch <= "\u9fff") for ch in kw.text):
            raise ModelError(f"kws: wake word {kw.text!r} must be written in Chinese characters only")
    try:
        token_lists = sherpa_onnx.text2token([k.text for k in keywords], tokens=str(tokens), tokens_type="ppinyin")
    except Exception as exc:  # an unknown token raises inside sherpa's helper
        raise ModelError(f"kws: cannot turn the wake words into pinyin tokens: {exc}") from None
    return [f"{' '.join(toks)} :{kw.boost:g} #{kw.threshold:g} @{kw.text}"
            for kw, toks in zip(keywords, token_lists, strict=True)]


class SherpaKws:
    """The ``Kws`` protocol: feed the live stream, get the keyword when one is spotted."""

    sample_rate = 16000

    def __init__(self, model_dir: Path, keywords: list[Keyword], *, threads: int = 1, provider: str = "cpu") -> None:
        if not keywords:
            raise ModelError("kws: no wake words configured (wake.keywords)")
        self.model_dir = model_dir
        self.keywords = keywords
        self.threads = threads
        # "rknn" only with an RKNN build of sherpa-onnx and .rknn model files; otherwise the CPU
        self.provider = sherpa_build.usable(provider, "kws", [model_dir / n for n in (ENCODER, DECODER, JOINER)])
        self._worker = Worker("kws")
        self._spotter: Any = None
        self._stream: Any = None
        self._keywords_file: Path | None = None

    def load(self) -> None:
        lines = keyword_lines(self.keywords, self.model_dir / TOKENS)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="tingshuo-kws-", delete=False,
                                         encoding="utf-8", dir=runtime_dir()) as f:
            f.write("\n".join(lines) + "\n")
            self._keywords_file = Path(f.name)
        try:
            self._worker.call(self._create)
        finally:
            self._keywords_file.unlink(missing_ok=True)  # read by the spotter as it is made

    def _create(self) -> None:
        import sherpa_onnx

        for name in (ENCODER, DECODER, JOINER, TOKENS):
            if not (self.model_dir / name).is_file():
                raise ModelError(f"kws: {self.model_dir / name} is missing")
        self._spotter = sherpa_onnx.KeywordSpotter(
            tokens=str(self.model_dir / TOKENS), encoder=str(self.model_dir / ENCODER),
            decoder=str(self.model_dir / DECODER), joiner=str(self.model_dir / JOINER),
            keywords_file=str(self._keywords_file), num_threads=self.threads, provider=self.provider)
        self._stream = self._spotter.create_stream()

    def close(self) -> None:
        self._worker.close()
        self._spotter = self._stream = None
        if self._keywords_file is not None:
            self._keywords_file.unlink(missing_ok=True)

    def reset(self) -> None:
        """Start a fresh stream (after a wake, or when idle is re-entered)."""
        if self._spotter is not None:
            self._stream = self._worker.call(self._spotter.create_stream)

    async def accept(self, samples: Samples) -> str | None:
        return await self._worker.run(self._accept, samples)

    def _accept(self, samples: Samples) -> str | None:
        spotter, stream = self._spotter, self._stream
        if spotter is None or stream is None:
            raise ModelError("kws: used before load()")
        stream.accept_waveform(self.sample_rate, samples)
        found = None
        while spotter.is_ready(stream):
            spotter.decode_stream(stream)
            result = spotter.get_result(stream)
            if result:
                found = str(result)
                spotter.reset_stream(stream)
        return found
