"""The twins (catalog entry, targets, sources), building them into a folder once, checking and reporting."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import twins
from pipeline.models import catalog, fp16
from pipeline.models.store import sha256_of
from pipeline.models.validate import check_io, session_io
from twins import processors as processor_twins
from twins.faces import build_arcface, build_gfpgan, build_inswapper, build_scrfd, gfpgan_reference_gmac
from twins.graph import MANIFEST, Net, Shapes, count_macs, file_size, write_model
from twins.processors import ENHANCER_TILE, build_real_esrgan_x2, build_real_esrgan_x4, build_wav2lip

# --- the twins -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Twin:
    name: str
    entry: str  # catalog entry whose I/O and file name the twin takes
    build: Callable[[float], Net]
    run_dims: Shapes  # input shapes of one inference (per face / frame)
    cost_dims: Mapping[str, Shapes]  # label -> input shapes the cost is read at
    target_label: str  # which cost_dims the FLOPs target is for
    target_gmac: float
    target_params: float
    real_size: float  # bytes of the real file
    tolerance: tuple[float, float]  # (parameters / size, FLOPs), relative
    sources: str
    test_width: float = 0.125
    aliases: tuple[str, ...] = field(default=())
    half_of: str | None = None  # the twin whose file this one is, converted to fp16 (models.fp16)


_FACE_128 = {"target": (1, 3, 128, 128), "source": (1, 512)}
_FACE_112 = {"input.1": (1, 3, 112, 112)}
_FACE_512 = {"input": (1, 3, 512, 512)}
_FRAME_640 = {"input.1": (1, 3, 640, 640)}
_TILE_256 = {"input": (1, 3, ENHANCER_TILE, ENHANCER_TILE)}
_MOUTH_96 = {"source": (1, 1, 80, 16), "target": (1, 6, 96, 96)}
_X4, _X2, _W2L = (processor_twins.rrdbnet_reference(4, ENHANCER_TILE),
                  processor_twins.rrdbnet_reference(2, ENHANCER_TILE), processor_twins.wav2lip_reference())
TWINS: dict[str, Twin] = {t.name: t for t in (
    Twin(name="inswapper_128", entry="inswapper_128", build=build_inswapper, run_dims=_FACE_128,
         cost_dims={"1×128² face": _FACE_128}, target_label="1×128² face", target_gmac=175.0,
         target_params=554e6 / 4, real_size=554e6, tolerance=(0.05, 0.05), test_width=1 / 16,
         sources="issue 10: ≈554 MB fp32, ≈350 GFLOP per face from the published layer structure"),
    Twin(name="inswapper_128_fp16", entry="inswapper_128_fp16", build=build_inswapper, run_dims=_FACE_128,
         cost_dims={"1×128² face": _FACE_128}, target_label="1×128² face", target_gmac=175.0,
         target_params=554e6 / 4, real_size=277e6, tolerance=(0.05, 0.05), test_width=1 / 16,
         half_of="inswapper_128",
         sources="the inswapper_128 twin converted by pipeline.models.fp16 (float32 I/O kept); "
                 "real inswapper_128.fp16.onnx ≈ 277 MB"),
    Twin(name="arcface_w600k_r50", entry="arcface_w600k_r50", build=build_arcface, run_dims=_FACE_112,
         cost_dims={"1×112² face": _FACE_112}, target_label="1×112² face", target_gmac=6.3,
         target_params=43.6e6, real_size=174e6, tolerance=(0.10, 0.20),
         sources="insightface arcface_torch README, r50: 6.3 G (multiply-adds); 43.6 M params, ≈174 MB file"),
    Twin(name="gfpgan_1.4", entry="gfpgan_1.4", build=build_gfpgan, run_dims=_FACE_512,
         cost_dims={"1×512² face": _FACE_512}, target_label="1×512² face",
         target_gmac=gfpgan_reference_gmac(),
         target_params=85.04e6, real_size=340e6, tolerance=(0.10, 0.20), test_width=1 / 16,
         sources="params: 87.14 M params_ema (mlx-community/GFPGANv1.4-fp32) − 2.10 M unused style MLP; "
                 "≈340 MB ONNX; GMAC: no published figure, closed form over the published layer table"),
    Twin(name="scrfd_10g", entry="retinaface", build=build_scrfd, run_dims=_FRAME_640,
         cost_dims={"640×640 frame": _FRAME_640, "640×480 (VGA)": {"input.1": (1, 3, 480, 640)}},
         target_label="640×480 (VGA)", target_gmac=10.0, target_params=4.23e6, real_size=4.23e6 * 4,
         tolerance=(0.10, 0.20), test_width=0.25, aliases=("retinaface", "det_10g"),
         sources="insightface SCRFD README: SCRFD_10G_KPS 10 G at VGA (mmcv, multiply-adds), 4.23 M params"),
    Twin(name="real_esrgan_x4", entry="real_esrgan_x4", build=build_real_esrgan_x4, run_dims=_TILE_256,
         cost_dims={"256² tile": _TILE_256}, target_label="256² tile", target_gmac=_X4[1] / 1e9,
         target_params=16.7e6, real_size=4 * _X4[0], tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="RRDBNet 23×64/32 (Real-ESRGAN rrdbnet_arch.py); ~16.7 M params (Real-ESRGAN docs, "
                 "RealESRGAN_x4plus); GMAC: the layer table in closed form at the catalog's 256² tile"),
    Twin(name="real_esrgan_x2", entry="real_esrgan_x2", build=build_real_esrgan_x2, run_dims=_TILE_256,
         cost_dims={"256² tile": _TILE_256}, target_label="256² tile", target_gmac=_X2[1] / 1e9,
         target_params=16.7e6, real_size=4 * _X2[0], tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="RRDBNet x2plus: pixel-unshuffle by 2, then the x4 network (Real-ESRGAN rrdbnet_arch.py); "
                 "~16.7 M params; GMAC: the layer table in closed form at the 256² tile"),
    Twin(name="wav2lip_gan_96", entry="wav2lip_gan_96", build=build_wav2lip, run_dims=_MOUTH_96,
         cost_dims={"1×96² face": _MOUTH_96}, target_label="1×96² face", target_gmac=_W2L[1] / 1e9,
         target_params=36e6, real_size=4 * 36e6, tolerance=(0.05, 0.05), test_width=1 / 8,
         sources="Wav2Lip generator (Rudrabha/Wav2Lip models/wav2lip.py, BatchNorm folded); ~36 M params "
                 "(the task's figure; none published found: 36.28 M by the layer table); GMAC: the layer "
                 "table in closed form"),
)}


def resolve(names: Sequence[str] | None) -> list[Twin]:
    if not names:
        return list(TWINS.values())
    by_alias = {a: t for t in TWINS.values() for a in (t.name, *t.aliases)}
    unknown = [n for n in names if n not in by_alias]
    if unknown:
        raise SystemExit(f"unknown twin {', '.join(unknown)} (known: {', '.join(TWINS)})")
    wanted = [by_alias[n].name for n in names]
    with_bases = [b for w in wanted for b in (TWINS[w].half_of, w) if b]  # a converted twin after its base
    return [TWINS[n] for n in dict.fromkeys(with_bases)]


@dataclass
class Result:
    twin: Twin
    path: Path
    params: int
    size: int
    gmac: dict[str, float]  # label -> GMAC
    built: bool
    seconds: float  # building (measure, cache check, write) or, for an fp16 twin, converting
    run_seconds: float | None = None
    peak_rss: int = 0  # bytes: the process's peak resident memory once the twin was there


def measure(twin: Twin, width: float = 1.0) -> tuple[Net, int, dict[str, float]]:
    """(graph, predicted file size, GMAC per cost label) without drawing a weight.

    An fp16 twin's size is estimated (2 bytes less per weight; its Casts add a few hundred bytes)."""
    net = twin.build(width)
    gmac = {label: count_macs(net, dims) / 1e9 for label, dims in twin.cost_dims.items()}
    size = file_size(net)
    return net, size if twin.half_of is None else size - 2 * net.params, gmac


def read_manifest(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / MANIFEST).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _cached(path: Path, record: Any, spec: str) -> bool:
    """Whether ``path`` is the twin ``record`` describes: same spec, size and modification time as when it
    was written (a file written since is hashed against the record instead: 0.5 GB read on every check
    cost each `bench --twins` a second or two)."""
    if not isinstance(record, dict) or record.get("spec") != spec or not path.is_file():
        return False
    stat = path.stat()
    if stat.st_size != record.get("size"):
        return False
    return stat.st_mtime_ns == record.get("mtime_ns") or sha256_of(path) == record.get("sha256")


def _record(directory: Path, name: str, record: dict[str, Any]) -> None:
    manifest = read_manifest(directory)  # re-read: another twin may have been recorded meanwhile
    manifest[name] = record
    tmp = directory / f".{MANIFEST}.{os.getpid()}.part"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, directory / MANIFEST)


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build_twin(twin: Twin, directory: Path, width: float = 1.0, force: bool = False) -> Result:
    """Write ``twin`` into ``directory`` under its catalog file name unless an identical file is there.

    An fp16 twin is converted from its fp32 twin's file (built first where it is not there)."""
    start = time.perf_counter()
    net, _, gmac = measure(twin, width)
    path = directory / catalog.get(twin.entry).file
    spec = net.spec_digest()
    if twin.half_of is not None:
        spec = hashlib.sha256(f"{spec}/fp16/{fp16.FORMAT}".encode()).hexdigest()
    known = read_manifest(directory).get(path.name) or {}
    built = force or not _cached(path, known, spec)
    if not built and "mtime_ns" not in known:  # recorded before times were: hashed once, now remembered
        _record(directory, path.name, {**known, "mtime_ns": path.stat().st_mtime_ns})
    record: dict[str, Any] = {"twin": twin.name, "width": width, "spec": spec}
    if built and twin.half_of is None:
        record["size"], record["sha256"] = write_model(net, path)
    elif built and twin.half_of is not None:
        base = build_twin(TWINS[twin.half_of], directory, width)
        start = time.perf_counter()
        record["size"], record["sha256"] = fp16.convert_file(base.path, path)
        record["from"] = base.path.name
    if built:
        record["mtime_ns"] = path.stat().st_mtime_ns
        _record(directory, path.name, record)
    return Result(twin, path, net.params, path.stat().st_size, gmac, built, time.perf_counter() - start,
                  peak_rss=peak_rss())


def check_twin(twin: Twin, path: Path) -> float:
    """Load ``path`` in onnxruntime (CPU), check its I/O against the catalog, run once; seconds of the run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    inputs, outputs = session_io(session)
    check_io(catalog.get(twin.entry), inputs, outputs, path)
    rng = np.random.default_rng(0)
    feeds = {name: rng.uniform(-1, 1, shape).astype(np.float32) for name, shape in twin.run_dims.items()}
    start = time.perf_counter()
    results = session.run(None, feeds)
    seconds = time.perf_counter() - start
    bad = [o.name for o, r in zip(session.get_outputs(), results, strict=True) if not np.isfinite(r).all()]
    if bad:
        raise RuntimeError(f"{path.name}: non-finite values in outputs {bad}")
    return seconds


def _verdict(ratio: float, tolerance: float) -> str:
    return "ok" if abs(ratio - 1.0) <= tolerance else "OUT"


def report(result: Result) -> list[str]:
    """Lines that describe one twin against its targets."""
    t = result.twin
    size_tol, flops_tol = t.tolerance
    how = "cached (file and digest match)"
    if result.built:
        made = f"converted to fp16 from the {t.half_of} twin" if t.half_of else "built"
        how = f"{made} in {result.seconds:.1f} s, peak RSS of the process {result.peak_rss / 2**30:.2f} GiB"
    if result.run_seconds is not None:
        how += f"; onnxruntime CPU: I/O matches catalog '{t.entry}', one run {result.run_seconds:.2f} s"
    p_ratio, s_ratio = result.params / t.target_params, result.size / t.real_size
    lines = [f"{t.name} -> {result.path} ({how})",
             f"  parameters  {result.params / 1e6:9.2f} M    target {t.target_params / 1e6:8.2f} M   "
             f"ratio {p_ratio:5.3f}  {_verdict(p_ratio, size_tol)} (±{size_tol:.0%})",
             f"  file size   {result.size / 1e6:9.1f} MB   real   {t.real_size / 1e6:8.1f} MB  "
             f"ratio {s_ratio:5.3f}  {_verdict(s_ratio, size_tol)} (±{size_tol:.0%})"]
    for label, gmac in result.gmac.items():
        line = f"  {label:<14} {2 * gmac:8.2f} GFLOP = {gmac:7.2f} GMAC"
        if label == t.target_label:
            ratio = gmac / t.target_gmac
            line += (f"   target {t.target_gmac:.2f} GMAC ({2 * t.target_gmac:.1f} GFLOP)  "
                     f"ratio {ratio:5.3f}  {_verdict(ratio, flops_tol)} (±{flops_tol:.0%})")
        lines.append(line)
    lines.append(f"  source: {t.sources}")
    return lines


def within_targets(result: Result) -> bool:
    t = result.twin
    size_tol, flops_tol = t.tolerance
    return (abs(result.params / t.target_params - 1) <= size_tol
            and abs(result.size / t.real_size - 1) <= size_tol
            and abs(result.gmac[t.target_label] / t.target_gmac - 1) <= flops_tol)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make_twins", description=twins.__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="where to write the twins (usable as a models folder)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"some of: {', '.join(TWINS)}")
    parser.add_argument("--force", action="store_true", help="rebuild even if an identical file is there")
    parser.add_argument("--no-run", action="store_true", help="skip the onnxruntime load + one-run check")
    args = parser.parse_args(argv)
    ok = True
    print("cost: MAC = multiply-accumulate of Conv/ConvTranspose/Gemm/MatMul from the built graph; "
          "GFLOP = 2 × GMAC")
    for twin in resolve(args.only):
        result = build_twin(twin, args.directory, force=args.force)
        if result.built and not args.no_run:
            result.run_seconds = check_twin(twin, result.path)
        ok = within_targets(result) and ok
        print("\n".join(report(result)), flush=True)
    return 0 if ok else 1
