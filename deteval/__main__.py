"""``python -m deteval``: the same as the ``deteval`` command."""

import sys

from .cli import main

sys.exit(main())
