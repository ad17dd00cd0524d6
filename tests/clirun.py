"""Run the ``deteval`` command line in this process (the tests' one way to call it): the
exit status and what it wrote to stdout and stderr."""

from __future__ import annotations

import io

from deteval.cli import main


def run(*argv) -> tuple[int, str, str]:
    """``main(argv)`` with each argument as text: ``(status, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()
