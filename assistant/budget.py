"""The memory budget, checked before the models load: the RK3576 board has 3.8 GB and no swap,
so running out of memory halfway through a reply is worse than refusing at start.

Need = the configured models' files (they are mapped or loaded whole) + the LLM's KV cache for
``llm.context`` tokens + the ASR rescoring's own small context + ``budget.working_set_mb``
(runtimes, audio, Python). It is compared with MemAvailable minus ``budget.reserve_mb``; over
budget, start-up stops with one line that lists the biggest items and what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assistant.config import Config
from models import kokoro_calibrated
from models import llama_scorer as scorer
from models.manifest import by_name
from models.protocols import ModelError

MB = 2**20
# KV cache bytes per token (f16 keys and values): layers × 2 × KV heads × head size × 2 bytes.
KV_BYTES_PER_TOKEN = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m": 24 * 2 * 2 * 64 * 2,
    "qwen2.5-coder-1.5b-instruct-q4_k_m": 28 * 2 * 2 * 128 * 2,
}
# Qwen2.5-0.5B on RKLLM, f16 KV cache, the same shape as above.
RKLLM_KV_BYTES_PER_TOKEN = KV_BYTES_PER_TOKEN["qwen2.5-coder-0.5b-instruct-q4_k_m"]
QWEN_VOCAB = 151936
# Files the manifest gives no size for (joined from many parts): their size, rounded up.
# Kokoro's calibrated decoder keeps its blocks before the generator in float: measured resident, loaded
# and speaking, 546 MB against 490 MB with the export's decoder (sixteenth sitting, x86_64)
CALIBRATED_DECODER_EXTRA_MB = 60
APPROXIMATE_BYTES = {"qwen2.5-coder-1.5b-instruct-q4_k_m": 1_150_000_000}
ADVICE = {
    "llm": "a smaller llm.model, or llm.model served by another machine (models.llm = \"openai\")",
    "llm KV cache": "a smaller llm.context",
    "rkllm KV cache": "a smaller rkllm.max_context",
    "working set": "a smaller budget.working_set_mb if you measured less",
    "asr rescoring": "asr.rescore = \"\" (Whisper's first hypothesis as it is)",
    "asr rescoring model": "asr.rescore = \"\" (Whisper's first hypothesis as it is)",
}


@dataclass(frozen=True)
class Item:
    what: str
    bytes: int


def needs(cfg: Config) -> list[Item]:
    """What the configured assistant holds in memory, biggest first."""
    models = {"vad": "silero-vad", "asr": cfg.asr.model}
    if cfg.models.tts in ("kokoro", "kokoro-rknn"):
        models["tts"] = "kokoro-v1.0-int8"
    if cfg.wake.mode == "keyword" or cfg.barge_in.stop_words:
        models["kws"] = "kws-zipformer-wenetspeech-3.3M"
    if cfg.models.llm == "llama":
        models["llm"] = cfg.llm.model
    rescoring = bool(cfg.asr.rescore) and cfg.asr.beam_size > 1
    if rescoring and models.get("llm") != cfg.asr.rescore:  # the LLM's own file is mapped once
        models["asr rescoring model"] = cfg.asr.rescore
    items = [Item(kind, sum(f.size for f in by_name(name).files) or APPROXIMATE_BYTES.get(name, 0))
             for kind, name in models.items()]
    if cfg.models.tts == "kokoro" and kokoro_calibrated.wanted(cfg.tts.decoder):  # its float blocks, beside the export
        items.append(Item("tts calibrated decoder", CALIBRATED_DECODER_EXTRA_MB * MB))
    if cfg.models.tts == "matcha-rknn":  # NPU models: no manifest, the configured files' sizes
        items.append(Item("tts", _size(cfg.path(cfg.matcha.acoustic_model)) + _size(cfg.path(cfg.matcha.vocoder))))
    if cfg.models.llm == "rkllm":
        items.append(Item("llm", _size(cfg.path(cfg.rkllm.model))))
        items.append(Item("rkllm KV cache", cfg.rkllm.max_context * RKLLM_KV_BYTES_PER_TOKEN))
    if cfg.models.llm == "llama":
        items.append(Item("llm KV cache", cfg.llm.context * KV_BYTES_PER_TOKEN.get(cfg.llm.model, 0)))
    if rescoring:  # its own context: every position's logits (f32) and its KV cache
        per_token = QWEN_VOCAB * 4 + KV_BYTES_PER_TOKEN.get(cfg.asr.rescore, 0)
        items.append(Item("asr rescoring", scorer.CONTEXT * per_token))
    items.append(Item("working set", cfg.budget.working_set_mb * MB))
    return sorted(items, key=lambda i: -i.bytes)


def _size(path: Path) -> int:
    """A file's size; 0 when it is missing (loading it will then say so by name)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def mem_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check(cfg: Config, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Refuse (ModelError, one line) when the assistant would not fit; the bytes to spare otherwise."""
    if not cfg.budget.check:
        return None
    available = mem_available(meminfo)
    if available is None:
        return None  # not Linux, or no MemAvailable: nothing to check against
    items = needs(cfg)
    need, room = sum(i.bytes for i in items), available - cfg.budget.reserve_mb * MB
    if need <= room:
        return room - need
    advice = ADVICE | ({"llm": "a smaller .rkllm model (rkllm.model)"} if cfg.models.llm == "rkllm" else {})
    biggest = "; ".join(f"{i.what} {i.bytes / MB:.0f} MB" + (f" (try {advice[i.what]})" if i.what in advice else "")
                        for i in items[:3])
    raise ModelError(f"not enough memory: the assistant needs {need / MB:.0f} MB but {available / MB:.0f} MB is "
                     f"available ({cfg.budget.reserve_mb} MB kept back); biggest: {biggest}; "
                     f"or set budget.check = false")
