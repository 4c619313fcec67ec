"""What ``describe`` answers: Tingshuo's ASR, its voices and its wake words, in Home Assistant's terms."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from wyoming.info import AsrModel, AsrProgram, Attribution, Info, TtsProgram, TtsVoice, WakeModel, WakeProgram

from assistant.config import Config

LANGUAGES = ["zh", "zh-CN", "zh-cn"]  # Mandarin in simplified characters; Home Assistant compares them exactly
TINGSHUO = Attribution(name="Tingshuo", url="")  # no public home yet
WHISPER = Attribution(name="OpenAI", url="https://github.com/openai/whisper")
KOKORO = Attribution(name="hexgrad", url="https://huggingface.co/hexgrad/Kokoro-82M")
KWS = Attribution(name="k2-fsa", url="https://github.com/k2-fsa/sherpa-onnx")
MATCHA = Attribution(name="k2-fsa", url="https://github.com/k2-fsa/sherpa-onnx")


def _version() -> str | None:
    try:
        return version("tingshuo")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return None


def voice_description(name: str) -> str:
    """``zf_xiaoxiao`` → "Mandarin, female (xiaoxiao)"."""
    kind, _, who = name.partition("_")
    gender = {"zf": "female", "zm": "male"}.get(kind, "")
    return f"Mandarin, {gender} ({who})" if gender and who else f"Mandarin ({name})"


def describe(cfg: Config, voices: list[str], wake_words: list[str]) -> Info:
    """The services ``assistant serve`` offers: its ASR, its TTS with ``voices``, its ``wake_words``."""
    name, ours = cfg.wyoming.name, _version()
    asr = AsrProgram(
        name=f"{name}-asr", attribution=TINGSHUO, installed=True, version=ours,
        description="Tingshuo speech to text: Whisper for Mandarin, with the assistant's command words",
        models=[AsrModel(name=cfg.asr.model, attribution=WHISPER, installed=True, version=None,
                         description=f"Whisper ({cfg.asr.model}, {cfg.asr.compute_type})", languages=LANGUAGES)],
        supports_transcript_streaming=False)
    kokoro = cfg.models.tts == "kokoro"
    tts = TtsProgram(
        name=f"{name}-tts", attribution=TINGSHUO, installed=True, version=ours,
        description="Tingshuo text to speech: numbers, dates and units normalized for the ear, spoken clause "
                    "by clause",
        voices=[TtsVoice(name=v, attribution=KOKORO if kokoro else MATCHA, installed=True, version=None,
                         description=voice_description(v) if kokoro else "Mandarin (Matcha on the NPU)",
                         languages=LANGUAGES) for v in voices],
        supports_synthesize_streaming=True)
    wake = WakeProgram(
        name=f"{name}-wake", attribution=TINGSHUO, installed=True, version=ours,
        description="Tingshuo wake words: an open-vocabulary keyword spotter, words written in Chinese characters",
        models=[WakeModel(name=w, attribution=KWS, installed=True, version=None, description=f"wake word {w}",
                          languages=LANGUAGES, phrase=w) for w in wake_words])
    return Info(asr=[asr], tts=[tts], wake=[wake] if wake_words else [])


def satellite_info(cfg: Config) -> Info:
    """What ``assistant satellite`` says about itself: a satellite with its own wake words and endpointing."""
    from wyoming.audio import AudioFormat
    from wyoming.info import MicProgram, Satellite, SndProgram

    from assistant.wyoming.link import MIC_RATE, PLAY_RATE

    s, ours = cfg.satellite, _version()
    words = list(cfg.wake.keywords) if cfg.wake.mode == "keyword" else []
    wake = describe(cfg, [], words).wake
    return Info(
        satellite=Satellite(name=s.name, attribution=TINGSHUO, installed=True, version=ours, area=s.area or None,
                            description="Tingshuo: a hands-free Mandarin satellite (its own wake word, endpointing, "
                                        "echo defence and barge-in)",
                            has_vad=True, active_wake_words=words, max_active_wake_words=len(words),
                            supports_trigger=False),
        wake=wake,
        mic=[MicProgram(name=f"{s.name}-mic", attribution=TINGSHUO, installed=True, version=ours,
                        description="the microphone, echo-cancelled", mic_format=AudioFormat(MIC_RATE, 2, 1))],
        snd=[SndProgram(name=f"{s.name}-snd", attribution=TINGSHUO, installed=True, version=ours,
                        description="the speaker", snd_format=AudioFormat(PLAY_RATE, 2, 1))])
