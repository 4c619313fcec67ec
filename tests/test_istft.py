"""The vocoder's ISTFT: a centred STFT of real speech comes back sample for sample."""

from __future__ import annotations

import numpy as np
import pytest

from models.istft import Istft, hann, istft, stft
from tests.conftest import real


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2)
                               / np.sum((reference.astype(np.float64) - estimate) ** 2)))


@pytest.mark.parametrize(("n_fft", "hop"), [(1024, 256), (512, 128), (800, 200), (1000, 300)])
def test_round_trip_reconstructs_real_speech(n_fft: int, hop: int) -> None:
    speech = real("greeting_10s.wav")
    spectrum = stft(speech, n_fft, hop)
    assert spectrum.shape == (n_fft // 2 + 1, 1 + len(speech) // hop)
    audio = Istft(n_fft, hop)(spectrum)
    assert audio.dtype == np.float32
    assert len(audio) == hop * (spectrum.shape[1] - 1)
    assert snr_db(speech[:len(audio)], audio) > 90  # float32 rounding only


def test_vocoder_window_gives_599_hops_of_audio() -> None:
    """600 frames (the vocoder's window) → 599 × 256 samples ≈ 9.58 s at 16 kHz, frame t centred at t × hop."""
    speech = real("greeting_10s.wav")[:256 * 599]
    spectrum = stft(speech, 1024, 256)
    assert spectrum.shape == (513, 600)
    audio = istft(spectrum, 1024, 256)
    assert len(audio) == 256 * 599
    assert snr_db(speech, audio) > 90


def test_cached_envelope_is_reused_and_stays_right() -> None:
    inverse = Istft(1024, 256)
    a, b = real("ask_who_are_you.wav"), real("hey_xiaozhi.wav")[:len(real("ask_who_are_you.wav"))]
    for signal in (a, b, a):
        out = inverse(stft(signal, 1024, 256))
        assert snr_db(signal[:len(out)], out) > 90
    for frames in range(20, 40):  # a caller that trims its spectrum: the cache stays small
        inverse(np.zeros((513, frames), np.complex64))
    assert len(inverse._inverse_envelope) <= 8


def test_a_known_spectrum_gives_the_tone_it_holds() -> None:
    """The spectrum a Hann-windowed cosine has, written down by hand, gives that cosine back."""
    n_fft, hop, frames, k = 1024, 256, 100, 32
    spectrum = np.zeros((n_fft // 2 + 1, frames), np.complex64)
    # cos(2πkm/n) · (0.5 - 0.5 cos(2πm/n)) has n/4 at bin k and -n/8 at bins k ± 1; frame t starts at
    # sample t·hop - n/2, so its phase is 2πk(t·hop - n/2)/n (k even: the n/2 drops out).
    phase = np.exp(2j * np.pi * k * hop * np.arange(frames) / n_fft)
    spectrum[k] = (n_fft / 4) * phase
    spectrum[k - 1] = spectrum[k + 1] = -(n_fft / 8) * phase
    audio = istft(spectrum, n_fft, hop)
    expected = np.cos(2 * np.pi * k * np.arange(len(audio)) / n_fft)
    assert snr_db(expected[n_fft:-n_fft], audio[n_fft:-n_fft]) > 60


def test_window_and_arguments_are_checked() -> None:
    assert hann(4).tolist() == [0.0, 0.5, 1.0, 0.5]  # periodic, as torch.hann_window
    with pytest.raises(ValueError, match="hop"):
        Istft(1024, 2048)
    with pytest.raises(ValueError, match="window"):
        Istft(1024, 256, window=np.ones(512, np.float32))
    with pytest.raises(ValueError, match="513"):
        Istft(1024, 256)(np.zeros((257, 10), np.complex64))
