"""One chain for every way in: a video render (threads, batches, blending into its own decoded frames), a
still, the preview and a live step make the same pixels of the same frame. With the defaults, with an
enhancer after the swap, and with an expression restorer after a frame processor: the restorer reads the
frame as decoded, which the render's in-place blend would have changed (the chain keeps a copy only then).

A static lossless clip of a real photo stands for a video whose every frame is that photo, so each way sees
exactly the same frame; the render detects every frame in full, untracked (following a face from frame to
frame is a video's own step, tested in test_track.py and test_keyframes.py), so each way places the face
alike. These tests need nothing but the working tree (no other commit's code)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline import preview
from pipeline.chain import Chain
from pipeline.image import read_image
from pipeline.live.step import ChainStep
from pipeline.process import FaceProcessor
from pipeline.render import Render
from pipeline.settings import Settings, apply_overrides
from pipeline.still import swap_image
from pipeline.types import Frame
from pipeline.video import ffmpeg
from pipeline.video.decode import read_frames
from tests import photos
from tests.surrogates import install_live_portrait, install_surrogate

FPS = 10
CASES: dict[str, list[str]] = {
    "defaults": [],
    "enhancer after the swap": ["face_enhancer.model=gfpgan_1.4"],
    "restorer after a frame processor": ['processors.order=["face_swapper","frame_colorizer",'
                                         '"expression_restorer"]', "face_swapper.model=inswapper_128"],
}


class Frames:
    """A render's sink that keeps the frames."""

    encoder = asked = "none"
    encoder_reason = "kept in memory"

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def write(self, frame: Frame) -> None:
        self.frames.append(frame.copy())

    def close(self) -> Path:
        return Path("frames")

    def abort(self) -> None:
        pass


@pytest.fixture
def still(tmp_path: Path) -> Path:
    return photos.astronaut_path(tmp_path)


@pytest.fixture
def clip(tmp_path: Path, still: Path) -> Path:
    """Four frames of the photo, lossless (FFV1, 8-bit BGR): each decodes to the photo's own pixels."""
    out = tmp_path / "static.mkv"
    command = [ffmpeg.ffmpeg_exe(), "-v", "error", "-y", "-loop", "1", "-i", str(still), "-frames:v", "4",
               "-r", str(FPS), "-c:v", "ffv1", "-pix_fmt", "bgr0", str(out)]
    subprocess.run(command, check=True)
    return out


def _models() -> None:
    install_surrogate("gfpgan_1.4")
    install_surrogate("ddcolor")
    install_surrogate("inswapper_128", constant=(0.4, 0.5, 0.6))  # a flat swap: the crop loses its texture
    install_surrogate("arcface_w600k_r50")
    install_live_portrait(follow=0.5)  # the expression follows the crop's texture: decoded and swapped differ


@pytest.mark.parametrize("case", list(CASES))
def test_a_render_a_still_the_preview_and_live_make_the_same_frame(tmp_path: Path, still: Path, clip: Path,
                                                                    case: str) -> None:
    _models()
    settings = apply_overrides(Settings(), CASES[case])
    sources = [photos.grace_hopper_path()]
    picture = read_image(still).bgr
    assert all(np.array_equal(f, picture) for f in read_frames(clip))  # the frames are the photo

    kept = Frames()
    untracked = apply_overrides(settings, ["tracker.enabled=false", "detector.interval=1"])
    Render(untracked, sources, clip, sink=lambda w, h: kept).run()
    swap_image(settings, sources, still, tmp_path / "still.png")
    made = read_image(tmp_path / "still.png").bgr
    assert np.any(made != picture)  # something was done
    shown = preview.preview(settings, sources, still)[:, :, ::-1]
    preview.clear()
    live = ChainStep(settings, sources, FPS)(picture.copy())
    assert len(kept.frames) == 4
    for frame in kept.frames:
        assert np.array_equal(frame, made)
    assert np.array_equal(shown, made) and np.array_equal(live, made)


def test_the_render_copies_a_decoded_frame_only_for_a_restorer_after_a_blend() -> None:
    """The frame as decoded is kept by reference; a copy is made only where a blend writes into it in place
    and an expression restorer comes after that blend."""
    _models()
    sources = [photos.grace_hopper_path()]
    picture = photos.astronaut()
    for order, copied in (('["face_swapper","expression_restorer"]', False),
                          ('["face_swapper","frame_colorizer","expression_restorer"]', True),
                          ('["face_swapper","frame_colorizer"]', False)):
        settings = apply_overrides(Settings(), [f"processors.order={order}"])
        chain = Chain(FaceProcessor(settings, sources), inplace=True)
        assert chain.keep_decoded is copied
        frame = picture.copy()
        work = chain.one(frame)
        if copied:  # what the restorer read: the frame as decoded, before the blend wrote into it
            assert work.decoded is not frame and np.array_equal(work.decoded, picture)
        else:
            assert work.decoded is frame
