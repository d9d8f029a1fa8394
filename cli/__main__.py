"""``python -m cli …`` is ``facestation …``."""

import sys

from cli.main import main

sys.exit(main())
