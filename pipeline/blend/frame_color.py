"""FaceFusion's frame colour matching: a result given the low-frequency colour of another image.

- :func:`match_frame_color` (``src``, ``tgt``): ``tgt`` plus the coarse (about 16 × 16) colour difference
  between ``src`` and ``tgt``, built up over three sizes (docs/processors.md §0.4);
- :func:`conditional_match_frame_color`: that, mixed into ``tgt`` as much as the two images' hue-saturation
  histograms agree (an output far from its input in colour is matched less).

The deep swapper matches its swapped face to the raw crop with the conditional form; the age modifier uses
the plain one. Images are BGR uint8, same shape.
"""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.types import Frame

HS_BINS = (50, 60)  # hue × saturation histogram bins over [0, 180] × [0, 256]


def _equalize(src: Frame, tgt: Frame, size: int) -> Frame:
    """``tgt`` plus the difference of ``src`` and ``tgt`` seen at ``size`` × ``size`` (area; cubic up)."""
    h, w = tgt.shape[:2]
    small_s = cv2.resize(src.astype(np.float32), (size, size), interpolation=cv2.INTER_AREA)
    small_t = cv2.resize(tgt.astype(np.float32), (size, size), interpolation=cv2.INTER_AREA)
    diff = cv2.resize(small_s - small_t, (w, h), interpolation=cv2.INTER_CUBIC)
    return np.clip(tgt.astype(np.float32) + diff, 0, 255).astype(np.uint8)


def match_sizes(height: int) -> list[int]:
    """The three sizes, each an even number: 16, 86, 154 for 224; 16, 352, 688 for 1024."""
    return [int(round(v / 2)) * 2 for v in np.linspace(16, height, 3, endpoint=False)]


def match_frame_color(src: Frame, tgt: Frame) -> Frame:
    """``tgt`` with the low-frequency colour of ``src`` (each size's equalisation fed the last one's)."""
    out = src
    for size in match_sizes(tgt.shape[0]):
        out = _equalize(out, tgt, size)
    return out  # equalising once more at the full size gives ``out`` itself


def hs_correlation(a: Frame, b: Frame) -> float:
    """Correlation (−1..1) of the two images' hue-saturation histograms."""
    def hist(image: Frame) -> np.ndarray:
        hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)
        return cv2.calcHist([hsv], [0, 1], None, list(HS_BINS), [0, 180, 0, 256])

    return float(cv2.compareHist(hist(a), hist(b), cv2.HISTCMP_CORREL))


def conditional_match_frame_color(src: Frame, tgt: Frame) -> Frame:
    """``tgt`` mixed with :func:`match_frame_color` by f = the histogram correlation mapped from [−1, 1] to
    [0, 1] (``cv2.addWeighted``: rounded, saturated)."""
    f = float(np.interp(hs_correlation(src, tgt), [-1.0, 1.0], [0.0, 1.0]))
    matched = match_frame_color(src, tgt)
    return np.asarray(cv2.addWeighted(tgt, 1.0 - f, matched, f, 0), np.uint8)
