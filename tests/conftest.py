"""Fixtures shared by the test modules.

* ``voc_sample_dir`` and ``coco100_dir``: the shared samples ``voc_sample_100`` and
  ``coco_val2014_100`` in ``../shared/data`` next to the repository (or in
  ``$DETEVAL_SHARED_DATA``); a test that takes one is skipped, naming the path, when the
  sample is absent.

Generators of datasets, detections and masks stay in the helper modules ``cocogen.py``,
``maskgen.py``, ``keypointgen.py``, ``scenes.py`` and ``reference.py`` (literal reference
implementations), and what several test modules share in ``clirun.py`` (the CLI run in this
process), ``protocolfiles.py``, ``geometryref.py``, ``iofiles.py``, ``keypointcases.py`` and
``classificationcases.py``; test modules import those, never one another.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Where the shared samples live, outside the repository (``DETEVAL_SHARED_DATA`` overrides
#: it, e.g. when the tests run from a worktree elsewhere).
SHARED_DATA = Path(os.environ.get("DETEVAL_SHARED_DATA")
                   or Path(__file__).resolve().parents[2] / "shared" / "data")


def _shared(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.skip(f"shared sample not found: {path}")
    return path


@pytest.fixture(scope="session")
def voc_sample_dir() -> Path:
    """The VOC sample of 100 images in every ground-truth and detection layout."""
    return _shared("voc_sample_100")


@pytest.fixture(scope="session")
def coco100_dir() -> Path:
    """100 COCO val2014 images with results and pycocotools' expected summaries."""
    return _shared("coco_val2014_100")



@pytest.fixture(scope="session")
def crowdpose_example_dir() -> Path:
    """faster-coco-eval's CrowdPose example (``example_crowdpose_val.json`` and
    ``example_crowdpose_preds.json`` of its tests/dataset/), in ``crowdpose_example``."""
    return _shared("crowdpose_example")
