#!/usr/bin/env python
"""`facestation bench` with tiny surrogate neural models (exact I/O of inswapper_128 and w600k_r50) installed
into a temporary models folder: measures the pipeline's own overhead around a neural swapper on CPU.

Usage: .venv/bin/python scripts/bench_surrogates.py [--swapper inswapper_128] [--target VIDEO] [bench args…]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    args = sys.argv[1:]
    swapper = "inswapper_128"
    if "--swapper" in args:
        i = args.index("--swapper")
        swapper = args[i + 1]
        del args[i : i + 2]
    with tempfile.TemporaryDirectory(prefix="facestation-surrogates-") as tmp:
        os.environ["FACESTATION_MODELS"] = tmp
        from pipeline.models import catalog
        from tests.surrogates import install_surrogate

        entry = catalog.get(swapper)
        install_surrogate(swapper, Path(tmp))
        if entry.recogniser:
            install_surrogate(entry.recogniser, Path(tmp))
        from cli.main import main as cli

        return cli(["bench", "--set", f"face_swapper.model={swapper}", *args])


if __name__ == "__main__":
    sys.exit(main())
