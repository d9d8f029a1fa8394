#!/usr/bin/env python
"""The article's workload on a lent GPU: a 1080p30 clip with one face, swapped by the inswapper twin and
restored by the GFPGAN twin, on onnxruntime's CUDA and TensorRT providers, decoded with NVDEC and encoded
with NVENC; its fps and the time 5 minutes of 1080p30 would take, next to the article's 7.5 min (RTX 4090).

Run (one command, unattended; it says what it could not do instead of stopping):
    python scripts/gpu_check.py                      # the article's rows, within --budget seconds
    python scripts/gpu_check.py --tables             # also the batch, IO-binding, live tables (gpu_tables)
    python scripts/gpu_check.py --providers cpu --width 0.0625 --seconds 0.3 --size 320x240   # CPU rehearsal

1. **Preflight**: the Python packages the engine imports, ffmpeg (and its NVENC encoder, by a one-frame
   trial), the card (nvidia-smi), onnxruntime's providers and, for CUDA and TensorRT, a tiny graph run on
   each in a child process (pipeline.models.gpu: what a session really gets, and the missing piece named).
   Each line is ``ok`` or ``could not`` with the fix; nothing is installed (a lent machine reaches no
   registry: carry wheels).
2. **Twins** of inswapper_128, arcface_w600k_r50 (the swapper's recogniser) and gfpgan_1.4 built once into
   ``--twins`` (default the facestation cache's ``twins``); a generated 1080p30 clip of ``--seconds``.
3. **Rows**, each a render in a child process (``--row PROVIDER:ENCODER``) with a time limit taken from what
   is left of ``--budget``, less a minute for each row after it (a TensorRT engine build that runs long
   cannot take the later rows' time): each usable GPU provider with NVENC (or libx264 where NVENC failed its
   trial), then the first with libx264, while time is left. A row that fails or runs out of time is a
   ``could not`` line with its last words.
4. **Projection**: fps = frames / render seconds (start-up apart); 5 minutes of 1080p30 = 9000 frames take
   start-up + 9000 / fps, printed next to the article's 7.5 min.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "scripts"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

PROVIDERS = {"tensorrt": "TensorrtExecutionProvider", "cuda": "CUDAExecutionProvider",
             "cpu": "CPUExecutionProvider"}
ARTICLE_MINUTES = 7.5  # the guiding article: 5 minutes of 1080p30, retinaface + inswapper + GFPGAN
ARTICLE_GPU = "RTX 4090"
CLIP_MINUTES, CLIP_FPS = 5.0, 30.0
ARTICLE_TWINS = ("inswapper_128", "arcface_w600k_r50", "gfpgan_1.4")
ARTICLE_SETTINGS = ("face_swapper.model=inswapper_128", "face_enhancer.model=gfpgan_1.4")
# the engine's imports (module -> the distribution to carry where it is missing)
PACKAGES = {"numpy": "numpy", "cv2": "opencv-python-headless", "onnx": "onnx",
            "onnxruntime": "onnxruntime-gpu", "pydantic": "pydantic (with pydantic-core, annotated-types, "
            "typing-inspection)", "psutil": "psutil", "platformdirs": "platformdirs"}
NVENC = "NVENC (h264_nvenc)"
ROW_FLOOR_S = 60.0  # a row is not started with less than this left of the budget


@dataclass(frozen=True)
class Check:
    """One preflight line: what was checked, whether it is there, what was found, and the fix if not."""

    name: str
    ok: bool
    found: str
    fix: str = ""

    def line(self) -> str:
        return f"ok          {self.name}: {self.found}" if self.ok else \
            f"could not   {self.name}: {self.found}" + (f" (fix: {self.fix})" if self.fix else "")


def projection(frames: int, render_s: float, startup_s: float, minutes: float = CLIP_MINUTES,
               fps: float = CLIP_FPS) -> dict[str, float]:
    """fps over the render (start-up apart) and what ``minutes`` of ``fps`` video would take: start-up +
    its frames at that rate; against the article's figure, how many times faster (> 1) or slower."""
    rate = frames / render_s if render_s > 0 else 0.0
    total = round(minutes * 60 * fps)
    seconds = startup_s + total / rate if rate > 0 else float("inf")
    return {"fps": round(rate, 2), "frames_projected": total, "projected_s": round(seconds, 1),
            "projected_min": round(seconds / 60, 2), "article_min": ARTICLE_MINUTES,
            "vs_article": round(ARTICLE_MINUTES * 60 / seconds, 2) if seconds > 0 else 0.0}


def package_checks(find: Callable[[str], Any] = importlib.util.find_spec) -> list[Check]:
    """The engine's Python packages: importable or not (``find``: importlib's, or a fake)."""
    checks = []
    for module, dist in PACKAGES.items():
        there = find(module) is not None
        checks.append(Check(f"python package {module}", there, "importable" if there else "missing",
                            "" if there else f"carry a wheel of {dist} (no registry is reachable)"))
    return checks


def provider_checks(asked: Sequence[str], built: Sequence[str], trial: Callable[[str], Any],
                    card: Any) -> tuple[list[str], list[Check]]:
    """Which of the ``asked`` providers (cuda, tensorrt, cpu) a render can use here, and a check for each:
    built into this onnxruntime (``built``: its available providers), and a tiny graph really run on it
    (``trial``: pipeline.models.gpu.trial, or a fake)."""
    usable, checks = [], []
    for name in asked:
        ort_name = PROVIDERS[name]
        if name == "cpu":
            usable.append(name)
            checks.append(Check("provider cpu", True, "onnxruntime's CPU provider"))
            continue
        if ort_name not in built:
            checks.append(Check(f"provider {name}", False, f"{ort_name} is not in this onnxruntime "
                                f"({', '.join(built) or 'no providers'})",
                                "install onnxruntime-gpu instead of onnxruntime (carry its wheel)"))
            continue
        if card is None:
            checks.append(Check(f"provider {name}", False, "no NVIDIA card (nvidia-smi lists none)"))
            continue
        got = trial(ort_name)
        if got.providers and got.providers[0] == ort_name:
            usable.append(name)
            checks.append(Check(f"provider {name}", True, f"a session ran on {ort_name}"))
        else:
            why = (got.error.strip().splitlines() or ["it fell back to the CPU"])[0][:200]
            checks.append(Check(f"provider {name}", False, f"a session asked for {ort_name} got "
                                f"{got.providers[0] if got.providers else 'nothing'}: {why}",
                                "the CUDA/cuDNN (and for TensorRT, libnvinfer) libraries of this "
                                "onnxruntime-gpu build"))
    return usable, checks


def preflight(asked: Sequence[str]) -> tuple[list[str], list[Check], dict[str, Any]]:
    """Every check on this machine: the providers a render can use (none where the engine cannot import or
    ffmpeg is missing), the checks, and what was found (for the JSON)."""
    checks = package_checks()
    facts: dict[str, Any] = {"python": sys.version.split()[0]}
    if not all(c.ok for c in checks):  # the engine imports every one
        return [], checks, facts
    from pipeline.models import gpu
    from pipeline.models.runtime import ort

    card = gpu.nvidia_card()
    checks.append(Check("NVIDIA card", card is not None, str(card) if card else "nvidia-smi lists none",
                        "" if card else "a machine with an NVIDIA GPU and its driver"))
    built = list(ort().get_available_providers())
    facts.update({"onnxruntime": ort().__version__, "built_providers": built, "card": str(card or "")})
    usable, more = provider_checks(asked, built, gpu.trial, card)
    checks += more
    video = video_checks()
    checks += video
    return (usable if all(c.ok for c in video if c.name != NVENC) else []), checks, facts


def video_checks() -> list[Check]:
    """ffmpeg found; ffprobe or PyAV to probe with; whether NVENC encodes a frame with that ffmpeg."""
    from pipeline.errors import FacestationError
    from pipeline.video import encoders, ffmpeg

    try:
        tools = ffmpeg.find_tools()
    except FacestationError as exc:
        return [Check("ffmpeg", False, str(exc), "apt-get install ffmpeg, or carry an imageio-ffmpeg wheel")]
    probe_with = tools.ffprobe or ("PyAV" if importlib.util.find_spec("av") else "")
    works, message = encoders.trial_encode(tools.ffmpeg, "h264_nvenc")
    return [Check("ffmpeg", True, f"{tools.ffmpeg} ({tools.origin})"),
            Check("ffprobe or PyAV", bool(probe_with), probe_with or "neither found",
                  "" if probe_with else "an ffmpeg with its ffprobe, or carry a wheel of av"),
            Check(NVENC, works, "one frame encoded" if works else message,
                  "" if works else "an ffmpeg built with NVENC and the NVIDIA driver's libnvidia-encode")]


def article_row(provider: str, encoder: str, clip: Path, out: Path) -> dict[str, Any]:
    """The article's workload once: ``clip`` rendered with the inswapper + GFPGAN twins (the models folder:
    FACESTATION_MODELS) on ``provider`` (the CPU as fallback, as a render asks), ``encoder``; what the
    render reports, which decoder and providers really ran, and the projection."""
    from pipeline.bench import default_face
    from pipeline.models import sessions
    from pipeline.render import render
    from pipeline.settings import Settings, apply_overrides
    from pipeline.video import encoders, ffmpeg
    from pipeline.video.probe import probe

    providers = provider if provider == "cpu" else ("tensorrt,cuda,cpu" if provider == "tensorrt" else
                                                   f"{provider},cpu")
    settings = apply_overrides(Settings(), [*ARTICLE_SETTINGS, f"execution.providers={providers}",
                                            f"output.encoder={encoder}"])
    info = probe(clip)
    accel, decode_reason = encoders.choose_hwaccel("auto", ffmpeg.ffmpeg_exe(), clip, info.codec,
                                                   info.pix_fmt)
    started = time.perf_counter()
    result = render(settings, [default_face()], clip, out)
    startup = time.perf_counter() - started - result.seconds
    return {"provider": provider, "ran_on": sessions.ran_on(), "encoder_asked": encoder,
            "encoder": result.encoder, "encoder_reason": result.encoder_reason,
            "decoder": "NVDEC" if accel else "software", "decoder_reason": decode_reason,
            "frames": result.frames, "render_s": result.seconds, "startup_s": round(startup, 2),
            "batch": result.batch_size, "placement": result.plan.get("placement"),
            "stage_ms_per_frame": {k: round(1000 * v / max(1, result.frames), 1)
                                   for k, v in result.stage_s.items()},
            "peak_rss_mb": result.peak_rss_mb, "faces_swapped": result.faces_swapped,
            **projection(result.frames, result.seconds, startup)}


def planned_rows(usable: Sequence[str], nvenc: bool) -> list[tuple[str, str]]:
    """The rows to run, most wanted first: each usable provider with NVENC (libx264 where NVENC failed its
    trial), then the first with libx264 for the encoder's share."""
    first_choice = "h264_nvenc" if nvenc else "libx264"
    rows = [(p, first_choice) for p in usable]
    if usable and nvenc:
        rows.append((usable[0], "libx264"))
    return rows


Runner = Callable[[list[str], float], tuple[int, str, str]]  # (command, timeout) -> (code, stdout, stderr)


def run_child(command: list[str], timeout: float) -> tuple[int, str, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        tail = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return 124, "", tail
    return done.returncode, done.stdout, done.stderr


def run_rows(rows: Sequence[tuple[str, str]], child_args: list[str], deadline: float,
             runner: Runner = run_child, clock: Callable[[], float] = time.monotonic
             ) -> tuple[list[dict[str, Any]], list[str]]:
    """Each row in a child process (``--row P:E`` + ``child_args``) within what is left before
    ``deadline`` (each leaves :data:`ROW_FLOOR_S` to every row after it: a TensorRT engine build that runs
    long cannot take the whole budget): the rows' reports, and a line for each row that could not be
    measured."""
    done, could_not = [], []
    for i, (provider, encoder) in enumerate(rows):
        left = deadline - clock()
        if left < ROW_FLOOR_S:
            could_not.append(f"row {provider}/{encoder}: not started, {left:.0f} s of the budget left")
            continue
        left = max(ROW_FLOOR_S, left - ROW_FLOOR_S * (len(rows) - i - 1))  # leave the later rows a start
        code, out, err = runner([sys.executable, str(Path(__file__).resolve()), "--row",
                                 f"{provider}:{encoder}", *child_args], left)
        lines = out.strip().splitlines()
        if code == 0 and lines:
            done.append(json.loads(lines[-1]))
            continue
        last = (err.strip().splitlines() or ["no output"])[-1][:300]
        what = f"ran out of its {left:.0f} s" if code == 124 else f"failed (exit {code})"
        could_not.append(f"row {provider}/{encoder}: {what}: {last}")
    return done, could_not


def article_table(rows: Sequence[dict[str, Any]]) -> str:
    """The article's comparison, one line per row."""
    lines = [f"| provider (ran on) | decode | encode | frames | fps | start-up s | 5 min of 1080p30 | "
             f"article ({ARTICLE_GPU}) | vs article |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        got = ", ".join(sorted(set(r.get("ran_on", {}).values()))) or "?"
        lines.append(f"| {r['provider']} ({got}) | {r['decoder']} | {r['encoder']} | {r['frames']} | "
                     f"{r['fps']} | {r['startup_s']} | {r['projected_min']} min | {r['article_min']} min | "
                     f"{r['vs_article']}× |")
    return "\n".join(lines)


def _size(text: str) -> tuple[int, int]:
    w, _, h = text.partition("x")
    if not (w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not WxH (e.g. 1920x1080)")
    return int(w), int(h)


def _providers(text: str) -> list[str]:
    names = [p for p in text.split(",") if p]
    if not names or any(p not in PROVIDERS for p in names):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma list of {', '.join(PROVIDERS)}")
    return names


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from gpu_tables import live_sizes

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--providers", type=_providers, default="cuda,tensorrt",
                        help="comma list of cuda, tensorrt, cpu")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the rendered clip")
    parser.add_argument("--size", type=_size, default="1920x1080", help="clip size WxH")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for the whole check")
    parser.add_argument("--twins", metavar="DIR", help="where the twins are built (default: the cache)")
    parser.add_argument("--width", type=float, default=1.0, help="channel scale of the twins (1 = full size)")
    parser.add_argument("--row", metavar="PROVIDER:ENCODER", help=argparse.SUPPRESS)  # one row (a child)
    parser.add_argument("--clip", help=argparse.SUPPRESS)
    parser.add_argument("--tables", action="store_true", help="also the batch, IO-binding and live tables")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--items", type=int, default=64, help="items timed per batch size (--tables)")
    parser.add_argument("--runs", type=int, default=8, help="runs timed for IO binding (--tables)")
    parser.add_argument("--only", nargs="+", metavar="TWIN", help="twins of the tables (--tables)")
    parser.add_argument("--live-sizes", type=live_sizes, default="1280x720,1920x1080",
                        help="camera sizes of the live runs (--tables), comma list of WxH (\"\": none)")
    parser.add_argument("--live-seconds", type=float, default=20.0, help="length of each live run (--tables)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.budget <= 0 or not 0 < args.width <= 1:
        parser.error("--seconds and --budget must be positive, --width in (0, 1]")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    args = parse(argv)
    if args.row:  # a child: one row, its report as the last line
        provider, _, encoder = args.row.partition(":")
        os.environ["FACESTATION_MODELS"] = str(args.twins)
        clip = Path(args.clip)
        print(json.dumps(article_row(provider, encoder, clip, clip.with_suffix(".out.mp4"))))
        return 0
    usable, checks, facts = preflight(args.providers)
    print("preflight:")
    for check in checks:
        print(f"  {check.line()}")
    report: dict[str, Any] = {"preflight": [asdict(c) for c in checks], "facts": facts, "rows": [],
                              "could_not": [c.line() for c in checks if not c.ok]}
    if usable:
        with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
            report.update(_measure(args, usable, checks, Path(tmp), started))
    else:
        report["could_not"].append(f"no row measured: none of {', '.join(args.providers)} can render here "
                                   "(the lines above say what is missing)")
    for line in report["could_not"]:
        print(f"facestation gpu_check: {line}", file=sys.stderr)
    if report["rows"]:
        print(article_table(report["rows"]))
    print(json.dumps(report, indent=2))
    return 0 if report["rows"] else 1


def _measure(args: argparse.Namespace, usable: list[str], checks: list[Check], work: Path,
             started: float) -> dict[str, Any]:
    """Twins, clip, the article's rows (and the tables): what :func:`main` reports beyond the preflight."""
    import gpu_tables

    from pipeline.bench import default_face, make_test_clip
    from pipeline.paths import cache_dir

    default = cache_dir() / "twins" if args.width == 1.0 else work / "twins"
    folder = Path(args.twins) if args.twins else default
    gpu_tables.build_twins(ARTICLE_TWINS, folder, args.width)
    clip = make_test_clip(work / "clip.mp4", default_face(), seconds=args.seconds, size=args.size)
    nvenc = any(c.ok for c in checks if c.name == NVENC)
    child = ["--twins", str(folder), "--clip", str(clip)]
    rows, could_not = run_rows(planned_rows(usable, nvenc), child, started + args.budget)
    out: dict[str, Any] = {"rows": rows, "could_not": [c.line() for c in checks if not c.ok] + could_not}
    for row in rows:
        off = {m: p for m, p in row["ran_on"].items() if row["provider"] != "cpu" and p == PROVIDERS["cpu"]}
        if off:
            out["could_not"].append(f"row {row['provider']}/{row['encoder_asked']}: "
                                    f"{', '.join(off)} ran on the CPU, not {row['provider']}")
    if args.tables:
        out["tables"] = gpu_tables.run(args, work, facts_device())
        print(gpu_tables.table(out["tables"]))
    return out


def facts_device() -> str:
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
        return listed.strip() or "no NVIDIA GPU listed"
    except OSError:
        return "no nvidia-smi (CPU only)"


if __name__ == "__main__":
    sys.exit(main())
