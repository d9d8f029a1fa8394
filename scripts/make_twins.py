#!/usr/bin/env python
"""Build the cost twins: ``scripts/make_twins.py DIR [--only NAME ...] [--force] [--no-run]``.

The twins themselves (graph writer, cost counter, layers, targets, cache) are the ``twins`` package.
"""

import sys

from twins.build import main

if __name__ == "__main__":
    sys.exit(main())
