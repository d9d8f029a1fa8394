"""Live mode in the browser (a benchmark, not a test): Debian's chromium with a fake camera (the browser
test's face clip, each frame stamped with its index, looped at 30 fps) sends its camera to the app over
WebRTC; the page measures what comes back (``window.fsLive.measure()``): the frames its swapped video
presented per second, and glass-to-glass latency, from the moment an index first shows in the page's camera
video to the moment it first shows in the returned video; built-in models (yunet + classic), default
settings. One command; it prints, per camera size and codec, a table of what the page saw (fps shown,
glass-to-glass p50/p95, its growth from the first to the last 10 s, whether the face came back swapped),
where the server's time went (its live stats' per-stage timeline and CPU per thread), the CPU of the
server, the browser and the rest of the machine, and the load average (BENCHMARKS.md, "Live mode").

    .venv/bin/python scripts/bench_live_browser.py [--seconds 60] [--size 640x480 ...] [--codec vp8 ...]
        [--json]

Run it on an idle machine for the acceptance figure (stop other work first: the browser shares the CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline import env  # noqa: E402
from tests.browser.helpers import chromium, running_app  # noqa: E402
from tests.test_live_browser import camera_args, face_box, fake_camera, grab, live_page  # noqa: E402
from tests.timing import wait_until  # noqa: E402

WARM_S = 5.0  # after the first frames back: the connection's and the encoders' start left out
EDGE_S = 10.0  # latency growth: the p50 of the last EDGE_S seconds minus that of the first
POLL_S = 2.0  # the page's samples are read this often (it keeps its last 300)
SWAP_CHANGE = 8  # a pixel the chain changes by more than this (mean over channels, blurred) is the swap's
GOALS = {"fps": 25.0, "p95_ms": 200.0, "growth_ms": 100.0}  # the acceptance on an idle machine


class MachineCpu:
    """CPU used between start and end: the machine's (``/proc/stat``), this process's, and its children's
    (the browser and Playwright's driver), each in percent of one core."""

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float, float]:
        tick = os.sysconf("SC_CLK_TCK")
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        busy = (sum(fields) - fields[3] - fields[4]) / tick  # all but idle and iowait
        own = sum(os.times()[:2])
        children = 0.0
        me = os.getpid()
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                parts = stat.read_text().rpartition(")")[2].split()
            except OSError:
                continue
            pid = int(stat.parent.name)
            parents[pid], times[pid] = int(parts[1]), (int(parts[11]) + int(parts[12])) / tick
        for pid, used in times.items():
            p = parents.get(pid, 0)
            while p and p != me:
                p = parents.get(p, 0)
            children += used if p == me and pid != me else 0.0
        return time.monotonic(), busy, own, children

    def summary(self) -> dict[str, float]:
        t1, busy1, own1, kids1 = self._read()
        t0, busy0, own0, kids0 = self.start
        span = t1 - t0
        pct = {"server": own1 - own0, "browser": kids1 - kids0}
        pct["others"] = max(0.0, busy1 - busy0 - pct["server"] - pct["browser"])
        return {k: round(100 * v / span, 1) for k, v in pct.items()}


def collect(page: Any, seconds: float) -> tuple[dict[float, float], list[float], dict[str, Any], dict]:
    """The page's glass-to-glass samples over ``seconds`` (camera time ms -> latency ms), the load
    averages seen, and the page's measure at the start and the end."""
    samples: dict[float, float] = {}
    loads = [os.getloadavg()[0]]
    first = page.evaluate("window.fsLive.measure()")
    end = time.monotonic() + seconds
    while True:
        time.sleep(min(POLL_S, max(0.0, end - time.monotonic())))
        m = page.evaluate("window.fsLive.measure()")
        samples.update((round(t, 1), lat) for t, lat in zip(m["shown_ms"], m["latencies_ms"], strict=True)
                       if t >= (first["presented"] or [0])[0])
        loads.append(os.getloadavg()[0])
        if time.monotonic() >= end:
            return samples, loads, first, m


def swapped(frames: list[np.ndarray], backs: list[np.ndarray]) -> tuple[bool, float, float]:
    """Whether the frames back show the chain's swap: where the chain changes the camera's frame that a
    frame back is (put through it here), closer to the chain's result than to the camera's frame itself
    (mean absolute difference of each, blurred first: the codecs' own changes are fine detail, a swap's
    are not); the two differences (medians). Which camera frame a frame back is: the one its background
    (all but the face) matches best, not the index read from its corner (a codec's blur can misread it)."""
    import cv2

    from pipeline.live.step import ChainStep
    from pipeline.settings import Settings
    from tests.photos import grace_hopper_path

    def soft(frame: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(frame, (0, 0), 3).astype(int)

    def thumb(frame: np.ndarray) -> np.ndarray:
        small = cv2.resize(frame, (160, 120), interpolation=cv2.INTER_AREA).astype(int)
        small[30:90, 53:107] = 0  # the face box (face_box at this size) left out
        return small

    thumbs = np.stack([thumb(f) for f in frames])
    step = ChainStep(Settings(), [grace_hopper_path()], 30.0)
    to_orig, to_swap = [], []
    for back in backs:
        i = int(np.argmin(np.abs(thumbs - thumb(back)).mean(axis=(1, 2, 3))))
        rows, cols = face_box(back)
        got, camera, chain = (soft(f)[rows, cols] for f in (back, frames[i], step(frames[i].copy())))
        changed = np.abs(chain - camera).mean(axis=2) > SWAP_CHANGE
        if changed.sum() < 100:
            continue
        to_orig.append(np.abs(got - camera)[changed].mean())
        to_swap.append(np.abs(got - chain)[changed].mean())
    if not to_orig:
        return False, 0.0, 0.0
    a, b = float(np.median(to_orig)), float(np.median(to_swap))
    return b < a, round(a, 2), round(b, 2)


def one(folder: Path, size: tuple[int, int], seconds: float, codec: str | None) -> dict[str, Any]:
    y4m, frames = fake_camera(folder, size)
    preferred = env.LIVE_CODEC.set_to(codec) if codec else contextlib.nullcontext()
    with preferred, running_app(worker=False, data=folder / "data", outputs=folder / "outputs") as (url, _), \
            chromium(camera_args(y4m)) as browser:
        page = live_page(browser, url)
        page.locator("#live-start").click()
        wait_until(lambda: page.evaluate("window.fsLive.measure()")["samples"] >= 10, 120, "frames back")
        time.sleep(WARM_S)
        cpu = MachineCpu()
        samples, loads, first, last = collect(page, seconds)
        machine = cpu.summary()
        server = page.evaluate("window.fsLive.state.server") or {}
        camera = page.evaluate("[document.querySelector('#live-local').videoWidth, "
                               "document.querySelector('#live-local').videoHeight]")
        backs = [b for b in (grab(page, "#live-remote", size) for _ in range(5)) if b is not None]
        page.locator("#live-stop").click()
    (t0, n0), (t1, n1) = first["presented"], last["presented"]
    at = np.array(sorted(samples))
    lat = np.array([samples[t] for t in sorted(samples)])
    early, late = lat[at < at[0] + EDGE_S * 1000], lat[at > at[-1] - EDGE_S * 1000]
    is_swapped, to_camera, to_chain = swapped(frames, backs)
    return {"size": f"{size[0]}x{size[1]}", "camera": f"{camera[0]}x{camera[1]}",
            "codec": (server.get("sending") or {}).get("codec", "?"), "seconds": seconds,
            "load_start": round(loads[0], 2), "load_max": round(max(loads), 2),
            "load_end": round(loads[-1], 2), "fps_shown": round((n1 - n0) * 1000 / (t1 - t0), 2),
            "distinct_back_per_s": round((last["received"] - first["received"]) * 1000 / (t1 - t0), 2),
            "g2g_p50_ms": round(float(np.percentile(lat, 50)), 1),
            "g2g_p95_ms": round(float(np.percentile(lat, 95)), 1), "g2g_samples": len(lat),
            "growth_ms": round(float(np.median(late) - np.median(early)), 1),
            "swapped": is_swapped, "face_diff_to_camera": to_camera, "face_diff_to_chain": to_chain,
            "server_latency_p50_ms": server.get("latency_p50_ms"),
            "server_dropped": server.get("frames_dropped"), "server_captured": server.get("frames_captured"),
            "sending": server.get("sending"), "advice": (server.get("advice") or {}).get("note") or "none",
            "timeline": server.get("timeline"),
            "threads": server.get("threads"), "cpu": machine}


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| camera | codec | load avg (start / max / end) | fps shown (distinct back/s) | glass to glass "
           "p50 | p95 | growth | swapped | server latency p50 | server dropped |", "|" + "---|" * 10]
    for r in rows:
        out.append(f"| {r['camera']} | {r['codec']} | {r['load_start']} / {r['load_max']} / {r['load_end']} "
                   f"| {r['fps_shown']} ({r['distinct_back_per_s']}) | {r['g2g_p50_ms']} ms "
                   f"| {r['g2g_p95_ms']} ms | {r['growth_ms']:+} ms "
                   f"| {'yes' if r['swapped'] else 'NO'} ({r['face_diff_to_chain']} vs "
                   f"{r['face_diff_to_camera']}) | {r['server_latency_p50_ms']} ms | "
                   f"{r['server_dropped']} of {r['server_captured']} |")
    for r in rows:
        out += ["", f"{r['camera']} {r['codec']}: where the server's time went, per frame (its last 300):",
                "| stage | p50 ms | p95 ms | max ms |", "|---|---|---|---|"]
        out += [f"| {k} | {v['p50_ms']} | {v['p95_ms']} | {v['max_ms']} |" for k, v in r["timeline"].items()]
        threads = ", ".join(f"{k} {v}" for k, v in r["threads"].items())
        out += [f"server threads, % of one core: {threads}", f"the camera advised at the end: {r['advice']}",
                "machine, % of one core: " + ", ".join(f"{k} {v}" for k, v in r["cpu"].items()),
                "acceptance (an idle machine): " + verdict(r)]
    return "\n".join(out)


def verdict(r: dict[str, Any]) -> str:
    checks = [(f"fps shown ≥ {GOALS['fps']:g}", r["fps_shown"] >= GOALS["fps"]),
              (f"glass to glass p95 ≤ {GOALS['p95_ms']:g} ms", r["g2g_p95_ms"] <= GOALS["p95_ms"]),
              (f"growth ≤ {GOALS['growth_ms']:g} ms", r["growth_ms"] <= GOALS["growth_ms"]),
              ("the face swapped", r["swapped"])]
    return "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured after a 5 s warm-up")
    parser.add_argument("--size", action="append", help="WxH of the camera (default 640x480; repeat)")
    parser.add_argument("--codec", action="append", choices=("vp8", "h264"),
                        help="the codec preferred both ways (default: the app's; repeat to compare)")
    parser.add_argument("--json", action="store_true", help="also print each run as a JSON line")
    args = parser.parse_args(argv)
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.size or ["640x480"]]
    rows = []
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    for size in sizes:
        for codec in args.codec or [None]:
            with tempfile.TemporaryDirectory() as tmp:
                row = one(Path(tmp), (size[0], size[1]), args.seconds, codec)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
