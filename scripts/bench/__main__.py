"""``python -m scripts.bench`` (from the repository root): the same as ``scripts/bench.py``."""

import sys

from .cli import main

sys.exit(main())
