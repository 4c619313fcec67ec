"""Whisper (CTranslate2, via faster-whisper) speech recognition for Mandarin.

Decoding is pinned to Chinese (greedy or beam search), and an initial prompt in Simplified Chinese
keeps the output from drifting into Traditional characters; what still slips through is converted
with OpenCC (t2s). Segments are pulled one at a time on the backend's thread, so ``stop()`` lands
between segments.

``hotwords`` (the command vocabulary) go into Whisper's prompt as context, so 待办 is more likely
than 待半. Given on all speech, they cost general speech more than they gain commands (广州市 heard
as 闹钟室), so with ``likely_command`` they are given only where a command is likely: the utterance
is decoded without them, and when the plain transcript sounds like a command (the caller's
predicate), decoded again with them from the same encoder output (the decoder alone: a few tens of
milliseconds for a short request). ``pooled`` (with a rescorer) decodes every utterance both ways
from the same encoder output and lets the rescoring weigh the readings of both together: the
command words then only add readings (今天是星期几 beside 今天是丁齐吉), and the plain ones stay
in the running, where the likely-command test had to choose between them on the plain transcript
alone.

With a ``rescorer`` (``models.llama_scorer``) and beam search, Whisper's ``n_best`` hypotheses are
weighed again by a language model that knows Chinese: each one's Whisper log-probability plus
``rescore_weight`` times the language model's (公子是哪个国家的人 gives way to 孔子…, 首度 to 首都).
(The short-window path only: an utterance near 30 s, or one the short window sends looping, keeps
faster-whisper's first.) A transcript Whisper itself doubts — mean token log-probability below
``min_avg_logprob``, or a no-speech probability above ``max_no_speech_prob`` in a transcript that
loops or stutters as Whisper's readings of noise do — is returned empty, so the assistant asks again
instead of answering something that was not said. A high no-speech probability alone is no doubt,
as in Whisper's own rule (which wants a low log-probability as well): a request cut short after its
last syllable can score 0.85 and be heard right (太阳系有几颗行星, mean −0.62).

``char_logprob(text)`` says how likely the rescoring model finds a transcript as Mandarin: its mean
log-probability per character. Most near-misses Whisper is sure of read as nonsense to it (胎红又几种颜色
−6.5, 不认他 for 我饿了 −6.9; the requests heard right in the spoken evaluation are above −5 but one), so
the responder asks again rather than have the LLM answer words nobody said. The last transcription's
hypotheses were weighed already; only a text it did not weigh costs a forward pass.
``readings(text)`` gives the other weighed hypotheses of the transcription that gave ``text``, most
likely first (九成以七十多少 beside 周成以七十多少): the responder looks there for a command the chosen
reading missed, or a sum whose numbers the readings disagree on.

With an ``ear`` (``models.pinyin_ear``: the keyword spotter's zipformer, hearing syllables) and a
``mender`` (``assistant.text.ear_repair``), the transcript is spelled again where the second ear
heard other syllables, when the rescoring model finds the mended words clearly likelier (等摩环节紧张
→ 怎么缓解紧张); Whisper's own transcript is then one of the other readings. Only a transcript the
rescoring model finds less likely than ``mend_below`` (per character) is mended: one that reads as
Mandarin already costs nothing more.

The encoder window is sized to the utterance: faster-whisper always pads the features to Whisper's
30 s (3000 frames), but CTranslate2's encoder takes fewer frames, and a request of a few seconds
needs far less work. ``window_s`` is the smallest window; a longer utterance gets itself plus
``WINDOW_MARGIN_S``. With ``window_s = 30`` (or an utterance near 30 s) faster-whisper's own
segment loop runs, exactly as before. A run is stopped between its steps (features, encoder,
decoder, weighing): a dropped speculative transcription frees the worker for the final one.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import structlog

from models.protocols import ModelError, Rescorer, Samples
from models.worker import Worker

log = structlog.get_logger("asr")

PROMPT = "以下是普通话的句子。"
FULL_WINDOW_S = 30.0
WINDOW_MARGIN_S = 1.0
FRAMES_PER_S = 100  # Whisper's log-mel hop is 10 ms
TOKENS_PER_S = 15  # far above fast Mandarin (about 6 characters, 8 tokens a second): a bound on loops
SEED = 20261202  # the sampling fallback's; CTranslate2 seeds a worker's generator on its first use
# only, so a replay's sampled readings can differ from the first run's (asr.fallback is off by default)
LENGTH_SLACK = 0.2  # rescoring weighs hypotheses within this share of the first one's length
RESCORED_CHARS = 60  # ... and only a first hypothesis up to this many characters
WEIGHED_MIN_CHARS = 3  # shorter, one token carries all the surprise of a sentence's start (对 −8.2, 算了 −6.3)
_STUTTER = re.compile(r"(\D)\1\1")
MAX_COMPRESSION = 2.4  # faster-whisper's threshold: text that zips this well is a decoding loop


class Stopped(Exception):
    """A transcription was called off between two of its steps."""


class WhisperAsr:
    """The ``Asr`` protocol on a CTranslate2 Whisper model folder (model.bin, config, tokenizer)."""

    sample_rate = 16000

    def __init__(self, model_dir: Path, *, threads: int = 2, decoding_threads: int = 1,
                 compute_type: str = "int8", beam_size: int = 1,
                 language: str = "zh", initial_prompt: str = PROMPT, hotwords: str = "",
                 min_avg_logprob: float = float("-inf"), max_no_speech_prob: float = 1.0,
                 window_s: float = FULL_WINDOW_S, full_from_s: float = 0.0,
                 likely_command: Callable[[str], bool] | None = None,
                 fallback: tuple[float, ...] = (), rescorer: Rescorer | None = None, n_best: int = 5,
                 rescore_weight: float = 0.3, ear: Ear | None = None, mender: Mender | None = None,
                 mend_below: float = 0.0, pooled: bool = False) -> None:
        if not 1.0 <= window_s <= FULL_WINDOW_S:
            raise ValueError(f"asr: window_s must be within 1–30 s, not {window_s}")
        self.model_dir = model_dir
        self.threads = threads
        self.decoding_threads = decoding_threads  # CTranslate2's threads per call
        self.compute_type = compute_type
        self.beam_size = beam_size
        self.language = language
        self.initial_prompt = initial_prompt
        self.hotwords = hotwords
        self.min_avg_logprob = min_avg_logprob
        self.max_no_speech_prob = max_no_speech_prob
        self.window_s = window_s
        self.full_from_s = full_from_s  # an utterance this long (0: none) goes through the full window
        self.likely_command = likely_command  # None: the hot words are context for all speech
        self.fallback = fallback  # sampling temperatures to try where greedy decoding fails its checks
        self.rescorer = rescorer if beam_size > 1 else None  # greedy decoding has one hypothesis
        self.n_best = n_best
        self.rescore_weight = rescore_weight
        # both decodings weighed together: only with something to weigh them, and words to give
        self.pooled = pooled and self.rescorer is not None and bool(hotwords)
        # the second ear mends a transcript only as the rescoring model finds it likelier
        mends = self.rescorer is not None and ear is not None and mender is not None
        self.ear: Ear | None = ear if mends else None
        self.mender: Mender | None = mender if mends else None
        self.mend_below = mend_below  # only a transcript less likely than this (per character) is mended
        self.last_scores: tuple[float, float] | None = None  # (mean log-prob, no-speech prob) of the last run
        self._weighed: dict[str, float] = {}  # the rescorer's summed log-prob of each text it weighed last
        self._ranked: list[str] = []  # the last weighing's readings, likeliest first
        self._readings: tuple[str, list[str]] = ("", [])  # the last transcript, and its other readings
        self._worker = Worker("asr")
        self._model: Any = None
        self._t2s: Any = None
        self._tokenizer: Any = None
        self._suppress: list[int] = []
        self._prompt: list[int] = []  # with the hot words
        self._plain: list[int] = []  # without them
        self._bare: list[int] = []  # without the initial prompt either: for audio that drew the prompt back
        self._running: set[threading.Event] = set()  # the stop flag of every transcription in progress
        self._spent: dict[str, float] = {}  # seconds per step of the transcription in progress (logged)

    def load(self) -> None:
        self._worker.call(self._load)

    def _load(self) -> None:
        try:
            import opencc
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ModelError(f"asr: faster-whisper or opencc is not installed ({exc})") from None
        try:
            # ``threads // decoding_threads`` workers, sharing the weights, each decoding one prompt (the
            # two of "pooled" side by side): CTranslate2's own threads made beam search about three
            # times slower on a 2-core Xeon (benchmarks/asr_threads.py).
            self._model = WhisperModel(str(self.model_dir), device="cpu", compute_type=self.compute_type,
                                       cpu_threads=self.decoding_threads,
                                       num_workers=max(1, self.threads // self.decoding_threads),
                                       local_files_only=True)
        except Exception as exc:  # CTranslate2 raises RuntimeError/ValueError on a bad folder
            raise ModelError(f"asr: cannot load Whisper from {self.model_dir}: {exc}") from None
        self._t2s = opencc.OpenCC("t2s")
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        self._tokenizer = Tokenizer(self._model.hf_tokenizer, self._model.model.is_multilingual,
                                    task="transcribe", language=self.language)
        self._suppress = list(get_suppressed_tokens(self._tokenizer, (-1,)) or ())
        context = self._tokenizer.encode(" " + self.initial_prompt.strip()) if self.initial_prompt else []
        self._prompt = self._model.get_prompt(self._tokenizer, context, without_timestamps=True,
                                              hotwords=self.hotwords or None)
        self._plain = self._model.get_prompt(self._tokenizer, context, without_timestamps=True)
        self._bare = self._model.get_prompt(self._tokenizer, [], without_timestamps=True)
        if self.rescorer is not None:
            self.rescorer.load()
        if self.ear is not None and self.mender is not None:
            self.ear.load()
            self.mender.load()

    def close(self) -> None:
        if self.rescorer is not None:
            self._worker.call(self.rescorer.close)
        if self.ear is not None:
            self._worker.call(self.ear.close)
        self._worker.close()
        self._model = None

    def stop(self) -> None:
        """Call off every transcription in progress (each ends at its next step, with "")."""
        for stop in list(self._running):
            stop.set()

    async def char_logprob(self, text: str) -> float | None:
        """The rescoring model's mean log-probability per character of ``text`` (letters and digits),
        or None without a rescorer, for a text shorter than ``WEIGHED_MIN_CHARS``, or one longer than
        the rescoring weighs."""
        if self.rescorer is None or self._t2s is None:
            return None
        content = _content(self._t2s.convert(text))
        if len(content) < WEIGHED_MIN_CHARS or len(content) > RESCORED_CHARS:
            return None
        summed = await self._worker.run(self._weighed_once, content)
        return summed / len(content) if summed > -math.inf else None

    async def readings(self, text: str) -> list[str]:
        """The other readings Whisper's beam weighed for the transcription that gave ``text`` (Simplified,
        likeliest first), or [] when ``text`` is not the last transcript or nothing was weighed."""
        last, others = self._readings
        return list(others) if text and text == last else []

    def _weighed_once(self, content: str) -> float:
        """``content``'s summed log-probability, from the last weighing when it was among its texts."""
        if content not in self._weighed:
            assert self.rescorer is not None
            self._weighed[content] = self.rescorer.logprobs([content])[0]
        return self._weighed[content]

    async def transcribe(self, samples: Samples) -> str:
        stop = threading.Event()
        self._running.add(stop)
        try:
            return await self._worker.run(self._transcribe, samples, stop, time.perf_counter())
        finally:
            stop.set()  # a cancelled caller (a dropped speculation) must not keep the worker busy
            self._running.discard(stop)

    def _transcribe(self, samples: Samples, stop: threading.Event, asked: float | None = None) -> str:
        """The transcript (on the worker thread; ``asked``: when the call was made, for the log)."""
        if self._model is None:
            raise ModelError("asr: used before load()")
        started = time.perf_counter()
        self._spent = {"queued": started - asked} if asked is not None else {}
        try:
            return self._heard(samples, stop)
        finally:
            log.debug("transcription timed", audio_s=round(len(samples) / self.sample_rate, 2), stopped=stop.is_set(),
                      total=round(time.perf_counter() - started, 3), **{k: round(v, 3) for k, v in self._spent.items()})

    @contextlib.contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self._spent[step] = self._spent.get(step, 0.0) + time.perf_counter() - started

    def _heard(self, samples: Samples, stop: threading.Event) -> str:
        seconds = len(samples) / self.sample_rate
        self._weighed, self._ranked = {}, []
        biased = self.likely_command is None  # the hot words from the start
        try:
            full = self.window_s >= FULL_WINDOW_S or seconds + WINDOW_MARGIN_S >= FULL_WINDOW_S
            if full or (self.full_from_s and seconds >= self.full_from_s):
                text, mean, no_speech = self._full(samples, stop, biased)
            else:
                text, mean, no_speech = self._windowed(samples, stop, biased)
                if _looped(text):  # a short window can send the decoder round in circles: the full one
                    log.info("decoder looped on the short window: transcribing with the full one", text=text[:40])
                    text, mean, no_speech = self._full(samples, stop, biased)
        except Stopped:
            return ""
        checked = self._checked(str(self._t2s.convert(text)), mean, no_speech)
        heard = self._mended(checked, samples, stop)
        chosen = _content(heard)
        readings = [checked, *self._ranked] if heard != checked else self._ranked
        self._readings = (heard, list(dict.fromkeys(r for r in readings if _content(r) != chosen)) if heard else [])
        return heard

    def _mended(self, text: str, samples: Samples, stop: threading.Event) -> str:
        """``text`` as the second ear mends it (where it heard other syllables and the rescoring model
        finds the mended words likelier), or as it is."""
        if not text or self.ear is None or self.mender is None or stop.is_set():
            return text
        content = _content(text)
        if not content or self._logprobs([text])[0] / len(content) >= self.mend_below:
            return text  # likely Mandarin as it is: the ear's spelling could only trade it for a homophone
        mended = self.mender(text, self.ear.syllables(samples), self._logprobs)
        if mended != text:
            log.info("transcript mended by the second ear", whisper=text, now=mended)
        return mended

    def _logprobs(self, texts: list[str]) -> list[float]:
        """The rescoring model's summed log-probability of each text's letters, weighed once each."""
        assert self.rescorer is not None
        contents = [_content(t) for t in texts]
        new = [c for c in dict.fromkeys(contents) if c not in self._weighed]
        if new:
            self._weighed.update(zip(new, self.rescorer.logprobs(new), strict=True))
        return [self._weighed[c] for c in contents]

    def _full(self, samples: Samples, stop: threading.Event, biased: bool) -> tuple[str, float, float]:
        """faster-whisper's own loop, and again with the hot words if the plain transcript sounds like
        a command (the encoder runs twice: only for long or looping utterances)."""
        decoded = self._segments(samples, stop, biased)
        return self._segments(samples, stop, True) if not biased and self._again(decoded[0]) else decoded

    def _again(self, text: str) -> bool:
        """Whether a plain transcript sounds like a command, so it is decoded again with the hot words."""
        if self.likely_command is None or not self.hotwords or not text:
            return False
        if self.likely_command(str(self._t2s.convert(text))):
            log.info("a likely command: decoding again with the command words", plain=text)
            return True
        return False

    def _windowed(self, samples: Samples, stop: threading.Event, biased: bool) -> tuple[str, float, float]:
        """One encoder pass over the utterance + margin (at least ``window_s``), then greedy/beam decoding:
        ``biased`` with the hot words; else without, and again with them if it sounds like a command."""
        from faster_whisper.audio import pad_or_trim

        model = self._model
        features = model.feature_extractor(samples)
        wanted = len(samples) / self.sample_rate + WINDOW_MARGIN_S
        frames = int(min(FULL_WINDOW_S, max(self.window_s, wanted)) * FRAMES_PER_S)
        if stop.is_set():
            raise Stopped
        with self._timed("encoder"):
            encoded = model.encode(pad_or_trim(features, frames))
        new_tokens = int(TOKENS_PER_S * len(samples) / self.sample_rate) + 16
        if biased or self.pooled:
            prompts = [self._prompt] if biased else [self._plain, self._prompt]
            decoded = self._decode(encoded, prompts, new_tokens, stop)
        else:
            decoded = self._decode(encoded, [self._plain], new_tokens, stop)
            if self._again(decoded[0]):
                decoded = self._decode(encoded, [self._prompt], new_tokens, stop)
        if _echoes_prompt(str(self._t2s.convert(decoded[0])), self.initial_prompt):
            # the prompt drew itself back (以下是普通话的句子 for a short 我饿了): heard without it
            log.info("Whisper wrote its own prompt: decoding again without it", text=decoded[0])
            decoded = self._decode(encoded, [self._bare], new_tokens, stop)
        return decoded

    def _decode(self, encoded: Any, prompts: list[list[int]], new_tokens: int,
                stop: threading.Event) -> tuple[str, float, float]:
        """Greedy (or beam) decoding, once per prompt, the hypotheses of all weighed together; where
        that fails Whisper's own checks (a doubted or looping transcript) and ``fallback``
        temperatures are given, sampled again (the first prompt) at each in turn, seeded (see ``SEED``),
        until one passes (else the likeliest)."""
        best = self._generate(encoded, prompts, new_tokens, stop, 0.0)
        for temperature in self.fallback:
            if best[1] >= self.min_avg_logprob and not _looped(best[0]):
                break
            again = self._generate(encoded, prompts[:1], new_tokens, stop, temperature)
            log.info("transcript sampled again", temperature=temperature, was=best[0], now=again[0])
            best = again if again[1] > best[1] else best
        return best

    def _generate(self, encoded: Any, prompts: list[list[int]], new_tokens: int, stop: threading.Event,
                  temperature: float) -> tuple[str, float, float]:
        if stop.is_set():
            raise Stopped
        jobs = [self._submit(encoded, prompt, new_tokens, temperature) for prompt in prompts]
        try:  # decoded side by side, and every one waited for: none outlives the transcription
            with self._timed("decoder"):
                found, no_speech = self._hypotheses(jobs[0])
                if len(_content(self._t2s.convert(found[0][0]))) <= RESCORED_CHARS:  # else the first reading stands
                    for job in jobs[1:]:
                        found += self._hypotheses(job)[0]
        finally:
            _finish(jobs)
        if stop.is_set():
            raise Stopped  # dropped while decoding: its readings are not worth weighing
        rescorer = self.rescorer
        ranked: list[Hypothesis] = []
        with self._timed("rescoring"):
            text = (rescored(found, rescorer, self.rescore_weight, self._t2s.convert, self._weighed, ranked)[0]
                    if rescorer and len(found) > 1 else found[0][0])
        if temperature == 0:
            self._ranked = [str(self._t2s.convert(h[0])) for h in ranked]
        # How sure Whisper is of the audio is its own best hypothesis' score (faster-whisper's
        # avg_logprob), whichever reading the rescoring chose: a less likely reading of the same
        # words is no reason to call the whole utterance uncertain (corpus 029 was dropped so).
        _, summed, length = found[0]
        return text, summed / (length + 1), no_speech

    def _submit(self, encoded: Any, prompt: list[int], new_tokens: int, temperature: float) -> Any:
        """The decoding after ``prompt`` (``n_best`` hypotheses with a rescorer, else one), started on a
        free CTranslate2 worker; ``_hypotheses`` waits for it."""
        model = self._model
        sampling: dict[str, Any] = {}
        hypotheses = self.n_best if self.rescorer is not None and temperature == 0 else 1
        if temperature > 0:
            import ctranslate2

            ctranslate2.set_random_seed(SEED)
            sampling = {"sampling_topk": 0, "sampling_temperature": temperature}
        return model.model.generate(
            encoded, [prompt], beam_size=1 if sampling else self.beam_size,
            max_length=min(model.max_length, len(prompt) + new_tokens), asynchronous=True,
            return_scores=True, return_no_speech_prob=True, suppress_blank=True,
            suppress_tokens=self._suppress, num_hypotheses=hypotheses, **sampling)[0]

    def _hypotheses(self, job: Any) -> tuple[list[Hypothesis], float]:
        """A started decoding's hypotheses (text, summed log-probability, tokens), and its no-speech
        probability."""
        result = job.result()
        found = [(self._tokenizer.decode(tokens).strip(), score * len(tokens), len(tokens))
                 for tokens, score in zip(result.sequences_ids, result.scores, strict=True)]
        return found, result.no_speech_prob

    def _segments(self, samples: Samples, stop: threading.Event, biased: bool) -> tuple[str, float, float]:
        """faster-whisper's own loop: 30 s windows, one segment pulled at a time."""
        segments, _ = self._model.transcribe(
            samples, language=self.language, beam_size=self.beam_size, initial_prompt=self.initial_prompt,
            condition_on_previous_text=False, vad_filter=False, without_timestamps=True,
            hotwords=(self.hotwords or None) if biased else None,
            temperature=0.0)  # no sampling fallback: the same audio always gives the same text (replays)
        texts, logprobs, no_speech = [], [], 0.0
        for segment in segments:  # decoding happens as the generator is advanced
            texts.append(segment.text.strip())
            logprobs.append(segment.avg_logprob)
            no_speech = max(no_speech, segment.no_speech_prob)
            if stop.is_set():
                raise Stopped
        return "".join(texts), (sum(logprobs) / len(logprobs) if logprobs else 0.0), no_speech

    def _checked(self, text: str, mean: float, no_speech: float) -> str:
        """``text``, or "" if it is Whisper's prompt echoed back or too uncertain to act on."""
        self.last_scores = (mean, no_speech)
        if _echoes_prompt(text, self.initial_prompt) or _echoes_hotwords(text, self.hotwords):
            log.info("transcript is Whisper's own prompt or command words: asking again", text=text[:40])
            return ""
        if text and (mean < self.min_avg_logprob or no_speech > self.max_no_speech_prob and repeats(text)):
            log.info("transcript too uncertain: asking again", text=text, avg_logprob=round(mean, 2),
                     no_speech_prob=round(no_speech, 2))
            return ""
        return text


Hypothesis = tuple[str, float, int]  # text, Whisper's summed log-probability, tokens


class Ear(Protocol):
    """A second recogniser of the same audio, as toneless syllables (``models.pinyin_ear``)."""

    def load(self) -> None: ...

    def close(self) -> None: ...

    def syllables(self, samples: Samples) -> list[str]: ...


class Mender(Protocol):
    """Spells a transcript again where the second ear heard other syllables, as the given language
    model's log-probabilities (of texts) decide (``assistant.text.ear_repair``)."""

    def load(self) -> None: ...

    def __call__(self, text: str, ear: list[str], logprobs: Callable[[list[str]], list[float]]) -> str: ...


def rescored(found: list[Hypothesis], rescorer: Rescorer, weight: float,
             simplified: Callable[[str], str], weighed: dict[str, float] | None = None,
             ranked: list[Hypothesis] | None = None) -> Hypothesis:
    """The hypothesis Whisper and the language model together find likeliest (Whisper's summed
    log-prob + ``weight`` × the model's). Weighed are the readings of Whisper's first hypothesis:
    those of about its length (within ``LENGTH_SLACK``, at least a character), since a summed
    log-probability favours a hypothesis that stops early (将溃疡两周以上都应该及时就医… cut to its
    first half); those that differ only in punctuation, or in Traditional against Simplified
    characters, are weighed once, as the first of them. A first hypothesis longer than
    ``RESCORED_CHARS`` is kept as it is: the weighing costs time by the token, and requests are short.
    A reading that stutters (one character three times running, not a digit) is not weighed: the
    language model finds each repeat likelier than the one before, so 点点点点点 beat 先量小一点 (音量小一点)
    and 以以以以 beat 你连王了吗 (你联网了吗). Whisper's first hypothesis is weighed whatever it is.
    ``weighed`` is given each weighed text's (its letters and digits) log-probability, and ``ranked``
    the weighed hypotheses, likeliest together first."""
    first = _content(simplified(found[0][0]))
    if not first or len(first) > RESCORED_CHARS:
        return found[0]
    slack = max(1, round(LENGTH_SLACK * len(first)))
    distinct: dict[str, Hypothesis] = {}
    for hypothesis in found:
        content = _content(simplified(hypothesis[0]))
        if content and abs(len(content) - len(first)) <= slack and (not distinct or not _stutters(content)):
            distinct.setdefault(content, hypothesis)
    if len(distinct) < 2:
        return found[0]
    lm = rescorer.logprobs(list(distinct))
    if weighed is not None:
        weighed.update(zip(distinct, lm, strict=True))
    order = sorted(zip(distinct.values(), lm, strict=True), key=lambda pair: -(pair[0][1] + weight * pair[1]))
    if ranked is not None:
        ranked[:] = [hypothesis for hypothesis, _ in order]
    best = order[0][0]
    if best is not found[0]:
        log.info("transcript rescored", whisper=found[0][0], now=best[0])
    return best


def _finish(jobs: list[Any]) -> None:
    """Wait for every started decoding (one that failed has nothing more to say: it is done)."""
    for job in jobs:
        with contextlib.suppress(Exception):  # the caller has met the error that matters
            job.result()


def _content(text: str) -> str:
    """The letters and digits of a transcript (what the language model weighs)."""
    return "".join(ch for ch in text if ch.isalnum())


def _stutters(content: str) -> bool:
    """One character (not a digit: 1000 is a number) three times running: 点点点点点, 以以以以."""
    return _STUTTER.search(content) is not None


def _looped(text: str) -> bool:
    """Whisper repeating a phrase over and over (切换前事切换前事…), told by how well it compresses."""
    data = text.encode("utf-8")
    return len(data) > 24 and len(data) / len(zlib.compress(data)) > MAX_COMPRESSION


def repeats(text: str) -> bool:
    """What Whisper makes of noise it takes for speech: a phrase looping (试试 试试 试试…) or a
    stutter (请请请)."""
    return _looped(text) or _stutters(_content(text))


def _echoes_prompt(text: str, prompt: str) -> bool:
    """Whisper's known failure on audio it cannot make out: it "hears" its own initial prompt."""
    core = "".join(ch for ch in text if ch.isalnum())
    return bool(core) and bool(prompt) and core in "".join(ch for ch in prompt if ch.isalnum())


def _echoes_hotwords(text: str, hotwords: str) -> bool:
    """Whisper reciting its hot-word list rather than a word of it (提醒待办闹钟 from a cough)."""
    core = "".join(ch for ch in text if ch.isalnum())
    words = hotwords.split()
    return bool(core) and core in "".join(words) and not any(core in word for word in words)
