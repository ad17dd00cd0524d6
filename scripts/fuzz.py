"""Fuzz deteval's command line and readers (issue 19): structure-aware mutants of every
input format and special paths, one forked child per input with a timeout and a memory
limit, pycocotools' 12 stats as the oracle for COCO inputs.

Usage::

    python scripts/fuzz.py --n 100000 [--seed S] [--jobs 2] [--out DIR] [--timeout 20]
    python scripts/fuzz.py --replay SEED:INDEX      # run one case again and show it
    python scripts/fuzz.py --kinds reader-bbox --tree /path/to/other/checkout

Failing inputs are written to ``DIR/failures/<check>-<seed>-<index>/`` (files and
``case.json``); the exit status is 1 when any check failed. See ``scripts/fuzz/``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

def _tree(argv: list[str]) -> Path:
    """The deteval checkout to fuzz: ``--tree PATH`` (another worktree, a branch's detached
    checkout), else the one this script is in."""
    for i, arg in enumerate(argv):
        if arg == "--tree" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if arg.startswith("--tree="):
            return Path(arg.split("=", 1)[1]).resolve()
    return Path(__file__).resolve().parents[1]


sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(_tree(sys.argv)))

from fuzz.generators import KINDS, make_case  # noqa: E402
from fuzz.runner import CHECKS, run, run_case, summary_line  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of inputs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first case index")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=int, default=20, help="seconds per input")
    parser.add_argument("--out", default="fuzz-out", help="folder for failing inputs")
    parser.add_argument("--replay", metavar="SEED:INDEX", help="run one case and show it")
    parser.add_argument("--tree", help="the deteval checkout to fuzz (default: this one)")
    parser.add_argument("--kinds", help="only these kinds of case, comma-separated (default: "
                        "all): " + ", ".join(k for k, _ in KINDS))
    args = parser.parse_args(argv)
    kinds = tuple(args.kinds.split(",")) if args.kinds else None
    if kinds and not set(kinds) <= {k for k, _ in KINDS}:
        parser.error(f"--kinds: unknown kind(s) {sorted(set(kinds) - {k for k, _ in KINDS})}")
    if args.replay:
        from fuzz.runner import _baseline, _preload

        seed, index = (int(v) for v in args.replay.split(":"))
        case = make_case(seed, index, kinds)
        _preload()
        base_rss, base_vm = _baseline()
        outcome = run_case(case, timeout=args.timeout, base_rss=base_rss, base_vm=base_vm)
        print(json.dumps({"case": case.to_json(), "outcome": outcome}, indent=1))
        return 1 if outcome["failed"] else 0
    total = run(args.n, seed=args.seed, jobs=args.jobs, out=args.out, timeout=args.timeout,
                start=args.start, progress_to=sys.stdout, kinds=kinds)
    print(summary_line(total))
    for kind, counts in sorted(total.get("kinds", {}).items()):
        print(f"  {kind:<16} {counts['inputs']:>7} inputs {counts['failed']:>5} failed")
    for failure in total["failures"][:50]:
        print(f"  {args.seed}:{failure['index']} {failure['kind']}: {failure['failed']}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(total, indent=1))
    return 1 if any(total.get(check) for check in CHECKS) else 0


if __name__ == "__main__":
    sys.exit(main())
