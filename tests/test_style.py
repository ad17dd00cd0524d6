"""The lint rules of pyproject.toml (``ruff check``) are part of the test suite.

The layout is not enforced: ``ruff format`` is deliberately not applied (docs/README.md,
"Code style").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    pytest.importorskip("ruff", reason="ruff is not installed (pip install deteval[test])")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, f"ruff check found problems:\n{run.stdout}{run.stderr}"
