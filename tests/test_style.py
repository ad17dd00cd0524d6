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


def _private_imports_across_packages() -> list[str]:
    """``from X import _name`` where X is a deteval module outside the importer's own
    package (siblings of one package may share underscore names; other packages may not;
    a private module such as ``protocols._coco_stages`` may be imported, its names are its
    interface)."""
    import ast

    found = []
    for path in sorted((ROOT / "deteval").rglob("*.py")):
        package = path.parent.relative_to(ROOT).as_posix().replace("/", ".")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                module = ".".join(parts + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("deteval"):
                continue
            is_package = (ROOT / module.replace(".", "/")).is_dir()
            home = module if is_package else module.rpartition(".")[0]
            folder = ROOT / module.replace(".", "/")
            for alias in node.names:
                a_module = (folder / f"{alias.name}.py").is_file() or (folder / alias.name).is_dir()
                if (alias.name.startswith("_") and not alias.name.startswith("__")
                        and home != package and not a_module):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {module} "
                                 f"import {alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another_package():
    assert _private_imports_across_packages() == []
