"""Live mode in the browser (a benchmark, not a test): Debian's chromium with a fake camera (the browser
test's face clip, each frame stamped with its index, looped at 30 fps) sends its camera to the app over
WebRTC; the page measures what comes back (``window.fsLive.measure()``: distinct indices back per second and
glass-to-glass latency, from the moment an index first shows in the page's camera video to the moment it
first shows in the returned video), built-in models (yunet + classic), with the load average at the time
(BENCHMARKS.md, "Live mode").

    .venv/bin/python scripts/bench_live_browser.py [--seconds 15] [--size 320x240 --size 640x480]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser.helpers import chromium, running_app  # noqa: E402
from tests.test_live_browser import camera_args, fake_camera, live_page  # noqa: E402
from tests.timing import wait_until  # noqa: E402

WARM_S = 5.0  # after the first frames back: the connection's and the encoder's start left out


def one(folder: Path, size: tuple[int, int], seconds: float) -> dict[str, Any]:
    y4m, _ = fake_camera(folder, size)
    with running_app(worker=False, data=folder / "data", outputs=folder / "outputs") as (url, app), \
            chromium(camera_args(y4m)) as browser:
        page = live_page(browser, url)
        page.locator("#live-start").click()
        wait_until(lambda: page.evaluate("window.fsLive.measure()")["samples"] >= 10, 120, "frames back")
        time.sleep(WARM_S)
        first = page.evaluate("window.fsLive.measure()")["received"]
        time.sleep(seconds)
        measured = page.evaluate("window.fsLive.measure()")  # of the last 300 frames back (10 s at 30 fps)
        camera = page.evaluate("[document.querySelector('#live-local').videoWidth, "
                               "document.querySelector('#live-local').videoHeight]")
        server = page.evaluate("window.fsLive.state.server")
        load = os.getloadavg()[0]
        page.locator("#live-stop").click()
    return {"size": f"{size[0]}x{size[1]}", "camera": f"{camera[0]}x{camera[1]}",
            "load_average_1m": round(load, 2), "frames_back": measured["received"] - first,
            "fps_back": round((measured["received"] - first) / seconds, 2),
            "fps_last_5s": round(measured["fps"], 2),
            "glass_to_glass_p50_ms": round(measured["latency_p50_ms"], 1),
            "glass_to_glass_p95_ms": round(measured["latency_p95_ms"], 1),
            "server_latency_p50_ms": server and server.get("latency_p50_ms"),
            "server_dropped": server and server.get("frames_dropped"),
            "server_captured": server and server.get("frames_captured")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="measured after a 5 s warm-up")
    parser.add_argument("--size", action="append", help="WxH of the camera (default 320x240 and 640x480)")
    args = parser.parse_args(argv)
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.size or ["320x240", "640x480"]]
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(one(Path(tmp), (size[0], size[1]), args.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
