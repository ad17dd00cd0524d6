"""Launcher of the benchmark package ``scripts/bench/`` (its docstring says what it does).

``python scripts/bench.py --help``; the same as ``python -m scripts.bench`` from the
repository root. Child processes are started through this file too.
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    # This file's folder is sys.path[0] when run as a script: there, the package bench/ is
    # found before this module of the same name.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench.cli import main

    sys.exit(main())
