"""The MDX-Net voice extractors (kim_vocal_1, kim_vocal_2, uvr_mdxnet): the voice out of music and noise,
before the mel spectrogram is made (docs/processors.md §2.3; the same maths for all three files).

48 kHz stereo is cut into chunks of 240·1024 samples every 180·1024 (the overlaps averaged); each chunk,
padded by 3840 samples each side, goes through a Hann STFT of 7680 every 1024 (3841 bins × 256 frames,
scipy's 1/Σw scaling undone), as [L re, L im, R re, R im] over the first 3072 bins; the model's output is
the voice's spectrogram itself (no mask), turned back into samples by the inverse STFT.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import signal

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.sessions import CatalogSession
from pipeline.types import Provider

CHUNK = 240 * 1024
STEP = 180 * 1024
N_FFT = 7680
HOP = 1024
TRIM = N_FFT // 2
BINS = 3072  # bins the model sees (up to 19.2 kHz at 48 kHz); the others are zero
FRAMES = 256
SPAN = (FRAMES - 1) * HOP  # samples per model window
STEP_C = SPAN - 2 * TRIM  # samples each window contributes


def _window() -> npt.NDArray[np.float64]:
    return signal.windows.hann(N_FFT, sym=True)


def to_spectrogram(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(2·n, SPAN) samples (channels of each window in turn) -> (n, 4, BINS, FRAMES) model input."""
    w = _window()
    _, _, z = signal.stft(rows, nperseg=N_FFT, noverlap=N_FFT - HOP, window=w)
    z = z * w.sum()  # the raw Σ x·w·e^{−jωn}
    n = len(rows) // 2
    parts = np.stack([z.real, z.imag], axis=1).reshape(n, 4, N_FFT // 2 + 1, -1)
    return np.ascontiguousarray(parts[:, :, :BINS], dtype=np.float32)


def from_spectrogram(spec: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """(n, 4, BINS, FRAMES) -> (2·n, SPAN) samples (the inverse of :func:`to_spectrogram`)."""
    n = len(spec)
    full = np.zeros((n, 4, N_FFT // 2 + 1, spec.shape[-1]), np.float64)
    full[:, :, :BINS] = spec
    pairs = full.reshape(n * 2, 2, N_FFT // 2 + 1, -1)
    w = _window()
    _, y = signal.istft(pairs[:, 0] + 1j * pairs[:, 1], nperseg=N_FFT, noverlap=N_FFT - HOP, window=w)
    return np.asarray(y[:, :SPAN], np.float64) / w.sum()


class VoiceExtractor(CatalogSession):
    """One MDX-Net voice extractor of the catalog."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0) -> None:
        if catalog.get(name).role != "voice_extractor":
            valid = [e.name for e in catalog.by_role("voice_extractor")]
            raise UserError(f"'{name}' is not a voice extractor (choose from: {', '.join(valid)})")
        super().__init__(name, providers, threads)

    def separate(self, spec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The model on (n, 4, BINS, FRAMES): the voice's spectrogram, one window a run."""
        (name,), (out,) = self.io
        runs = [self.session.run([out], {name: spec[i:i + 1]})[0] for i in range(len(spec))]
        return np.concatenate(runs).astype(np.float32)

    def extract_chunk(self, seg: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
        """The voice of one chunk ((L, 2) int16) as (L, 2) float in about [−1, 1]."""
        length = len(seg)
        x = np.asarray(seg, np.float32).T / 32767.0
        pad = STEP_C - length % STEP_C
        x = np.pad(x, ((0, 0), (TRIM, TRIM + pad)))
        starts = range(0, length + pad, STEP_C)
        rows = np.stack([x[c, i:i + SPAN] for i in starts for c in (0, 1)])
        voice = from_spectrogram(self.separate(to_spectrogram(rows)))
        per_window = voice.reshape(len(starts), 2, SPAN)[:, :, TRIM:SPAN - TRIM]
        joined = np.concatenate(list(per_window), axis=1)[:, :length]
        return joined.T

    def extract(self, audio: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
        """The voice of (N, 2) 48 kHz audio: chunks every :data:`STEP`, their overlaps averaged."""
        total = len(audio)
        acc = np.zeros((total, 2), np.float64)
        count = np.zeros((total, 1), np.float64)
        for start in range(0, total, STEP):
            seg = audio[start:start + CHUNK]
            acc[start:start + len(seg)] += self.extract_chunk(seg)
            count[start:start + len(seg)] += 1
        return (acc / np.maximum(count, 1)).astype(np.float32)
