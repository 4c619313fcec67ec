"""The only reader of ``config.toml``.

Every tunable lives in one nested, frozen dataclass tree. Each field carries its doc and its
allowed range or choices; loading rejects unknown keys and bad values with a message that names
the dotted key, so a typo in ``config.toml`` or ``--set`` never silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.config_fields import ConfigError as ConfigError
from assistant.config_fields import opt as _opt
from assistant.config_house import HaConfig, SatelliteConfig, StatusConfig, WyomingConfig


@dataclass(frozen=True)
class AudioConfig:
    sample_rate: int = _opt(16000, "Capture rate in Hz; the VAD and every model take 16 kHz mono.",
                            lo=16000, hi=16000)
    chunk_ms: int = _opt(20, "Length of one capture chunk in milliseconds.", lo=10, hi=100)
    capture_device: str = _opt("default", "ALSA PCM name of the microphone.")
    playback_device: str = _opt("default", "ALSA PCM name of the speaker.")
    playback_rate: int = _opt(16000, "Playback rate in Hz; replies are resampled to it.", lo=8000, hi=48000)
    playback_buffer_ms: int = _opt(120, "Audio queued ahead in the ALSA playback buffer.", lo=20, hi=2000)
    record_max_minutes: float = _opt(30.0, "`run --record`: a recording folder holds at most this much; the next one "
                                           "begins.", lo=1.0, hi=2000.0)
    record_keep: int = _opt(4, "`run --record`: the last this many recording folders are kept (0: all).", lo=0, hi=1000)

    @property
    def chunk_samples(self) -> int:
        return self.sample_rate * self.chunk_ms // 1000


@dataclass(frozen=True)
class VadConfig:
    threshold: float = _opt(0.5, "Silero speech probability above which a window counts as speech.",
                            lo=0.05, hi=0.95)
    min_speech_ms: int = _opt(96, "Speech needed before an utterance counts as started.", lo=0, hi=2000)
    endpoint_silence_ms: int = _opt(300, "Silence after speech that ends the utterance.", lo=100, hi=3000)
    preroll_ms: int = _opt(300, "Audio kept before the detected onset (the VAD fires after speech began).",
                           lo=0, hi=2000)
    short_utterance_ms: int = _opt(1000, "Speech shorter than this ends after short_endpoint_silence_ms.",
                                   lo=0, hi=10000)
    short_endpoint_silence_ms: int = _opt(250, "Endpoint silence after a short utterance.", lo=100, hi=3000)
    long_utterance_ms: int = _opt(5000, "Speech longer than this ends after long_endpoint_silence_ms.",
                                  lo=0, hi=60000)
    long_endpoint_silence_ms: int = _opt(450, "Endpoint silence after a long utterance.", lo=100, hi=3000)
    speculative_silence_ms: int = _opt(64, "Silence after which the ASR starts on the speech so far (0: off).",
                                       lo=0, hi=3000)
    noise_guard: bool = _opt(True, "Refuse an onset that is a sudden rise of flat-spectrum noise (door, fan, hiss).")
    turn_model: bool = _opt(True, "Smart Turn hears whether the speaker has finished; the silence endpoint is the "
                                  "fallback.")
    turn_check_ms: int = _opt(100, "Silence after which (and after each further such stretch) Smart Turn is asked.",
                              lo=50, hi=2000)
    turn_min_silence_ms: int = _opt(200, "With Smart Turn: the least silence that ends a turn it heard finished.",
                                    lo=0, hi=2000)
    turn_threshold: float = _opt(0.5, "Smart Turn probability of a finished turn that ends it.", lo=0.05, hi=0.99)
    turn_max_silence_ms: int = _opt(1000, "With Smart Turn: silence that ends the turn whatever it says.",
                                    lo=100, hi=5000)


@dataclass(frozen=True)
class WakeConfig:
    mode: str = _opt("keyword", "'keyword': wait for a wake word; 'always': every utterance is a request.",
                     choices=("keyword", "always"))
    keywords: tuple[str, ...] = _opt(("小智小智",), "Wake words, written in Chinese characters.")
    earcon: bool = _opt(True, "Play a short chime (under 100 ms) when the wake word is heard.")
    verify: bool = _opt(False, "Second stage: the ASR must hear the wake word in its window too (fewer false wakes).")
    verify_window_s: float = _opt(2.0, "Audio before the keyword spotter fired that the ASR checks.", lo=0.5, hi=5.0)


@dataclass(frozen=True)
class IdleConfig:
    max_s: float = _opt(3600.0, "Longest stay in idle before the watchdog re-arms it.", lo=1, hi=86400)


@dataclass(frozen=True)
class ListeningConfig:
    max_s: float = _opt(30.0, "Longest stay in listening.", lo=1, hi=600)
    no_speech_timeout_s: float = _opt(6.0, "Back to idle when no speech starts within this time.",
                                      lo=0.5, hi=120)
    max_utterance_s: float = _opt(15.0, "An utterance is cut here even if the speaker goes on.",
                                  lo=1, hi=120)
    resume_s: float = _opt(1.0, "Speech that interrupts the reply within this many seconds of the end of the "
                                "request it answers continues that request (the speaker only paused): the "
                                "reply is dropped and both parts are heard as one (0: off).", lo=0, hi=5)


@dataclass(frozen=True)
class ThinkingConfig:
    max_s: float = _opt(30.0, "Longest wait from end of speech to the first reply audio.", lo=1, hi=600)


@dataclass(frozen=True)
class SpeakingConfig:
    max_s: float = _opt(120.0, "Longest single reply.", lo=1, hi=3600)
    echo_window_ms: int = _opt(200, "After playback starts, VAD cannot barge in for this long.",
                               lo=0, hi=5000)


@dataclass(frozen=True)
class BargeInConfig:
    enabled: bool = _opt(True, "Let the user interrupt a reply by speaking.")
    by_speech: bool = _opt(True, "Any speech interrupts; false: only the stop and wake words do (no echo canceller).")
    threshold: float = _opt(0.6, "Speech probability a window needs to start a barge-in run.", lo=0.05, hi=0.99)
    hold_threshold: float = _opt(0.3, "Once started, the run goes on while windows stay above this.",
                                 lo=0.05, hi=0.99)
    max_gap_ms: int = _opt(128, "A run of speech survives a dip under the hold threshold this long.", lo=0, hi=500)
    min_speech_ms: int = _opt(200, "Speech needed (outside the echo window) to interrupt.", lo=32, hi=3000)
    sure_threshold: float = _opt(0.95, "Windows this sure of speech interrupt sooner (barge_in.sure_ms).",
                                 lo=0.05, hi=1.0)
    sure_ms: int = _opt(128, "Speech this long, every window at sure_threshold, interrupts (0: off).", lo=0, hi=3000)
    double_talk: bool = _opt(True, "With echo.linear: a window the linear canceller finds the user in (over the "
                                   "reply's echo) needs only double_talk_threshold.")
    double_talk_threshold: float = _opt(0.05, "Speech probability a double-talk window needs to count as speech.",
                                        lo=0.01, hi=0.99)
    double_talk_vad: bool = _opt(True, "With double_talk: a second VAD hears the linear canceller's output, and in "
                                       "a double-talk window the likelier of the two counts.")
    stop_words: tuple[str, ...] = _opt(("停", "别说了", "闭嘴"), "Words that stop a reply (Chinese characters).",
                                       allow_empty=True)
    stop_timeout_ms: int = _opt(200, "Longest wait for playback to stop after an interruption.",
                                lo=10, hi=5000)


@dataclass(frozen=True)
class EchoConfig:
    cancel: bool = _opt(True, "Acoustic echo cancellation (WebRTC AEC3) fed with exactly what was played.")
    noise_suppression: bool = _opt(False, "WebRTC noise suppression on the microphone (after echo cancellation).")
    gain_control: bool = _opt(False, "WebRTC automatic gain control (after noise suppression, never before).")
    transcript_filter: bool = _opt(True, "Drop an utterance whose transcript matches what the assistant says or said.")
    transcript_similarity: float = _opt(0.7, "Pinyin similarity at which a transcript counts as the assistant's own.",
                                        lo=0.3, hi=1.0)
    transcript_window_s: float = _opt(2.0, "Utterances starting this long after playback ends are still checked.",
                                      lo=0, hi=30)
    own_words: bool = _opt(True, "Ignore a wake or stop word heard while the reply itself contains it.")
    linear: bool = _opt(True, "The ASR hears a request begun over the reply through a linear canceller "
                              "(Speex MDF), which keeps the user's first syllables (with cancel).")
    linear_filter_ms: int = _opt(128, "Echo path the linear canceller models, in ms.", lo=16, hi=500)
    leak_check: bool = _opt(True, "Refuse a barge-in whose last 128 ms AEC3 let through are the reply's own echo "
                                  "(a short linear filter of what was played explains them).")
    remember_room: bool = _opt(True, "Keep the room's echo path (learnt by the linear canceller, with the "
                                     "double-talk test on) in the data folder for the next session's first reply.")
    asr_hears: str = _opt("microphone", "What the ASR hears (with cancel and linear): the microphone as captured, "
                                        "the linear canceller's output near playback ('microphone'); or what the "
                                        "states hear, AEC3's output ('cancelled').",
                          choices=("microphone", "cancelled"))
    tail_ms: int = _opt(300, "After a barge-in stops playback, quiet this long does not end the new utterance "
                             "(the canceller still suppresses the reply's tail).", lo=0, hi=2000)


@dataclass(frozen=True)
class ToolsConfig:
    enabled: bool = _opt(True, "Answer frequent commands (time, timers, todos, sums, device status) without the LLM.")
    data_dir: str = _opt("", "Folder of the assistant's database (todos, timers, reminders); empty: "
                             "$XDG_DATA_HOME/tingshuo (~/.local/share/tingshuo).", allow_empty=True)
    mixer_control: str = _opt("Master", "ALSA mixer control that volume commands change.")
    command_words: bool = _opt(True, "Also correct near-misses of the built-in command words (几店 → 几点).")
    hotwords: tuple[str, ...] = _opt((), "Command words a near-miss transcript is corrected to (客停 → 客厅).",
                                     allow_empty=True)
    sounds_like_answer: float = _opt(0.75, "A heard request whose whole sound is this near a command's phrasing "
                                           "(今天是兄弟姐 → 今天是星期几, 0..1) is answered as that command.",
                                     lo=0, hi=1)
    sounds_like_ask: float = _opt(0.6, "A heard request this near a command's phrasing, but not near enough to "
                                       "answer, is asked back (你是说“打开电视”吗？; 1: off, neither).", lo=0, hi=1)


@dataclass(frozen=True)
class BudgetConfig:
    check: bool = _opt(True, "Refuse to start when the models would not fit in the available memory.")
    working_set_mb: int = _opt(300, "Memory the runtimes, audio and Python use besides the model files.",
                               lo=0, hi=16384)
    reserve_mb: int = _opt(200, "Memory kept back for the rest of the system.", lo=0, hi=16384)


@dataclass(frozen=True)
class DialogConfig:
    follow_up_s: float = _opt(6.0, "After a reply, listen this long without the wake word (0: off).",
                              lo=0, hi=120)
    preempt: bool = _opt(True, "Prepare the reply on the speculative transcript before the endpoint is "
                               "decided; it plays only if the endpoint confirms those words.")


@dataclass(frozen=True)
class ModelsConfig:
    dirs: tuple[str, ...] = _opt(("models", "~/.local/share/tingshuo/models"),
                                 "Folders searched, in order, for model files, as <folder>/<model>/<file> "
                                 "(relative to the config file).", allow_empty=True)
    vad: str = _opt("silero", "VAD backend: silero probabilities via onnxruntime, or sherpa-onnx's yes/no.",
                    choices=("silero", "sherpa-silero"))
    kws: str = _opt("sherpa-zipformer", "Wake-word backend.", choices=("sherpa-zipformer",))
    asr: str = _opt("whisper", "Speech-recognition backend.", choices=("whisper",))
    llm: str = _opt("llama", "Language-model backend: local llama.cpp, an OpenAI-compatible server, or RKLLM on "
                    "the RK3576 NPU.", choices=("llama", "openai", "rkllm"))
    tts: str = _opt("kokoro", "Speech-synthesis backend: Kokoro on the CPU, Kokoro with its decoder windows on the "
                    "RK3576 NPU (built by `assistant npu build`), or Matcha + Vocos on the NPU.",
                    choices=("kokoro", "kokoro-rknn", "matcha-rknn"))
    sherpa_provider: str = _opt("cpu", "Where sherpa-onnx runs its models: cpu, or rknn (needs a sherpa-onnx build "
                                "with RKNN support; otherwise the CPU, with one log line).", choices=("cpu", "rknn"))


@dataclass(frozen=True)
class NpuConfig:
    mode: str = _opt("serialised", "serialised: one model on the NPU at a time (RKLLM yields between tokens); "
                     "concurrent: RKNN and RKLLM models run at the same moment.", choices=("serialised", "concurrent"))
    acoustic_core: int = _opt(0, "NPU core of the TTS acoustic model (the RK3576 has cores 0 and 1).", lo=0, hi=1)
    vocoder_core: int = _opt(1, "NPU core of the TTS vocoder (0 or 1).", lo=0, hi=1)
    rknn_runtime: str = _opt("/usr/lib/librknnrt.so", "The RKNN runtime library (for `assistant doctor`).")


@dataclass(frozen=True)
class RkllmConfig:
    library: str = _opt("/usr/lib/librkllmrt.so", "The RKLLM runtime library (version 1.3.0), absolute path.")
    model: str = _opt("models/rkllm/qwen2.5-0.5b-instruct-w8a8-rk3576.rkllm",
                      "The .rkllm model (relative to the config file).")
    max_context: int = _opt(1024, "Context length in tokens the runtime reserves.", lo=128, hi=16384)
    cpu_mask: int = _opt(240, "CPU cores the runtime's threads use, as a bit mask (240 = cores 4–7, the A72s).",
                         lo=1, hi=255)
    system_template: str = _opt("<|im_start|>system\n{}<|im_end|>\n",
                                "Chat template around the system prompt ({} is the prompt); Qwen's by default.")
    prompt_prefix: str = _opt("<|im_start|>user\n", "Chat template before each user turn.")
    prompt_postfix: str = _opt("<|im_end|>\n<|im_start|>assistant\n", "Chat template after each user turn.")
    prompt_cache: str = _opt("~/.cache/tingshuo/rkllm-system-prompt.bin",
                             "File where the runtime keeps the evaluated system prompt between starts.")


@dataclass(frozen=True)
class MatchaConfig:
    acoustic_model: str = _opt("models/matcha-rknn/matcha-s64.rknn", "Matcha acoustic model, static-shape .rknn.")
    vocoder: str = _opt("models/matcha-rknn/vocos-16khz-600.rknn", "Vocos vocoder, static-shape .rknn.")
    lexicon: str = _opt("models/matcha-rknn/lexicon.txt", "Word → phones lexicon of the acoustic model.")
    tokens: str = _opt("models/matcha-rknn/tokens.txt", "Phone → token id table of the acoustic model.")
    sample_rate: int = _opt(16000, "Sample rate of the vocoder's audio.", lo=8000, hi=48000)
    n_fft: int = _opt(1024, "The vocoder's FFT size (its magnitude has n_fft/2 + 1 bins).", lo=64, hi=8192)
    hop: int = _opt(256, "The vocoder's hop in samples (one mel frame).", lo=16, hi=4096)
    noise_scale: float = _opt(0.667, "Matcha's sampling noise.", lo=0.0, hi=2.0)
    add_blank: bool = _opt(True, "Put the blank token before, between and after the tokens (as the model was trained).")
    frames_per_token: float = _opt(6.9, "Mel frames one token lasts, for cutting the fixed window "
                                   "(refined from measured lengths as the assistant speaks).", lo=0.5, hi=50.0)
    frames_offset: float = _opt(8.0, "Mel frames added to every estimate.", lo=-100.0, hi=200.0)
    espeak_lib: str = _opt("", "libespeak-ng.so for English words (absolute path; empty: English is skipped).")
    espeak_data: str = _opt("", "espeak-ng-data folder (absolute path; empty: the library's default).")


@dataclass(frozen=True)
class KwsConfig:
    threshold: float = _opt(0.25, "Trigger threshold of every wake word (higher fires less often).", lo=0.01, hi=0.99)
    boost: float = _opt(1.0, "Score boost of the wake words' decoding paths (higher fires more often).",
                        lo=0.1, hi=10.0)
    threads: int = _opt(1, "CPU threads for the keyword spotter.", lo=1, hi=8)
    thresholds: dict[str, float] = _opt({}, "Per-word trigger thresholds overriding kws.threshold, "
                                        "e.g. {\"停\" = 0.4}.", lo=0.01, hi=0.99)
    boosts: dict[str, float] = _opt({}, "Per-word boosts overriding kws.boost.", lo=0.1, hi=10.0)


@dataclass(frozen=True)
class AsrConfig:
    model: str = _opt("whisper-base", "Whisper model (CTranslate2) from the model manifest.", choices=("whisper-base",))
    threads: int = _opt(2, "CPU threads for speech recognition (the rescoring model's too).", lo=1, hi=8)
    decoding_threads: int = _opt(1, "CTranslate2's threads per Whisper call; threads / decoding_threads "
                                    "decodings run side by side.", lo=1, hi=8)
    compute_type: str = _opt("int8", "CTranslate2 compute type.", choices=("int8", "int8_float32", "float32"))
    beam_size: int = _opt(5, "Beam size (1 is greedy and fastest).", lo=1, hi=10)
    initial_prompt: str = _opt("以下是普通话的句子。", "Prompt that keeps Whisper in Simplified Mandarin.")
    command_words: bool = _opt(True, "Give Whisper the command words (the tools' and tools.hotwords) as context.")
    command_bias: str = _opt("pooled", "Where the command words are context: \"likely\" decodes without them, and "
                                       "again with them when the transcript sounds like a command; \"pooled\" "
                                       "decodes every utterance both ways and the rescoring weighs the readings of "
                                       "both (as \"likely\" without the rescoring); \"always\" on all speech (it "
                                       "costs general speech more than it gains commands).",
                             choices=("likely", "pooled", "always"))
    fallback: bool = _opt(False, "Where greedy decoding fails the checks below (or loops), sample again at "
                                 "rising temperatures (seeded), as faster-whisper does.")
    min_avg_logprob: float = _opt(-1.0, "A transcript with a lower mean token log-probability is asked again.",
                                  lo=-100.0, hi=0.0)
    max_no_speech_prob: float = _opt(0.8, "A transcript whose no-speech probability is higher is asked again.",
                                     lo=0.0, hi=1.0)
    window_s: float = _opt(15.0, "Smallest Whisper encoder window in seconds (an utterance gets itself + 1 s); "
                                 "30 is Whisper's full window.", lo=1.0, hi=30.0)
    full_window_from_s: float = _opt(6.0, "An utterance at least this long is heard over Whisper's full 30 s "
                                          "window, as Whisper's own loop does (0: never).", lo=0.0, hi=30.0)
    rescore: str = _opt("qwen2.5-coder-0.5b-instruct-q4_k_m", "GGUF model (from the model manifest) that weighs "
                        "Whisper's n-best hypotheses again as Chinese; \"\" keeps Whisper's first. "
                        "Needs beam_size > 1.",
                        choices=("", "qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"))
    n_best: int = _opt(5, "Hypotheses rescored (at most beam_size).", lo=2, hi=10)
    rescore_weight: float = _opt(0.3, "Weight of the rescoring model's log-probability against Whisper's.",
                                 lo=0.0, hi=5.0)
    second_ear: bool = _opt(False, "Mend the transcript where the keyword spotter's zipformer, decoded as "
                                  "syllables, heard other words and the rescoring model finds its spelling "
                                  "likelier, for a transcript less likely than min_char_logprob (needs the "
                                  "rescoring model and jieba's word list).")
    min_char_logprob: float = _opt(-5.0, "A request only the LLM would answer, whose transcript the rescoring "
                                          "model finds less likely than this (mean log-probability per "
                                          "character), is asked again; -100 never.", lo=-100.0, hi=0.0)


@dataclass(frozen=True)
class LlmConfig:
    model: str = _opt("qwen2.5-coder-1.5b-instruct-q4_k_m", "GGUF model from the model manifest (llama backend): "
                                                            "the 1.5B (better) or the 0.5B (faster).",
                      choices=("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"))
    threads: int = _opt(2, "CPU threads for the LLM.", lo=1, hi=16)
    context: int = _opt(2048, "Context length in tokens.", lo=256, hi=32768)
    temperature: float = _opt(0.0, "Sampling temperature; 0 is greedy (fewest invented facts: see the answer "
                                   "evaluation).", lo=0.0, hi=2.0)
    top_p: float = _opt(0.9, "Nucleus sampling.", lo=0.05, hi=1.0)
    repeat_penalty: float = _opt(1.1, "Penalty for repeated tokens.", lo=1.0, hi=2.0)
    max_tokens: int = _opt(160, "Longest reply in tokens.", lo=8, hi=4096)
    history_turns: int = _opt(2, "Earlier exchanges the model sees, within one conversation.", lo=0, hi=20)
    conversation_s: float = _opt(8.0, "A request begun within this many seconds of the end of the last reply "
                                      "continues its conversation; a later one starts afresh.", lo=0, hi=3600)
    min_confidence: float = _opt(0.15, "A factual answer whose first clause the model gave a token less than this "
                                      "probability (its own first choice) is replaced by 这个我不太确定 (0: off).",
                                 lo=0.0, hi=1.0)
    system_prompt: str = _opt("", "System prompt; empty keeps the built-in spoken-Mandarin prompt.")
    tool_calls: bool = _opt(False, "Let the LLM answer commands with a JSON tool call (read tolerantly).")
    prefill: bool = _opt(True, "Evaluate prompts ahead: the speculative transcript's before the endpoint is "
                                  "decided, and the conversation's start once a reply has been heard out.")
    reply_soft_chars: int = _opt(30, "A reply ends at the first sentence end after this many characters.",
                                 lo=5, hi=2000)
    reply_max_chars: int = _opt(50, "A reply never goes past this many characters (0: no limit).", lo=0, hi=5000)
    base_url: str = _opt("http://127.0.0.1:8080/v1", "OpenAI-compatible server (openai backend); loopback only.")
    server_model: str = _opt("", "Model name sent to that server; empty takes the server's first model.")


@dataclass(frozen=True)
class TtsConfig:
    voice: str = _opt("zf_xiaoxiao", "Kokoro Mandarin voice.",
                      choices=("zf_xiaobei", "zf_xiaoni", "zf_xiaoxiao", "zf_xiaoyi",
                               "zm_yunjian", "zm_yunxi", "zm_yunxia", "zm_yunyang"))
    threads: int = _opt(2, "CPU threads for speech synthesis.", lo=1, hi=8)
    speed: float = _opt(1.0, "Speaking rate (1.0 is normal).", lo=0.5, hi=2.0)
    llm_waits: str = _opt("always", "When the LLM waits between tokens so the TTS has the cores: 'never', "
                                         "'first_audio' (while a reply's first sound is made) or 'always' "
                                         "(whenever the TTS renders).", choices=("never", "first_audio", "always"))
    voiced_only: bool = _opt(True, "Kokoro: render only the voiced frames (not the start token's 0.4 s of silence).")
    onset_frames: int = _opt(2, "Kokoro, voiced frames: play each piece from this many 25 ms frames before its first "
                                "phoneme's aligned frame, where its first consonant begins.", lo=0, hi=4)
    decoder: str = _opt("auto", "Kokoro on the CPU: 'calibrated' (its generator's convolutions calibrated to int8 "
                                "once, built into the model store on first use: about twice as fast on x86), "
                                "'dynamic' (the export's own decoder) or 'auto' (calibrated on x86_64, where it "
                                "was measured; dynamic elsewhere).", choices=("auto", "calibrated", "dynamic"))
    first_frames: int = _opt(16, "Kokoro: frames (25 ms each) of a text's first piece decoded and played before the "
                                 "rest (0: off).", lo=0, hi=200)
    streaming: bool = _opt(True, "Speak while the LLM writes; false synthesizes the whole reply after it (baseline).")
    first_chunk_max: int = _opt(12, "Longest first chunk in characters; it is cut at the first clause end.",
                                lo=2, hi=200)
    chunk_max: int = _opt(40, "Longest later chunk in characters (whole clauses up to this).", lo=4, hi=500)
    chunk_growth: float = _opt(1.0, "A chunk is at most this many times as long as all before it (0: off).",
                               lo=0.0, hi=10.0)
    lookahead_chunks: int = _opt(2, "Chunks synthesized ahead of playback at most.", lo=1, hi=16)
    comma_pause_ms: int = _opt(150, "Silence after a chunk ending in ，、；： .", lo=0, hi=2000)
    period_pause_ms: int = _opt(300, "Silence after a chunk ending in 。！？ .", lo=0, hi=3000)
    trim_tail: bool = _opt(True, "Cut trailing silence and noise bursts from each synthesized chunk.")
    phrase_cache: bool = _opt(True, "Keep the audio of repeated chunks on disk and replay it without synthesis.")


@dataclass(frozen=True)
class WorkerConfig:
    process: bool = _opt(True, "Run the ASR, LLM and TTS in a worker process of their own: if it crashes or "
                               "hangs, it is restarted and the session keeps listening.")
    call_timeout_s: float = _opt(20.0, "A worker that gives no answer to a call for this long is taken as hung, "
                                       "killed and restarted.", lo=1.0, hi=600.0)
    restart_backoff_s: float = _opt(1.0, "Wait before restarting a lost worker; doubled for each loss in a row.",
                                    lo=0.0, hi=60.0)
    restart_backoff_max_s: float = _opt(30.0, "Longest wait before a restart.", lo=1.0, hi=600.0)
    restart_wait_s: float = _opt(60.0, "A request made while the worker restarts waits this long for it, and is "
                                       "answered then; after that it gets the apology.", lo=0.0, hi=600.0)
    slow_turn_s: float = _opt(5.0, "A turn whose first reply sample comes this long after the end of speech is "
                                   "slow.", lo=0.5, hi=120.0)
    slow_turns: int = _opt(3, "Restart the worker after this many slow turns in a row (0: never).", lo=0, hi=100)
    nice: int = _opt(0, "The worker lowers its CPU priority by this much, so audio I/O, VAD and KWS win the cores.",
                     lo=0, hi=19)


@dataclass(frozen=True)
class LogConfig:
    level: str = _opt("info", "Log level.", choices=("debug", "info", "warning", "error"))
    format: str = _opt("console", "'console' for people, 'json' for machines.", choices=("console", "json"))
    file: str = _opt("", "`assistant run` also logs to this file (the worker to NAME-worker.log beside it); "
                         "empty: stderr only.", allow_empty=True)
    file_max_mb: float = _opt(2.0, "A log file is rotated at this size.", lo=0.01, hi=1000.0)
    total_max_mb: float = _opt(20.0, "All log files together (both processes, rotated ones included) stay "
                                     "under this.", lo=0.02, hi=10000.0)
    health_interval_s: float = _opt(3600.0, "`assistant run` logs the RSS, open files and threads of its processes "
                                            "this often.", lo=1.0, hi=86400.0)


@dataclass(frozen=True)
class Config:
    audio: AudioConfig = field(default_factory=AudioConfig)
    vad: VadConfig = field(default_factory=VadConfig)
    wake: WakeConfig = field(default_factory=WakeConfig)
    idle: IdleConfig = field(default_factory=IdleConfig)
    listening: ListeningConfig = field(default_factory=ListeningConfig)
    thinking: ThinkingConfig = field(default_factory=ThinkingConfig)
    speaking: SpeakingConfig = field(default_factory=SpeakingConfig)
    barge_in: BargeInConfig = field(default_factory=BargeInConfig)
    echo: EchoConfig = field(default_factory=EchoConfig)
    dialog: DialogConfig = field(default_factory=DialogConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    npu: NpuConfig = field(default_factory=NpuConfig)
    rkllm: RkllmConfig = field(default_factory=RkllmConfig)
    matcha: MatchaConfig = field(default_factory=MatchaConfig)
    kws: KwsConfig = field(default_factory=KwsConfig)
    asr: AsrConfig = field(default_factory=AsrConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)
    tts: TtsConfig = field(default_factory=TtsConfig)
    worker: WorkerConfig = field(default_factory=WorkerConfig)
    log: LogConfig = field(default_factory=LogConfig)
    wyoming: WyomingConfig = field(default_factory=WyomingConfig)
    satellite: SatelliteConfig = field(default_factory=SatelliteConfig)
    status: StatusConfig = field(default_factory=StatusConfig)
    ha: HaConfig = field(default_factory=HaConfig)
    base_dir: Path = field(default=Path("."), metadata={"internal": True})

    def max_duration_s(self, state: str) -> float:
        """The watchdog limit of a state (time with no worker is not counted, up to
        ``worker.restart_wait_s``: see ``Session``)."""
        limits = {"idle": self.idle.max_s, "listening": self.listening.max_s,
                  "thinking": self.thinking.max_s, "speaking": self.speaking.max_s}
        return limits[state]

    def data_dir(self) -> Path:
        """``tools.data_dir`` made absolute against the config file's folder; by default the XDG data home's."""
        if not self.tools.data_dir:
            return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "tingshuo"
        p = Path(self.tools.data_dir).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def path(self, value: str) -> Path:
        """A configured file path: ``~`` expanded, relative paths taken from the config file's folder."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def model_dirs(self) -> list[Path]:
        """``models.dirs`` made absolute against the config file's folder."""
        out = []
        for d in self.models.dirs:
            p = Path(d).expanduser()
            out.append(p if p.is_absolute() else (self.base_dir / p).resolve())
        return out


def load(path: Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read ``path`` (or the defaults alone), apply ``dotted.key=TOML_VALUE`` overrides, validate."""
    raw: dict[str, Any] = {}
    base = Path(".").resolve()
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from None
        base = Path(path).resolve().parent
    for item in overrides:
        _apply_override(raw, item)
    cfg: Config = _build(Config, raw, "")
    return dataclasses.replace(cfg, base_dir=base)


def _apply_override(raw: dict[str, Any], item: str) -> None:
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {item!r}: expected dotted.key=VALUE")
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text  # a bare word such as `always` is taken as a string; types are checked below
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{key}: {part} is not a section")
        node = child
    node[parts[-1]] = value


def _build(cls: type[Any], raw: Any, prefix: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a table")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ConfigError(f"unknown config key: {prefix}{unknown[0]}")
    kwargs: dict[str, Any] = {}
    for name, value in raw.items():
        f, hint, key = fields[name], hints[name], prefix + name
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(typing.cast(type[Any], hint), value, key + ".")
        else:
            kwargs[name] = _check(key, hint, value, f.metadata)
    return cls(**kwargs)


def _check(key: str, hint: Any, value: Any, meta: typing.Mapping[str, Any]) -> Any:
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if hint is int or hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                hint is int and not isinstance(value, int)):
            kind = "a whole number" if hint is int else "a number"
            raise ConfigError(f"{key}: expected {kind}, got {value!r}")
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ConfigError(f"{key}: must be between {lo:g} and {hi:g}, got {value!r}")
        return hint(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"{key}: must be one of {', '.join(choices)}; got {value!r}")
        return value
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{key}: expected a list of non-empty strings, got {value!r}")
        if not value and not meta.get("allow_empty"):
            raise ConfigError(f"{key}: must not be empty")
        return tuple(value)
    if typing.get_origin(hint) is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a table such as {{\"停\" = 0.4}}, got {value!r}")
        return {str(k): _check(f"{key}.{k}", float, v, meta) for k, v in value.items()}
    raise ConfigError(f"{key}: unsupported setting")  # pragma: no cover - a programming error


def describe() -> list[tuple[str, Any, str]]:
    """Every key with its default and doc, for the README's reference and `assistant config`."""
    rows: list[tuple[str, Any, str]] = []

    def walk(cls: type[Any], prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("internal"):
                continue
            if dataclasses.is_dataclass(hints[f.name]):
                walk(typing.cast(type[Any], hints[f.name]), prefix + f.name + ".")
                continue
            rows.append((prefix + f.name, f.metadata["default"], f.metadata["doc"]))

    walk(Config, "")
    return rows
