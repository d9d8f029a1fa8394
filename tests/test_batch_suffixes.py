"""A folder batch takes every video that ``swap`` takes (one suffix set, pipeline/media.py): .ts, .mts,
.m2ts, .flv and .3gp were skipped without a word."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli.main import main
from pipeline.jobs.service import open_store
from tests import photos
from tests.videos import make_clip

REMUXED = (".ts", ".mts", ".m2ts", ".flv", ".3gp")


def test_a_folder_batch_queues_every_video_swap_takes(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "targets"
    folder.mkdir()
    clip = make_clip(folder / "a.mp4", seconds=0.3, size=(160, 120), fps=30, audio=False)
    for suffix in REMUXED:
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(clip), "-c", "copy",
                        str(folder / f"a{suffix}")], check=True)
    face = str(photos.grace_hopper_path())
    out = tmp_path / "out"
    out.mkdir()
    assert main(["queue", "add", "--source", face, "--target", str(folder), "--output", str(out), "--name",
                 "{target}-{n}"]) == 0, capsys.readouterr().err
    queued = sorted(Path(job.target).suffix for job in open_store().list())
    assert queued == sorted([".mp4", *REMUXED]), queued
