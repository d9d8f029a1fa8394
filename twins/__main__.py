"""``python -m twins DIR [--only NAME ...] [--force] [--no-run]``: build the cost twins (see ``twins``)."""

import sys

from twins.build import main

sys.exit(main())
