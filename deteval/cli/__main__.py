"""``python -m deteval.cli``: the same as the ``deteval`` command."""

import sys

from ._main import main

sys.exit(main())
