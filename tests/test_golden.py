"""Behaviour unchanged by the processor rewrite: a clip made like the bench clip and a still image, swapped
with default settings (and with a neural swapper + enhancer), give bit-identical pixels under the working
tree and under the code of the rewrite's starting commit.

The starting commit's ``pipeline/`` is taken from git (``git archive``), so the comparison is made on this
machine, in this run: no checked-in hash that another CPU's floating point could miss. Both runs happen in
child processes (tests/golden_run.py) with the same models folder, the same inputs and the same
environment."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import photos
from tests.surrogates import install_surrogate

ROOT = Path(__file__).resolve().parents[1]
START = "1a4bd17"  # main before issue 24 (processors, model plan, one chain)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def starting_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The starting commit's ``pipeline/`` package, unpacked into a temporary folder."""
    try:
        data = subprocess.run(["git", "-C", str(ROOT), "archive", START, "pipeline"], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"the starting commit {START} is needed from git history (a full clone): {exc}")
    folder = tmp_path_factory.mktemp("start")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pipeline.bench import make_test_clip

    folder = tmp_path_factory.mktemp("golden")
    face = photos.grace_hopper_path()
    clip = make_test_clip(folder / "clip.mp4", face, seconds=2.0, size=(640, 360), fps=15)
    still = folder / "still.png"
    import cv2

    cv2.imwrite(str(still), photos.astronaut())
    return {"face": face, "clip": clip, "still": still}


def _run(code: Path, inputs: dict[str, Path], work: Path, overrides: dict[str, str]) -> dict[str, object]:
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    args = [sys.executable, str(ROOT / "tests" / "golden_run.py"), str(inputs["clip"]), str(inputs["face"]),
            str(inputs["still"]), str(work), json.dumps(overrides)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


CASES = {
    "defaults": {},
    "inswapper+gfpgan": {"swapper.model": "inswapper_128", "enhancer.model": "gfpgan_1.4"},
}


@pytest.mark.parametrize("case", list(CASES))
def test_outputs_are_bit_identical_to_the_starting_commit(case: str, starting_tree: Path,
                                                           inputs: dict[str, Path], tmp_path: Path) -> None:
    overrides = CASES[case]
    if "swapper.model" in overrides:
        for name in ("inswapper_128", "arcface_w600k_r50", "gfpgan_1.4"):
            install_surrogate(name)
    before = _run(starting_tree, inputs, tmp_path / "start", overrides)
    after = _run(ROOT, inputs, tmp_path / "now", overrides)
    assert len(before["video"]) == 30  # type: ignore[arg-type]
    assert len(set(before["video"])) > 20  # type: ignore[arg-type]  # the frames move: a real comparison
    changed = [i for i, (a, b) in enumerate(zip(before["video"], after["video"], strict=True))  # type: ignore[call-overload]
               if a != b]
    assert not changed, f"frames {changed} differ from {START}'s"
    assert after["still"] == before["still"]
