"""Audio hygiene on synthetic chunks: junk tails cut, speech kept, edges faded, pauses by punctuation."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.audio.hygiene import fade_edges, finish_chunk, pause_after, silence, trim_tail, window_rms
from assistant.audio.protocols import Samples

BURST_RMS = 0.108  # measured on the fixed-window NPU TTS tails this guards against


def speech(seconds: float, rate: int, level: float = 0.1, seed: int = 0) -> Samples:
    """Speech-like audio at RMS ≈ ``level``: a 180 Hz voice with harmonics and a gliding pitch,
    amplitude-modulated at a syllable rate of 4 Hz (dipping to a fifth between syllables, not to 0)."""
    t = np.arange(round(seconds * rate)) / rate
    phase = 2 * np.pi * (180 * t + 15 * np.sin(2 * np.pi * 0.7 * t))
    voice = sum(np.sin(k * phase + k) / k for k in range(1, 8))
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t + seed)
    out = voice * envelope
    return np.asarray(out * level / np.sqrt(np.mean(out**2)), np.float32)


def noise(seconds: float, rate: int, rms: float, seed: int = 1) -> Samples:
    out = np.random.default_rng(seed).standard_normal(round(seconds * rate))
    return np.asarray(out * rms / np.sqrt(np.mean(out**2)), np.float32)


def gap(seconds: float, rate: int) -> Samples:
    """Near-silence as a TTS pads it: a faint hiss, not digital zero."""
    return noise(seconds, rate, 1e-4, seed=7)


def join(*parts: Samples) -> Samples:
    return np.concatenate(parts).astype(np.float32)


RATES = [16000, 24000, 44100]


@pytest.mark.parametrize("rate", RATES)
def test_late_burst_after_silence_is_cut_and_speech_kept(rate: int) -> None:
    voice = speech(2.03, rate)
    chunk = join(voice, gap(1.5, rate), noise(0.15, rate, BURST_RMS), gap(0.4, rate))
    burst_start = len(voice) + round(1.5 * rate)
    assert window_rms(chunk[burst_start:], round(0.1 * rate)).max() > 0.01  # a naive threshold keeps it

    out = trim_tail(chunk, rate)

    assert len(voice) <= len(out) <= len(voice) + round(0.15 * rate) + round(0.1 * rate)
    assert len(out) < burst_start
    np.testing.assert_array_equal(out, chunk[:len(out)])


@pytest.mark.parametrize("rate", RATES)
def test_burst_louder_than_the_speech_is_cut(rate: int) -> None:
    voice = speech(1.2, rate, level=0.03)
    chunk = join(voice, gap(0.8, rate), noise(0.25, rate, 0.5), gap(0.2, rate))
    out = trim_tail(chunk, rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


def test_soft_speech_below_a_naive_threshold_is_kept_and_the_burst_cut() -> None:
    rate = 24000
    voice = speech(1.5, rate, level=0.005)  # every window is below 0.01 RMS
    chunk = join(voice, gap(1.0, rate), noise(0.1, rate, BURST_RMS), gap(0.5, rate))
    out = trim_tail(chunk, rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


@pytest.mark.parametrize("rate", RATES)
def test_quiet_fading_ending_is_kept(rate: int) -> None:
    fade = np.linspace(1.0, 0.08, round(0.6 * rate), dtype=np.float32)  # down to about −22 dB
    voice = join(speech(1.4, rate), speech(0.6, rate, seed=2) * fade)
    out = trim_tail(join(voice, gap(1.0, rate)), rate)
    assert len(out) >= len(voice) - round(0.1 * rate) + round(0.15 * rate)


def test_quiet_ending_at_minus_20_db_is_kept() -> None:
    rate = 16000
    voice = join(speech(1.5, rate), speech(0.5, rate, level=0.01, seed=3))
    out = trim_tail(join(voice, gap(1.0, rate), noise(0.1, rate, BURST_RMS)), rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


@pytest.mark.parametrize("pause", [0.05, 0.12, 0.2, 0.24])
def test_short_last_word_after_a_clause_pause_is_kept(pause: float) -> None:
    rate = 24000
    voice = join(speech(1.5, rate), gap(pause, rate), speech(0.2, rate, level=0.05, seed=4))
    out = trim_tail(join(voice, gap(1.2, rate), noise(0.15, rate, BURST_RMS)), rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


@pytest.mark.parametrize("offset", np.arange(0.0, 0.1, 0.013).tolist())
@pytest.mark.parametrize("silent", [0.45, 0.8])
def test_burst_half_a_second_after_speech_is_cut_at_any_window_alignment(offset: float, silent: float) -> None:
    rate = 16000
    voice = speech(1.0 + offset, rate)
    chunk = join(voice, gap(silent, rate), noise(0.1, rate, BURST_RMS), gap(0.1, rate))
    out = trim_tail(chunk, rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("seconds", [0.2, 0.45, 1.0, 3.37])
def test_all_speech_is_not_trimmed(rate: int, seconds: float) -> None:
    chunk = speech(seconds, rate)
    assert len(trim_tail(chunk, rate)) == len(chunk)


def test_speech_ending_in_a_short_silence_keeps_at_most_keep_s_of_it() -> None:
    rate = 16000
    voice = speech(1.0, rate)
    out = trim_tail(join(voice, gap(0.6, rate)), rate)
    assert len(voice) <= len(out) <= len(voice) + round(0.25 * rate)


def test_nothing_sustained_means_nothing_cut() -> None:
    rate = 16000
    for chunk in (np.zeros(rate, np.float32), join(speech(0.2, rate), gap(1.0, rate), noise(0.1, rate, BURST_RMS)),
                  np.zeros(0, np.float32)):
        assert len(trim_tail(chunk, rate)) == len(chunk)


def test_trim_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mono"):
        trim_tail(np.zeros((2, 100), np.float32), 16000)
    with pytest.raises(ValueError, match="sample rate"):
        trim_tail(np.zeros(100, np.float32), 0)
    with pytest.raises(ValueError, match="window_s"):
        trim_tail(np.zeros(100, np.float32), 16000, window_s=0)


@pytest.mark.parametrize("rate", RATES)
def test_fades_zero_the_edges_and_leave_the_middle(rate: int) -> None:
    chunk = speech(0.5, rate) + np.float32(0.2)  # an offset: the edges are far from zero
    before = chunk.copy()
    out = fade_edges(chunk, rate, fade_ms=5)
    n = round(0.005 * rate)
    assert out.dtype == np.float32
    assert len(out) == len(chunk)
    assert abs(out[0]) < 1e-6
    assert abs(out[-1]) < 1e-6
    np.testing.assert_array_equal(out[n:-n], chunk[n:-n])
    assert np.all(np.abs(out[:n]) <= np.abs(chunk[:n]) + 1e-7)
    assert np.all(np.diff(np.abs(out[:n])) >= -0.05)  # a ramp, not a jump
    np.testing.assert_array_equal(chunk, before)  # the input is not touched


def test_fade_ramp_is_a_raised_cosine() -> None:
    out = fade_edges(np.ones(1000, np.float32), 1000, fade_ms=100)
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(100) / 100)
    np.testing.assert_allclose(out[:100], ramp, atol=1e-6)
    np.testing.assert_allclose(out[-100:], ramp[::-1], atol=1e-6)


def test_fade_on_one_side_and_on_tiny_chunks() -> None:
    ones = np.ones(1000, np.float32)
    only_in = fade_edges(ones, 16000, start=True, end=False)
    assert only_in[0] == 0 and only_in[-1] == 1
    tiny = fade_edges(np.ones(10, np.float32), 16000, fade_ms=50)
    assert tiny[0] == 0 and tiny[-1] == 0 and len(tiny) == 10
    assert len(fade_edges(np.zeros(0, np.float32), 16000)) == 0
    np.testing.assert_array_equal(fade_edges(ones, 16000, fade_ms=0), ones)


@pytest.mark.parametrize(("text", "seconds"), [
    ("你好，", 0.15), ("苹果、", 0.15), ("第一；", 0.15), ("如下：", 0.15),
    ("hello,", 0.15), ("a;", 0.15), ("note:", 0.15),
    ("好的。", 0.3), ("真的！", 0.3), ("是吗？", 0.3), ("done.", 0.3), ("wow!", 0.3), ("why?", 0.3),
    ("嗯……", 0.3), ("well...", 0.3), ("第一行\n", 0.3), ("第一行，\n", 0.3),
    ("他说：“好的。”", 0.3), ("（如此。）", 0.3), ("好的。  ", 0.3), ("好的， \u3000", 0.15),
    ("没有标点", 0.0), ("温度是3.5", 0.0), ("", 0.0), ("   ", 0.0), ("破折号——", 0.0),
])
def test_pause_table(text: str, seconds: float) -> None:
    assert pause_after(text) == pytest.approx(seconds)


def test_pause_lengths_are_configurable() -> None:
    assert pause_after("好，", comma_ms=80, period_ms=500) == pytest.approx(0.08)
    assert pause_after("好。", comma_ms=80, period_ms=500) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="negative"):
        pause_after("好。", period_ms=-1)


def test_silence() -> None:
    out = silence(0.3, 24000)
    assert out.dtype == np.float32 and len(out) == 7200 and not out.any()
    assert len(silence(0.0, 16000)) == 0
    with pytest.raises(ValueError, match="seconds"):
        silence(-0.1, 16000)


def test_finish_chunk_trims_fades_and_pauses() -> None:
    rate = 24000
    voice = speech(1.0, rate) + np.float32(0.1)
    chunk = join(voice, gap(1.0, rate), noise(0.1, rate, BURST_RMS))
    out = finish_chunk(chunk, rate, "好的。")
    pause = round(0.3 * rate)
    assert len(voice) + pause <= len(out) <= len(voice) + round(0.25 * rate) + pause
    assert abs(out[0]) < 1e-6
    assert not out[-pause - 1:].any()


def test_trim_head_cuts_leading_silence_but_keeps_a_soft_onset() -> None:
    from assistant.audio.hygiene import trim_head

    rate = 24000
    onset = (0.01 * np.sin(np.arange(rate // 10) * 0.3)).astype(np.float32)  # soft, -40 dB
    audio = np.concatenate([np.zeros(int(0.3 * rate), np.float32), onset]).astype(np.float32)
    trimmed = trim_head(audio, rate)
    assert len(trimmed) == pytest.approx(len(onset) + 0.02 * rate, abs=2)
    assert np.array_equal(trimmed[-len(onset):], onset)
    silent = np.zeros(100, np.float32)
    assert np.array_equal(trim_head(silent, rate), silent)
