"""The registry of cases: what each case generates, how it describes its data, what it evaluates.

A case is one module of this package that calls :func:`register` with a :class:`Case` when it is
imported; :data:`BUILTIN` lists the modules imported here, in the order ``--case all`` runs them.
To add a case (``lvis``, ``boundary``, ``compat``, ``dask``, ``streaming``...), write
``cases/NAME.py`` with its generator and a ``register(Case(...))`` call, and add ``"NAME"`` to
:data:`BUILTIN` (after any case it borrows from). What a case can set:

- ``iou_type``: what each tool is asked to evaluate; a peer whose ``iou_types`` lack it is
  reported "n/a" (so a ``compat`` case with its own tools runs none of the usual peers).
- ``generate(seed, images, categories, dets) -> (gt, results)`` and ``describe(gt, results)``:
  the data set (written once to the cache folder ``{data_name}-v{version}-s..-i..-c..-d..``)
  and the counts stored beside it; ``data_lines(summary, dets, sizes)`` prints them.
- ``data_of``: evaluate another case's data instead (the same cached files); the data fields
  left unset are that case's. E.g. a ``compat`` case::

      register(Case(name="compat", iou_type="bbox", data_of="bbox",
                    tools={"deteval-compat": run_compat}, peers=("deteval", "pycocotools")))

- ``tools``: tools of this case only (``{"deteval-dask": runner}``): they run in a child
  process like the peers (see ``peers.Peer.run`` for a runner's signature) and are checked
  against the same reference; ``peers``: which registered peers run too (default: all that
  evaluate its iou_type).
- ``children``: other child entry points (``--child NAME``), each ``main(args) -> int``, and
  ``after(args, paths, size, tools)``: a step after the report (the rotated case's naive
  baseline), e.g. a memory profile of a streaming run.
- ``run(args, case, headed)``: replaces the whole default run (data, round robin, report) for a
  case whose measure is of another kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..common import STAT_NAMES, add_unique

#: The cases' modules imported at start, in the order ``--case all`` runs them.
BUILTIN = ("bbox", "segm", "keypoints", "rotated", "compat", "streaming", "dask", "lvis",
           "openimages", "boundary", "crowdpose", "calibration", "slices", "bootstrap",
           "export")


@dataclass(frozen=True)
class Case:
    """One thing to evaluate, with its data generator and its defaults."""

    name: str
    iou_type: str
    generate: Callable | None = None  # (seed, images, categories, dets_per_image) -> (gt, results)
    describe: Callable | None = None  # (gt, results) -> summary dict stored in meta.json
    data_lines: Callable | None = None  # (summary, dets_per_image, sizes) -> report lines
    images: int = 0  # default number of images
    quick: int = 0  # images with --quick
    categories: int = 0
    dets: int = 0  # detections per image (at most, for keypoints)
    version: int = 0  # of the generator: bump it so that older cached files are not reused
    data_name: str = ""  # prefix of the cache folder (default: the data's case's name)
    data_of: str = ""  # the case whose data this one evaluates (default: its own)
    peers: tuple[str, ...] | None = None  # the registered peers it runs (default: all that can)
    fixed_categories: bool = False  # --categories does not apply (keypoints: one person class)
    stat_names: tuple[str, ...] = STAT_NAMES
    required_speedup: float | None = None  # end-to-end speed-up over pycocotools asked of deteval
    tools: dict[str, Callable] = field(default_factory=dict)
    children: dict[str, Callable] = field(default_factory=dict)
    after: Callable | None = None
    run: Callable | None = None
    help: str = ""


CASES: dict[str, Case] = {}
_DATA_FIELDS = ("generate", "describe", "data_lines", "images", "quick", "categories", "dets",
                "version", "data_name", "fixed_categories")


def register(case: Case) -> Case:
    """Add ``case`` to :data:`CASES` (a second case of the same name is an error).

    A case with ``data_of`` takes the data fields it leaves unset from that case.
    """
    if case.data_of:
        source = CASES[case.data_of]
        unset = {name: getattr(source, name) for name in _DATA_FIELDS if not getattr(case, name)}
        case = replace(case, **unset)
    return add_unique(CASES, case, "cases")


def child_entry_points() -> dict[str, Callable]:
    """Every case's extra ``--child`` entry points by name."""
    return {name: main for case in CASES.values() for name, main in case.children.items()}


for _module in BUILTIN:
    importlib.import_module(f"{__name__}.{_module}")
