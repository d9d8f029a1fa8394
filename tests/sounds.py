"""A voice to lip-sync to, and what frequency a file's sound is: the lip syncer's tests and the acceptance
script (scripts/processors_render.py) share them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.io import wavfile

RATE = 48000


def voice(path: Path, seconds: float = 2.0, hz: float = 1000.0) -> Path:
    """A 48 kHz stereo tone at ``hz`` whose loudness swings 3 times a second (a mouth to follow)."""
    t = np.arange(int(seconds * RATE)) / RATE
    wave = (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) * np.sin(2 * np.pi * hz * t)
    wavfile.write(path, RATE, (np.stack([wave, wave], axis=1) * 15000).astype(np.int16))
    return path


def pitch(path: Path) -> float:
    """The loudest frequency of a file's sound (Hz)."""
    from pipeline.audio.decode import decode

    mono = decode(path).astype(np.float64).mean(axis=1)
    spectrum = np.abs(np.fft.rfft(mono))
    return float(np.fft.rfftfreq(len(mono), 1 / RATE)[int(np.argmax(spectrum[1:])) + 1])
