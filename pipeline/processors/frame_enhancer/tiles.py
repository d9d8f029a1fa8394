"""Tiling of a whole frame for an upscaler, as FaceFusion cuts and joins it (docs/processors.md §1.3).

A model takes tiles of S×S input pixels. The frame is padded with black: P + O on the top and left, and on
the bottom and right up to a whole number of cores (a core is the tile less its overlap O on each side:
``S − 2O`` pixels). Tiles are cut every core, row by row, each with its overlap around it; the model's output
tile loses ``O·scale`` on every side (the overlaps are discarded, never feathered), and the cores, side by
side, less ``P·scale`` on the top and left, are the frame at ``scale`` × its size.

:class:`TileGrid` is that arithmetic for one frame size: which tiles there are, what each one cuts from the
padded frame and which part of the output its core covers. Nothing here runs a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pipeline.types import Frame


@dataclass(frozen=True)
class Placement:
    """Where tile ``index``'s core goes: output rows/columns ``[y0, y1) × [x0, x1)`` (clipped to the frame
    at ``scale`` × its size), taken from the model's output tile at ``(ty, tx)``."""

    index: int
    y0: int
    y1: int
    x0: int
    x1: int
    ty: int
    tx: int


@dataclass(frozen=True)
class TileGrid:
    height: int  # the frame's, in input pixels
    width: int
    size: int  # S: the model's tile side
    pad: int  # P
    overlap: int  # O

    def __post_init__(self) -> None:
        if self.core <= 0 or self.pad < 0 or self.overlap < 0:
            raise ValueError(f"tile {self.size} with overlap {self.overlap} leaves no core")
        if self.height <= 0 or self.width <= 0:
            raise ValueError(f"an empty frame ({self.width}×{self.height}) has no tiles")

    @property
    def core(self) -> int:
        """What each tile contributes: its side less the overlap on both sides."""
        return self.size - 2 * self.overlap

    @property
    def top(self) -> int:
        return self.pad + self.overlap

    left = top

    @property
    def bottom(self) -> int:
        return self.pad + self.overlap + self.core - (self.height + 2 * self.pad) % self.core

    @property
    def right(self) -> int:
        return self.pad + self.overlap + self.core - (self.width + 2 * self.pad) % self.core

    @property
    def padded_shape(self) -> tuple[int, int]:
        return self.height + self.top + self.bottom, self.width + self.left + self.right

    @cached_property
    def rows(self) -> tuple[int, ...]:
        """The padded frame's row where each row of tiles' core starts."""
        return tuple(range(self.overlap, self.padded_shape[0] - self.overlap, self.core))

    @cached_property
    def cols(self) -> tuple[int, ...]:
        return tuple(range(self.overlap, self.padded_shape[1] - self.overlap, self.core))

    @property
    def count(self) -> int:
        return len(self.rows) * len(self.cols)

    @property
    def n_cols(self) -> int:
        """Tiles per row of the assembled output (FaceFusion: the padded width in cores, at most all)."""
        return min(self.padded_shape[1] // self.core, self.count)

    def padded(self, frame: Frame) -> Frame:
        """``frame`` with its black border (uint8, ``padded_shape``)."""
        if frame.shape[:2] != (self.height, self.width):
            raise ValueError(f"a {frame.shape[1]}×{frame.shape[0]} frame on a grid of "
                             f"{self.width}×{self.height}")
        return np.pad(frame, ((self.top, self.bottom), (self.left, self.right), (0, 0)))

    def cut(self, padded: Frame, index: int) -> Frame:
        """Tile ``index`` (row-major) of the padded frame: S×S, its core with the overlap around it."""
        r, c = self.rows[index // len(self.cols)], self.cols[index % len(self.cols)]
        o, core = self.overlap, self.core
        return padded[r - o:r + o + core, c - o:c + o + core]

    def place(self, index: int, scale: int) -> Placement | None:
        """Where tile ``index``'s core lands in the output at ``scale`` (None: wholly in the padding)."""
        step = self.core * scale
        row, col = divmod(index, self.n_cols)
        y0, x0 = row * step - self.pad * scale, col * step - self.pad * scale
        cy0, cx0 = max(y0, 0), max(x0, 0)
        cy1, cx1 = min(y0 + step, self.height * scale), min(x0 + step, self.width * scale)
        if cy1 <= cy0 or cx1 <= cx0:
            return None
        skip = self.overlap * scale
        return Placement(index, cy0, cy1, cx0, cx1, skip + cy0 - y0, skip + cx0 - x0)
