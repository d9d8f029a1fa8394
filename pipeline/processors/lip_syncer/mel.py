"""The voice -> wav2lip's 80-band mel spectrogram, and the 16-frame window each video frame hears
(docs/processors.md §2.4–2.5).

:func:`spectrogram` takes 48 kHz stereo (int16 as decoded, or the voice extractor's float output):
resampled to 16 kHz (FFT method), mono, peak-normalised (a silent file stays zeros: no NaN), pre-emphasised
(0.97), a periodic-Hann STFT of 800 samples every 200 (80 frames/s, scipy's "spectrum" scaling), its
magnitude through :func:`filter_bank`. :class:`Windows` cuts it per video frame: item n is the 16 mel frames
(200 ms) that end at the n-th of the indices 0, 80/fps, 2·80/fps… that are ≥ 16, so that it starts at the
frame's own time; frames past the last item hear the empty window (zeros). :func:`audio_tensor` is what the
models take: clip(1.6·log10(max(m, 1e-5)) + 3.2, −4, 4) as (1, 1, 80, 16).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import signal

SAMPLE_RATE = 16_000
SOURCE_RATE = 48_000
N_FFT = 800
HOP = 200
MEL_BANDS = 80
MEL_FPS = SAMPLE_RATE / HOP  # 80 mel frames a second
WINDOW = 16  # mel frames per video frame (200 ms)
F_MIN, F_MAX = 55.0, 7600.0
PRE_EMPHASIS = 0.97
Mel = npt.NDArray[np.float32]


def _to_mel(hz: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return 2595.0 * np.log10(1.0 + np.asarray(hz, np.float64) / 700.0)


def _to_hz(mel: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return 700.0 * (10.0 ** (np.asarray(mel, np.float64) / 2595.0) - 1.0)


def band_edges() -> npt.NDArray[np.int64]:
    """The 82 FFT-bin edges of the bands: floor(801·hz/16000) of 82 points evenly spaced in mel."""
    points = np.linspace(_to_mel(F_MIN), _to_mel(F_MAX), MEL_BANDS + 2)
    return np.floor((N_FFT + 1) * _to_hz(points) / SAMPLE_RATE).astype(np.int64)


@functools.cache
def filter_bank() -> npt.NDArray[np.float32]:
    """(80, 401): band i is a triangle (scipy's ``triang``) over bins edges[i] … edges[i+1] − 1 only, not
    normalised by its area (FaceFusion's bank, which wav2lip's features are made with here)."""
    edges = band_edges()
    bank = np.zeros((MEL_BANDS, N_FFT // 2 + 1), np.float32)
    for i in range(MEL_BANDS):
        lo, hi = int(edges[i]), int(edges[i + 1])
        if hi > lo:
            bank[i, lo:hi] = signal.windows.triang(hi - lo)
    return bank


def spectrogram(audio: npt.NDArray[np.generic]) -> Mel:
    """(80, T) mel magnitudes of 48 kHz stereo ``audio`` ((N, 2), or (N,) mono); T = 80 a second + 1."""
    x = np.asarray(audio, np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if len(x) == 0:
        return np.zeros((MEL_BANDS, 0), np.float32)
    x = signal.resample(x, max(round(len(x) * SAMPLE_RATE / SOURCE_RATE), 1), axis=0)
    mono = x.mean(axis=1)
    peak = float(np.max(np.abs(mono)))
    if peak > 0 and np.isfinite(peak):  # a silent file stays zeros (FaceFusion divides by 0: NaN)
        mono = mono / peak
    emphasised = signal.lfilter([1.0, -PRE_EMPHASIS], [1.0], mono)
    _, _, z = signal.stft(emphasised, nperseg=N_FFT, nfft=N_FFT, noverlap=N_FFT - HOP)
    return (filter_bank() @ np.abs(z)).astype(np.float32)


def frame_starts(mel_frames: int, fps: float) -> npt.NDArray[np.int64]:
    """Where each video frame's window ends, in mel frames: the indices 0, 80/fps… below ``mel_frames`` that
    are ≥ 16 (item n of the list is video frame n's)."""
    steps = np.arange(int(np.ceil(mel_frames * fps / MEL_FPS)) + 1)
    indices = np.floor(steps * MEL_FPS / fps).astype(np.int64)  # i·80/fps, not a sum of rounded steps
    return indices[(indices >= WINDOW) & (indices < mel_frames)]


@dataclass(frozen=True)
class Windows:
    """A clip's mel spectrogram cut per video frame (``fps``): ``window(n)`` is frame n's (80, 16).

    ``seconds``: how long the sound is. Its last 200 ms have no window of their own (a window starts at its
    frame's time and is 200 ms long), so the last frames before the sound ends hear the empty one too."""

    mel: Mel
    fps: float
    seconds: float = 0.0

    @functools.cached_property
    def ends(self) -> npt.NDArray[np.int64]:
        return frame_starts(self.mel.shape[1], self.fps)

    @property
    def count(self) -> int:
        """How many frames have a window of the audio (the later ones hear silence)."""
        return len(self.ends)

    def frames_past_end(self, frames: int) -> int:
        """How many of a clip's first ``frames`` frames come after the sound has ended."""
        return max(0, frames - int(np.ceil(self.seconds * self.fps - 1e-9)))

    def heard(self, n: int) -> bool:
        return 0 <= n < self.count

    def window(self, n: int) -> Mel:
        """Video frame ``n``'s 16 mel frames; the empty window (zeros) past the audio's end."""
        if not self.heard(n):
            return empty()
        end = int(self.ends[n])
        return np.ascontiguousarray(self.mel[:, end - WINDOW:end])


def empty() -> Mel:
    return np.zeros((MEL_BANDS, WINDOW), np.float32)


def audio_tensor(window: Mel, scale: float = 1.0) -> npt.NDArray[np.float32]:
    """The models' (1, 1, 80, 16) audio input of a window; ``scale`` multiplies it (wav2lip: 2·weight)."""
    a = np.clip(1.6 * np.log10(np.maximum(window, 1e-5)) + 3.2, -4.0, 4.0) * scale
    return a.astype(np.float32)[None, None]
