"""The frame upscalers of the catalog (FaceFusion's frame enhancer models, docs/processors.md §1).

Each file takes a tile 1×3×S×S, RGB in [0, 1], and returns it ``scale`` × larger. A frame is cut into tiles as
:mod:`.tiles` says (zero padding, overlaps discarded); the tiles of all the frames of a batch go through the
model in groups of a fixed number (:func:`group_size`: as many as make about :data:`GROUP_OUTPUT_PIXELS` of
output), never all the tiles of a big frame at once, and each group's cores are written straight into the
output frames. The blend (§1.4) is ``addWeighted(resize_linear(frame), 1 − b,
enhanced, b)`` with b = blend/100, done core by core on the same part of the linearly resized frame (a
resize of that part with one pixel of margin is exactly the whole frame's resize there).

The input is fed in the type the file declares (an fp16 export that takes float16 gets float16;
FaceFusion feeds float32 to all of them), and the output is rounded to uint8 (FaceFusion truncates: at most
one level darker).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import cv2
import numpy as np
import numpy.typing as npt

from pipeline.errors import UserError
from pipeline.models import catalog
from pipeline.models.runner import ModelRunner, denormalise, normalise
from pipeline.processors.frame_enhancer.tiles import Placement, TileGrid
from pipeline.types import Frame, Provider


class FrameEnhancer(Protocol):
    """An upscaler of whole frames (the frame enhancer's model families)."""

    name: str
    scale: int  # how many times larger its frames come out

    def enhance(self, frames: Sequence[Frame], blend: int = 100) -> list[Frame]:
        """BGR uint8 frames (any sizes) -> new frames ``scale`` × as large; ``blend`` 0..100 mixes the frame
        resized linearly (0) with the model's output (100)."""
        ...


# output pixels of one model run (its float32 output: ~50 MB); at least one tile a run
GROUP_OUTPUT_PIXELS = 16 * 512 * 512


def group_size(tile: int, scale: int, budget: int = GROUP_OUTPUT_PIXELS) -> int:
    """Tiles per model run: as many as fit ``budget`` output pixels, at least one."""
    return max(1, budget // (tile * scale) ** 2)


def _tiles(frames: Sequence[Frame], grids: Sequence[TileGrid]) -> Iterator[tuple[int, int, Frame]]:
    """(frame number in the batch, tile index, tile) of every tile of every frame, in order; one padded
    frame held at a time."""
    for k, (frame, grid) in enumerate(zip(frames, grids, strict=True)):
        padded = grid.padded(frame)
        for i in range(grid.count):
            yield k, i, grid.cut(padded, i)


def resized_part(frame: Frame, scale: int, p: Placement) -> Frame:
    """``frame`` resized linearly to ``scale`` × its size, only at ``p``'s output rows and columns (``p`` at
    multiples of ``scale``)."""
    h, w = frame.shape[:2]
    y0, y1, x0, x1 = p.y0 // scale, -(-p.y1 // scale), p.x0 // scale, -(-p.x1 // scale)
    a, b, c, d = max(y0 - 1, 0), min(y1 + 1, h), max(x0 - 1, 0), min(x1 + 1, w)
    part = np.asarray(cv2.resize(frame[a:b, c:d], ((d - c) * scale, (b - a) * scale),
                                 interpolation=cv2.INTER_LINEAR), np.uint8)
    return part[p.y0 - a * scale:p.y1 - a * scale, p.x0 - c * scale:p.x1 - c * scale]


class TiledUpscaler:
    """A :class:`FrameEnhancer` for every frame enhancer of the catalog."""

    def __init__(self, name: str, providers: Sequence[Provider] = ("cpu",), threads: int = 0,
                 group_pixels: int = GROUP_OUTPUT_PIXELS) -> None:
        entry = catalog.get(name)
        if entry.role != "frame_enhancer" or entry.tile is None:
            valid = [e.name for e in catalog.by_role("frame_enhancer")]
            raise UserError(f"'{name}' is not a frame enhancer (choose from: {', '.join(valid)})")
        self.name, self.entry = name, entry
        self.scale = entry.scale
        self.size, self.pad, self.overlap = entry.tile
        self.group = group_size(self.size, self.scale, group_pixels)
        self.runner = ModelRunner(name, "frame_enhancer", providers, threads)

    def grid(self, height: int, width: int) -> TileGrid:
        return TileGrid(height, width, self.size, self.pad, self.overlap)

    def upscale(self, tiles: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """(N, S, S, 3) BGR tiles -> (N, S·scale, S·scale, 3) BGR, in one run of the model (or the chunks of
        a fixed batch)."""
        return denormalise(self.runner.run(normalise(tiles, self.entry))[0], self.entry)

    def enhance(self, frames: Sequence[Frame], blend: int = 100) -> list[Frame]:
        if not 0 <= blend <= 100:
            raise ValueError(f"frame_enhancer.blend must be between 0 and 100, got {blend}")
        s = self.scale
        if blend == 0:  # the model's part is nothing: the frames resized
            return [np.asarray(cv2.resize(f, (f.shape[1] * s, f.shape[0] * s),
                                          interpolation=cv2.INTER_LINEAR), np.uint8) for f in frames]
        grids = [self.grid(*f.shape[:2]) for f in frames]
        outs = [np.empty((f.shape[0] * s, f.shape[1] * s, 3), np.uint8) for f in frames]
        pending: list[tuple[int, int, Frame]] = []
        for item in _tiles(frames, grids):
            pending.append(item)
            if len(pending) == self.group:
                self._write(pending, frames, grids, outs, blend)
                pending = []
        if pending:
            self._write(pending, frames, grids, outs, blend)
        return outs

    def _write(self, group: list[tuple[int, int, Frame]], frames: Sequence[Frame], grids: Sequence[TileGrid],
               outs: list[Frame], blend: int) -> None:
        """One run of the model on ``group``; each tile's core into its output frame, blended."""
        done = self.upscale(np.stack([tile for _, _, tile in group]))
        b = blend / 100.0
        for (k, i, _), tile in zip(group, done, strict=True):
            p = grids[k].place(i, self.scale)
            if p is None:
                continue
            core = tile[p.ty:p.ty + p.y1 - p.y0, p.tx:p.tx + p.x1 - p.x0]
            target = outs[k][p.y0:p.y1, p.x0:p.x1]
            if blend == 100:
                target[:] = core
            else:
                target[:] = cv2.addWeighted(resized_part(frames[k], self.scale, p), 1.0 - b, core, b, 0.0)
