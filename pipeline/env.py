"""Every ``FACESTATION_*`` environment variable, declared once and parsed by one rule.

A variable is a :class:`Var`: its name, what it accepts, its default, a one-line description, and whether
the product reads it or only the tests and set-up do. ``VAR.get()`` reads the environment at that moment
(tests change it per test, so nothing is cached); unset or empty gives the default; a value that does not
parse raises :class:`BadEnvironment`, one line naming the variable, what it accepts and what it got (CLI exit
2, the web UI refuses to start). ``README.md`` lists exactly these (``tests/test_env.py`` compares them).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pipeline.errors import UserError

T = TypeVar("T")
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class BadEnvironment(UserError):
    """An environment variable holds a value its declaration refuses."""


class Refused(ValueError):
    """A value refused for a reason worth saying (``that is a file``)."""


@dataclass(frozen=True)
class Var(Generic[T]):
    """One variable. Subclasses say what a value looks like (``accepts``) and turn one into ``T`` (``parse``,
    which raises ValueError for a value it refuses, or :class:`Refused` with the reason)."""

    name: str
    default: T
    help: str
    shown_default: str = ""  # the default in words, where the value alone says little (README)
    for_tests: bool = False  # read by the tests or scripts/setup.sh only

    @property
    def accepts(self) -> str:
        raise NotImplementedError

    def parse(self, raw: str) -> T:
        raise NotImplementedError

    def get(self) -> T:
        raw = os.environ.get(self.name, "").strip()
        if not raw:
            return self.default
        try:
            return self.parse(raw)
        except ValueError as exc:
            why = f": {exc}" if isinstance(exc, Refused) else ""
            raise BadEnvironment(f"{self.name} must be {self.accepts} (got {raw!r}{why})") from None

    @contextlib.contextmanager
    def set_to(self, value: str | os.PathLike[str]) -> Iterator[None]:
        """Within the block the variable is ``value`` (for this process and its children); restored after."""
        saved = os.environ.get(self.name)
        os.environ[self.name] = os.fspath(value)
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop(self.name, None)
            else:
                os.environ[self.name] = saved


@dataclass(frozen=True)
class Whole(Var[int]):
    minimum: int = 1

    @property
    def accepts(self) -> str:
        return f"a whole number ≥ {self.minimum}"

    def parse(self, raw: str) -> int:
        value = int(raw)
        if value < self.minimum:
            raise ValueError
        return value


@dataclass(frozen=True)
class Positive(Var[float]):
    unit: str = ""  # "seconds": "a number of seconds > 0"
    minimum: float = 0.0  # above 0: the least value that works ("a number of seconds ≥ 5")

    @property
    def accepts(self) -> str:
        bound = f"≥ {self.minimum:g}" if self.minimum > 0 else "> 0"
        return f"a number of {self.unit} {bound}" if self.unit else f"a number {bound}"

    def parse(self, raw: str) -> float:
        value = float(raw)
        if not (math.isfinite(value) and value > 0 and value >= self.minimum):
            raise ValueError
        return value


@dataclass(frozen=True)
class Flag(Var[bool]):
    @property
    def accepts(self) -> str:
        return f"{'/'.join(TRUE)} or {'/'.join(FALSE)}"

    def parse(self, raw: str) -> bool:
        if raw.lower() in TRUE:
            return True
        if raw.lower() in FALSE:
            return False
        raise ValueError


@dataclass(frozen=True)
class Text(Var[str]):
    @property
    def accepts(self) -> str:
        return "any text"

    def parse(self, raw: str) -> str:
        return raw


@dataclass(frozen=True)
class Choice(Var[str | None]):
    choices: tuple[str, ...] = ()

    @property
    def accepts(self) -> str:
        return " or ".join(self.choices)

    def parse(self, raw: str) -> str:
        if raw not in self.choices:
            raise ValueError
        return raw


@dataclass(frozen=True)
class File(Var[Path | None]):
    """A path (``~`` expanded), whatever is there."""

    @property
    def accepts(self) -> str:
        return "a path"

    def parse(self, raw: str) -> Path:
        return Path(raw).expanduser()


@dataclass(frozen=True)
class Folder(Var[Path | None]):
    """A folder's path (``~`` expanded); it need not exist yet (it is created where it is used)."""

    @property
    def accepts(self) -> str:
        return "a folder"

    def parse(self, raw: str) -> Path:
        path = Path(raw).expanduser()
        if path.exists() and not path.is_dir():
            raise Refused("that is a file")
        return path


@dataclass(frozen=True)
class Executable(Var[str | None]):
    """A program: a path to an executable file, or a name found on PATH; ``get`` gives its path."""

    @property
    def accepts(self) -> str:
        return "an executable: a path, or a name on PATH"

    def parse(self, raw: str) -> str:
        found = shutil.which(raw) or (raw if os.access(raw, os.X_OK) and not os.path.isdir(raw) else None)
        if found is None:
            raise ValueError
        return found


@dataclass(frozen=True)
class PortRange(Var[tuple[int, int]]):
    @property
    def accepts(self) -> str:
        return "a port or a range FIRST-LAST, e.g. 7900-7949"

    def parse(self, raw: str) -> tuple[int, int]:
        first, _, last = raw.partition("-")
        low, high = int(first), int(last or first)
        if not 1 <= low <= high <= 65535:
            raise ValueError
        return low, high


# where files live (pipeline/paths.py, pipeline/video/ffmpeg.py)
MODELS = Folder("FACESTATION_MODELS", None, "installed model weights",
                "`models/` in the data folder (the checkout's `models/` while it holds weights)")
DATA = Folder("FACESTATION_DATA", None, "user data: the queue database, user presets, outputs, the "
              "render plan's measured threads (`plans.json`)",
              "the user data folder (`~/.local/share/facestation`)")
CACHE = Folder("FACESTATION_CACHE", None, "derived files that can be rebuilt: converted built-in models, "
               "TensorRT engines", "the user cache folder (`~/.cache/facestation`)")
PRESETS = Folder("FACESTATION_PRESETS", None, "the user's presets", "`presets/` in the data folder")
OUTPUTS = Folder("FACESTATION_OUTPUTS", None, "where outputs are written unless a job names its own",
                 "`outputs/` in the data folder")
FFMPEG = Executable("FACESTATION_FFMPEG", None, "the ffmpeg to run (an ffprobe beside it is used too)",
                    "`ffmpeg` on PATH, else imageio-ffmpeg's")
# limits and the queue (pipeline/image.py, pipeline/jobs/)
MAX_PIXELS = Whole("FACESTATION_MAX_PIXELS", 16384 * 16384 // 2,
                   "the largest still image read, in pixels; a larger one is refused before decoding",
                   "`134217728` (about 134 MP)")
# a worker's heartbeat comes every quarter of it (pipeline/jobs/worker.py): below the minimum, a busy live
# worker would look dead and two live workers would take each other's jobs
QUEUE_STALE_AFTER = Positive("FACESTATION_QUEUE_STALE_AFTER", 120.0,
                             "a running job whose heartbeat is this old is taken over by another worker "
                             "(workers send one every quarter of it)", unit="seconds", minimum=5.0)
QUEUE_MAX_ATTEMPTS = Whole("FACESTATION_QUEUE_MAX_ATTEMPTS", 3,
                           "a job fails after this many worker deaths without progress, or this many errors")
QUEUE_CHECKPOINT_SECONDS = Positive("FACESTATION_QUEUE_CHECKPOINT_SECONDS", 3.0,
                                    "wall time between two checkpoints of a video job (at least 0.05)",
                                    unit="seconds")
TOOL_TIMEOUT = Positive("FACESTATION_TOOL_TIMEOUT", 60.0, "how long a helper program (ffprobe, ffmpeg's "
                        "listings, a trial encode) may take before it is stopped with one line",
                        unit="seconds")
DEVICE = Text("FACESTATION_DEVICE", "default", "the device part of a worker's id, `host/device`")
# the render farm (pipeline/jobs/farm.py)
FARM_SEGMENT_SECONDS = Positive("FACESTATION_FARM_SEGMENT_SECONDS", 3.0,
                                "seconds of video per farm task (at least 0.05)", unit="seconds")
FARM_OBJECT_STORE_MB = Whole("FACESTATION_FARM_OBJECT_STORE_MB", 1024,
                             "Ray's object store, in MiB, when the farm starts its own runtime")
FARM_LOGS = Flag("FACESTATION_FARM_LOGS", False, "Ray workers' logs are printed by the driver")
FARM_SHIP = Flag("FACESTATION_FARM_SHIP", False,
                 "a segment comes back through Ray's object store even when its node sees the work folder")
# live mode in the browser (pipeline/live/rtc_peer.py)
LIVE_CODEC = Choice("FACESTATION_LIVE_CODEC", None, "the video codec a browser's live run prefers, both "
                    "ways, where the browser offers it", "`vp8`", choices=("vp8", "h264"))
# the command line (cli/main.py)
DEBUG = Flag("FACESTATION_DEBUG", False, "an internal error shows its traceback")

# for tests and set-up
GPU_TESTS = Flag("FACESTATION_GPU_TESTS", False, "run the tests marked `gpu` (needs an NVIDIA GPU)",
                 for_tests=True)
TEST_TIMEOUT_SCALE = Positive("FACESTATION_TEST_TIMEOUT_SCALE", 1.0,
                              "every wait in the tests is multiplied by this (slow machines)", for_tests=True)
TEST_HOLD = Folder("FACESTATION_TEST_HOLD", None, "a worker holds each job at the segment counts this folder "
                   "allows (pipeline/jobs/hold.py; the queue's kill tests)", "no hold", for_tests=True)
TEST_HOLD_FRAME = Text("FACESTATION_TEST_HOLD_FRAME", "",
                       "`FRAME:FLAGFILE`: a render waits at that frame, writes the flag file, goes on once "
                       "it is removed (pipeline/progress.py)", "no hold", for_tests=True)
TEST_LIVE_FAIL_FRAME = Whole("FACESTATION_TEST_LIVE_FAIL_FRAME", 0,
                             "a live run's chain fails at this frame (pipeline/live/step.py; the live error "
                             "tests)", "no failure", for_tests=True)
TEST_DATA = Folder("FACESTATION_TEST_DATA", None, "downloads the tests keep between runs (test photos)",
                   "`~/.cache/facestation-tests`", for_tests=True)
TEST_PORTS = PortRange("FACESTATION_TEST_PORTS", (0, 0), "the ports the browser tests may serve on",
                       "any free port", for_tests=True)
CHROMIUM = File("FACESTATION_CHROMIUM", Path("/usr/bin/chromium"), "the browser the browser tests drive",
                for_tests=True)
TWINS = Folder("FACESTATION_TWINS", None, "where the model twins of tests/test_twins.py are built and kept",
               "`twins/` in the user cache folder", for_tests=True)
EXTRA = Choice("FACESTATION_EXTRA", None, "the onnxruntime extra scripts/setup.sh installs",
               "`gpu` when `nvidia-smi` sees a GPU, else `cpu`", for_tests=True, choices=("cpu", "gpu"))

DECLARED: tuple[Var[Any], ...] = tuple(v for v in globals().values() if isinstance(v, Var))  # in this order


def check() -> None:
    """Read every variable the product uses: BadEnvironment for the first bad one (the web UI's start-up)."""
    for var in DECLARED:
        if not var.for_tests:
            var.get()
