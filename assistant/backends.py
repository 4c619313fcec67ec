"""Building the configured model backends, each from its verified model files.

One builder per kind; the commands ask for just the kinds they use (``say`` needs only a TTS).
Backend modules are imported here, when chosen, so a command never loads a runtime it does not use.
"""

from __future__ import annotations

import functools
import importlib.util
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.config import Config, ConfigError
from assistant.phrase_cache import PhraseCache, default_folder, tts_key
from models import kokoro_calibrated
from models.assets import Assets
from models.cores import CoreGate
from models.manifest import Model, by_name
from models.protocols import Asr, Backends, Kws, Llm, Rescorer, Tts, Turn, Vad

if TYPE_CHECKING:
    from assistant.tools.answers import Tools
    from models.npu import NpuScheduler

DATABASE = "tingshuo.sqlite3"
KOKORO_WINDOW = "kokoro-decoder-window-rk3576-fp16"  # as `assistant npu build` names it


def configured_models(cfg: Config) -> list[Model]:
    """The models the current configuration uses."""
    names = ["silero-vad", cfg.asr.model, "kws-zipformer-wenetspeech-3.3M"]
    if cfg.models.tts in ("kokoro", "kokoro-rknn"):
        names += ["kokoro-v1.0-int8", "kokoro-zh-voices"]
    if cfg.models.llm == "llama":
        names.append(cfg.llm.model)
    if cfg.vad.turn_model:
        names.append("smart-turn-v3.2")
    if cfg.asr.rescore and cfg.asr.beam_size > 1:
        names.append(cfg.asr.rescore)
    return [by_name(n) for n in dict.fromkeys(names)]


def assets_for(cfg: Config) -> Assets:
    return Assets(cfg.model_dirs())


def vad(cfg: Config, assets: Assets) -> Vad:
    from models import sherpa_build
    from models.sherpa_vad import SherpaSileroVad, silero_model_path

    if cfg.models.vad == "sherpa-silero":
        return SherpaSileroVad(silero_model_path(assets), threshold=cfg.vad.threshold,
                               provider=sherpa_build.provider(cfg.models.sherpa_provider, "vad"))
    from models.silero_vad import SileroVad

    return SileroVad(silero_model_path(assets))


def talk_vad(cfg: Config, assets: Assets) -> Vad | None:
    """The second VAD, on the linear canceller's output, where double talk is judged with it."""
    b, e = cfg.barge_in, cfg.echo
    wanted = b.enabled and b.by_speech and b.double_talk and b.double_talk_vad and e.cancel and e.linear
    return vad(cfg, assets) if wanted else None


def kws_words(cfg: Config) -> list[str]:
    """What the keyword spotter listens for: the wake words, and the stop words if barge-in is on."""
    words = list(cfg.wake.keywords) if cfg.wake.mode == "keyword" else []
    if cfg.barge_in.enabled:
        words += [w for w in cfg.barge_in.stop_words if w not in words]
    for key, table in (("kws.thresholds", cfg.kws.thresholds), ("kws.boosts", cfg.kws.boosts)):
        for word in table:
            if word not in words:
                raise ConfigError(f"{key}: {word!r} is neither a wake word nor a stop word")
    return words


def kws(cfg: Config, assets: Assets, words: list[str] | None = None) -> Kws | None:
    """The keyword spotter for ``words`` (default: what the session spots), or None when there is none."""
    from models import sherpa_build
    from models.sherpa_kws import MODEL, Keyword, SherpaKws

    words = kws_words(cfg) if words is None else words
    if not words:
        return None
    keywords = [Keyword(w, cfg.kws.boosts.get(w, cfg.kws.boost), cfg.kws.thresholds.get(w, cfg.kws.threshold))
                for w in words]
    return SherpaKws(assets.folder(MODEL), keywords, threads=cfg.kws.threads,
                     provider=sherpa_build.provider(cfg.models.sherpa_provider, "kws"))


def asr(cfg: Config, assets: Assets) -> Asr:
    from assistant.tools.router import COMMAND_WORDS, LikelyCommand
    from models.whisper_asr import WhisperAsr

    words = [*COMMAND_WORDS, *cfg.tools.hotwords] if cfg.asr.command_words else []
    likely = LikelyCommand(words) if words and cfg.asr.command_bias != "always" else None
    return WhisperAsr(assets.folder(cfg.asr.model), threads=cfg.asr.threads,
                      decoding_threads=cfg.asr.decoding_threads, compute_type=cfg.asr.compute_type,
                      beam_size=cfg.asr.beam_size, initial_prompt=cfg.asr.initial_prompt, hotwords=" ".join(words),
                      min_avg_logprob=cfg.asr.min_avg_logprob, max_no_speech_prob=cfg.asr.max_no_speech_prob,
                      window_s=cfg.asr.window_s, full_from_s=cfg.asr.full_window_from_s, likely_command=likely,
                      fallback=(0.2, 0.4, 0.6, 0.8, 1.0) if cfg.asr.fallback else (),
                      rescorer=rescorer(cfg, assets), n_best=min(cfg.asr.n_best, cfg.asr.beam_size),
                      rescore_weight=cfg.asr.rescore_weight, pooled=cfg.asr.command_bias == "pooled",
                      **second_ear(cfg, assets))


def second_ear(cfg: Config, assets: Assets) -> dict[str, Any]:
    """The ASR's second ear and its mender (``asr.second_ear``), or nothing: without jieba's word list
    (a board without Kokoro's G2P) Whisper's transcript stands as the rescoring chose it."""
    from assistant.text.ear_repair import Mender, jieba_word_list
    from models.pinyin_ear import PinyinEar
    from models.sherpa_kws import MODEL

    words = jieba_word_list() if cfg.asr.second_ear else None
    if words is None:
        return {}
    return {"ear": PinyinEar(assets.folder(MODEL)), "mender": Mender(words, assets.store.parent / "ear-lexicon.json"),
            "mend_below": cfg.asr.min_char_logprob}  # what the responder would ask again: mended first


def rescorer(cfg: Config, assets: Assets) -> Rescorer | None:
    """The language model that weighs Whisper's hypotheses again, if one is configured (and beam search
    is on) and llama.cpp is installed: a board runs its LLM on RKLLM and has none, and there Whisper's
    first hypothesis is the transcript, as with ``asr.rescore = ""``."""
    if not cfg.asr.rescore or cfg.asr.beam_size < 2:
        return None
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    from models.llama_scorer import LlamaScorer

    model = by_name(cfg.asr.rescore)
    gguf = model.files[0]
    return LlamaScorer(assets.path(model.name, gguf.name), expected_sha256=gguf.sha256, threads=cfg.asr.threads)


def llm(cfg: Config, assets: Assets, gate: CoreGate | None = None) -> Llm:
    """The configured LLM with the built-in prompt and its examples, or the configured prompt alone."""
    from models.chat import prompt

    system_prompt, examples = prompt(cfg.llm.system_prompt)
    if cfg.llm.tool_calls:
        from assistant.tools.toolcall import PROMPT as tail

        system_prompt += tail
    if cfg.models.llm == "openai":
        from models.openai_llm import OpenAiLlm

        return OpenAiLlm(cfg.llm.base_url, model=cfg.llm.server_model or None, temperature=cfg.llm.temperature,
                         top_p=cfg.llm.top_p, repeat_penalty=cfg.llm.repeat_penalty, max_tokens=cfg.llm.max_tokens,
                         history_turns=cfg.llm.history_turns, system_prompt=system_prompt, examples=examples)
    if cfg.models.llm == "rkllm":
        from models.chat import inline_examples
        from models.rkllm_llm import RkllmLlm

        r = cfg.rkllm
        return RkllmLlm(Path(r.library).expanduser(), cfg.path(r.model), max_context=r.max_context,
                        max_tokens=cfg.llm.max_tokens, temperature=cfg.llm.temperature, top_p=cfg.llm.top_p,
                        repeat_penalty=cfg.llm.repeat_penalty, history_turns=cfg.llm.history_turns,
                        system_prompt=inline_examples(system_prompt, examples),
                        system_template=r.system_template, prompt_prefix=r.prompt_prefix,
                        prompt_postfix=r.prompt_postfix, cpu_mask=r.cpu_mask, npu=npu(cfg.npu.mode),
                        prompt_cache=cfg.path(r.prompt_cache) if r.prompt_cache else None)
    from models.llama_llm import LlamaLlm
    from models.manifest import by_name

    model = by_name(cfg.llm.model)
    gguf = model.files[0]
    return LlamaLlm(assets.path(model.name, gguf.name), threads=cfg.llm.threads, n_ctx=cfg.llm.context,
                    temperature=cfg.llm.temperature, top_p=cfg.llm.top_p, repeat_penalty=cfg.llm.repeat_penalty,
                    max_tokens=cfg.llm.max_tokens, history_turns=cfg.llm.history_turns,
                    expected_sha256=gguf.sha256, system_prompt=system_prompt, examples=examples, gate=gate,
                    confidence=cfg.llm.min_confidence > 0)


@functools.cache
def npu(mode: str) -> NpuScheduler:
    """The process's one NPU owner (every NPU backend of a process shares it)."""
    from models.npu import NpuScheduler

    return NpuScheduler(mode)


def tts(cfg: Config, assets: Assets) -> Tts:
    if cfg.models.tts == "matcha-rknn":
        from models.matcha_rknn_tts import MatchaRknnTts

        m = cfg.matcha
        return MatchaRknnTts(cfg.path(m.acoustic_model), cfg.path(m.vocoder), cfg.path(m.lexicon), cfg.path(m.tokens),
                             npu=npu(cfg.npu.mode), acoustic_core=cfg.npu.acoustic_core,
                             vocoder_core=cfg.npu.vocoder_core, sample_rate=m.sample_rate, n_fft=m.n_fft, hop=m.hop,
                             noise_scale=m.noise_scale, speed=cfg.tts.speed, frames_per_token=m.frames_per_token,
                             frames_offset=m.frames_offset, espeak_lib=cfg.path(m.espeak_lib) if m.espeak_lib else None,
                             espeak_data=cfg.path(m.espeak_data) if m.espeak_data else None, add_blank=m.add_blank)
    if cfg.models.tts == "kokoro-rknn":
        from models.kokoro_rknn_tts import KokoroRknnTts

        window = KOKORO_WINDOW
        return KokoroRknnTts(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx"),
                             assets.path("kokoro-v1.0-int8", "vocab.json"),
                             assets.path("kokoro-zh-voices", f"{cfg.tts.voice}.bin"),
                             assets.path(window, f"{window}.rknn"), npu=npu(cfg.npu.mode),
                             core=cfg.npu.vocoder_core, threads=cfg.tts.threads, speed=cfg.tts.speed,
                             onset_frames=cfg.tts.onset_frames)
    from models.kokoro_tts import MODEL_SHA256, KokoroTts

    calibrated = (kokoro_calibrated.path_for(assets.store, MODEL_SHA256)
                  if kokoro_calibrated.wanted(cfg.tts.decoder) else None)
    return KokoroTts(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx"),
                     assets.path("kokoro-v1.0-int8", "vocab.json"),
                     assets.path("kokoro-zh-voices", f"{cfg.tts.voice}.bin"),
                     threads=cfg.tts.threads, speed=cfg.tts.speed, first_frames=cfg.tts.first_frames,
                     voiced_only=cfg.tts.voiced_only, onset_frames=cfg.tts.onset_frames, calibrated=calibrated)


def phrase_cache(cfg: Config, assets: Assets) -> PhraseCache | None:
    """The on-disk cache of short spoken phrases for the configured voice, if enabled."""
    if not cfg.tts.phrase_cache:
        return None
    if cfg.models.tts == "matcha-rknn":  # no manifest hash: the model files' identity instead
        files = [cfg.path(cfg.matcha.acoustic_model), cfg.path(cfg.matcha.vocoder), cfg.path(cfg.matcha.lexicon)]
        identity = ";".join(f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" if f.is_file() else str(f) for f in files)
        return PhraseCache(default_folder(), tts_key(identity, "matcha", cfg.tts.speed))
    from models.manifest import by_name

    model_sha = by_name("kokoro-v1.0-int8").file("kokoro-v1.0.int8.onnx").sha256
    onset = f"-onset{cfg.tts.onset_frames}" if cfg.tts.onset_frames else ""  # what a piece is played from
    rendering = f"voiced{onset}" if cfg.tts.voiced_only else "whole"  # the two renderings differ slightly
    if cfg.models.tts == "kokoro-rknn":
        rendering = f"npu-windows{onset}"  # and the NPU's windows differ from both
    elif kokoro_calibrated.wanted(cfg.tts.decoder):  # and the calibrated decoder from the export's (README)
        rendering = f"{rendering}-{kokoro_calibrated.RECIPE}"
    return PhraseCache(default_folder(), tts_key(f"{model_sha}:{rendering}", cfg.tts.voice, cfg.tts.speed))


def tools(cfg: Config, data_dir: Path | None = None) -> Tools | None:
    """The offline tools with their database (in ``data_dir``, default ``tools.data_dir``), if enabled."""
    if not cfg.tools.enabled:
        return None
    from assistant.tools.answers import Tools, Volume
    from assistant.tools.store import Store

    store = Store((data_dir or cfg.data_dir()) / DATABASE)
    return Tools(store, lambda: datetime.now().astimezone(), Volume(cfg.tools.mixer_control, cfg.audio.playback_device))


def turn(cfg: Config, assets: Assets) -> Turn | None:
    """The end-of-turn model, if endpointing uses one."""
    if not cfg.vad.turn_model:
        return None
    from models.smart_turn import MODEL, SmartTurn

    return SmartTurn(assets.path(MODEL.name, MODEL.files[0].name))


def in_process(cfg: Config) -> Backends:
    """Everything a conversation needs, in this process (the KWS only when waiting for a wake word)."""
    a = assets_for(cfg)
    gate = CoreGate() if cfg.tts.llm_waits != "never" else None
    return Backends(vad=vad(cfg, a), asr=asr(cfg, a), llm=llm(cfg, a, gate), tts=tts(cfg, a), kws=kws(cfg, a),
                    turn=turn(cfg, a), cores=gate, talk_vad=talk_vad(cfg, a))


def inference(cfg: Config, gate: CoreGate | None) -> dict[str, Asr | Llm | Tts]:
    """The worker process's models (ASR, LLM, TTS), not yet loaded."""
    assets = assets_for(cfg)
    return {"asr": asr(cfg, assets), "llm": llm(cfg, assets, gate), "tts": tts(cfg, assets)}
