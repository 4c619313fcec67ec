"""Echo cancellation on real Mandarin recordings: simulated speaker echo, double talk, silence, chunking.

The played audio is the voiced part of greeting_10s.wav (speech only fills its first 3.6 s; the rest is
near-silence at about -90 dBFS) played three times, so echo is present before, during and after the
near-end talker (ask_who_are_you.wav) who starts at 4 s.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from pywebrtc_audio import AudioProcessor

from assistant.audio.echo import EchoCanceller, EchoStats
from assistant.audio.protocols import Samples
from assistant.audio.wav import read_wav

SR = 16000
REAL = "/work/shared/audio/real"
NEAR_START = 4 * SR
AEC3_DELAY = 128  # samples (8 ms) that AEC3 itself delays its output, measured for pywebrtc-audio 0.2.0


def played() -> Samples:
    voiced = read_wav(f"{REAL}/greeting_10s.wav", SR)[: int(3.6 * SR)]
    return np.tile(voiced, 3)


def talker() -> Samples:
    return read_wav(f"{REAL}/ask_who_are_you.wav", SR)


def echo_of(reference: Samples, delay_ms: int = 40) -> Samples:
    """0.5 x the reference through a 30 ms decaying room response, arriving ``delay_ms`` late."""
    rng = np.random.default_rng(0)
    t = np.arange(30 * SR // 1000)
    h = rng.standard_normal(t.size) * np.exp(-t / (0.05 * SR / 6.9))  # 50 ms RT60
    h[0] = 1.0
    h /= np.sqrt(np.sum(h * h))
    wet = 0.5 * np.convolve(reference, h)[: reference.size]
    d = delay_ms * SR // 1000
    out = np.zeros(reference.size, np.float32)
    out[d:] = wet[: reference.size - d]
    return out


def run(ec: EchoCanceller, mic: Samples, reference: Samples, sizes: Sequence[int] = (320,)) -> list[Samples]:
    """Feed mic and reference in chunks cycling through ``sizes``; return the output chunks."""
    outs, pos, k = [], 0, 0
    while pos < mic.size:
        n = sizes[k % len(sizes)]
        outs.append(ec.process(mic[pos : pos + n], reference[pos : pos + n]))
        pos, k = pos + n, k + 1
    return outs


def converged_erle(mic: Samples, reference: Samples, ec: EchoCanceller) -> tuple[float, EchoStats]:
    """ERLE over echo chunks after the first 2 s (convergence), from the canceller's own stats."""
    head = 2 * SR
    run(ec, mic[:head], reference[:head])
    before = copy.copy(ec.stats)
    run(ec, mic[head:], reference[head:])
    after = ec.stats
    return 10 * np.log10((after.in_energy - before.in_energy) / (after.out_energy - before.out_energy)), after


def corr(a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]) -> float:
    return float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b)))


def db(num: npt.NDArray[np.floating], den: npt.NDArray[np.floating]) -> float:
    return float(10 * np.log10(np.dot(num, num) / np.dot(den, den)))


def test_linear_echo_is_cancelled_by_20_db() -> None:
    ref = played()
    ec = EchoCanceller(SR)
    erle, stats = converged_erle(echo_of(ref), ref, ec)
    print(f"ERLE after 2 s: {erle:.1f} dB; over the whole run: {stats.erle_db:.1f} dB")  # measured 68.8 / 43.8
    assert erle >= 20.0
    assert stats.erle_db is not None
    assert stats.erle_db >= 20.0
    assert stats.chunks == ref.size // 320
    assert stats.echo_chunks > 300  # 10.8 s of mostly voiced playback in 20 ms chunks
    assert stats.acted_chunks >= 0.9 * stats.echo_chunks


def test_reference_arriving_after_its_echo_is_not_cancelled() -> None:
    """Why the reference must be fed before the capture: 10 ms late, the 20 dB bar is not reached."""
    ref = played()
    late = np.zeros_like(ref)
    late[160:] = ref[:-160]
    erle, _ = converged_erle(echo_of(ref, delay_ms=0), late, EchoCanceller(SR))
    assert erle < 20.0  # measured 11.4 dB


def test_near_end_speech_survives_double_talk() -> None:
    ref, near = played(), talker()
    echo = echo_of(ref)
    mic = echo.copy()
    span = slice(NEAR_START, NEAR_START + near.size)
    mic[span] += near
    ec = EchoCanceller(SR)
    out = np.concatenate(run(ec, mic, ref))
    lag = ec.latency_samples + AEC3_DELAY
    kept = out[NEAR_START + lag : NEAR_START + lag + near.size]
    assert db(kept, near) >= -4.0  # measured -1.5 dB
    assert corr(kept, near) > 0.8  # measured 0.87; the high-pass filter alone caps it at 0.97
    assert corr(kept, near) > corr(mic[span], near) + 0.05  # the mic itself: 0.78
    # Echo alone, before the talker and after them (the filter did not diverge during double talk).
    before, after = slice(2 * SR, NEAR_START), slice(span.stop + SR // 10, mic.size - lag)
    assert db(mic[before], out[before]) >= 20.0  # measured 70.7 dB
    assert db(mic[after], out[after]) >= 20.0  # measured 67.1 dB


def test_silent_reference_leaves_the_mic_alone() -> None:
    near = talker()
    ec = EchoCanceller(SR)
    out = np.concatenate(run(ec, near, np.zeros_like(near)))
    lag = ec.latency_samples + AEC3_DELAY
    assert not out[: ec.latency_samples].any()
    assert corr(out[lag:], near[:-lag]) > 0.95  # measured 0.967: only the high-pass filter changes it
    assert abs(db(out[lag:], near[:-lag])) < 1.0
    hp = AudioProcessor(SR, high_pass_filter=True).process(near, np.zeros_like(near))
    np.testing.assert_allclose(out[lag:], hp[:-lag], atol=1e-5)
    assert ec.stats.chunks == len(range(0, near.size, 320))
    assert ec.stats.echo_chunks == 0
    assert ec.stats.erle_db is None


@pytest.mark.parametrize("sizes", [(112,), (528,), (1, 159, 161, 7, 640, 333)])
def test_any_chunk_length_gives_the_same_stream(sizes: tuple[int, ...]) -> None:
    ref = played()[: 3 * SR]
    mic = echo_of(ref) + np.roll(talker()[: 3 * SR], SR)
    outs = run(EchoCanceller(SR), mic, ref, sizes)
    expected_sizes = [sizes[k % len(sizes)] for k in range(len(outs))]
    expected_sizes[-1] = mic.size - sum(expected_sizes[:-1])
    assert [o.size for o in outs] == expected_sizes
    assert all(o.dtype == np.float32 for o in outs)
    reference_run = np.concatenate(run(EchoCanceller(SR), mic, ref, (320,)))
    np.testing.assert_array_equal(np.concatenate(outs), reference_run)


def test_reset_starts_a_new_stream() -> None:
    ref = played()[: 2 * SR]
    mic = echo_of(ref)
    ec = EchoCanceller(SR)
    run(ec, mic, ref, (77,))
    ec.reset()
    assert ec.stats == EchoStats()
    again = np.concatenate(run(ec, mic, ref))
    np.testing.assert_array_equal(again, np.concatenate(run(EchoCanceller(SR), mic, ref)))


def test_suppression_and_gain_still_cancel() -> None:
    ref = played()
    erle, _ = converged_erle(echo_of(ref), ref, EchoCanceller(SR, noise_suppression=True, gain_control=True))
    assert erle >= 20.0  # measured 57.7 dB


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        EchoCanceller(SR).process(np.zeros(320, np.float32), np.zeros(160, np.float32))
