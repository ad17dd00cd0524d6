"""``import deteval`` imports its submodules on first use (PEP 562), and ``deteval --version``
imports none of the commands' modules: both start fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import deteval

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("deteval.classification", "deteval.confusion", "deteval.report", "deteval.viz")


def _modules_after(code: str) -> list[str]:
    """The deteval modules (and numpy) that a fresh interpreter has imported after ``code``."""
    probe = (f"{code}\nimport json, sys\n"
             "print(json.dumps(sorted(m for m in sys.modules "
             "if m.startswith(('deteval', 'numpy')))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def test_import_deteval_imports_no_submodule():
    loaded = _modules_after("import deteval")
    assert not [m for m in loaded if m.startswith(HEAVY)]
    assert loaded == ["deteval"]  # nor numpy


def test_version_imports_no_command_module():
    code = ("import contextlib, io\nfrom deteval.cli import main\nout = io.StringIO()\n"
            "assert main(['--version'], stdout=out) == 0\n"
            "assert out.getvalue().startswith('deteval ')")
    loaded = _modules_after(code)
    assert not [m for m in loaded if m.startswith(HEAVY)]
    assert not [m for m in loaded if m.startswith("deteval.cli.") and m not in (
        "deteval.cli._common", "deteval.cli._main")]
    assert "numpy" not in loaded


def test_python_m_deteval_version():
    proc = subprocess.run([sys.executable, "-m", "deteval", "--version"], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    assert proc.stdout == f"deteval {deteval.__version__}\n"


@pytest.mark.parametrize("name", deteval.__all__)
def test_every_public_name_imports(name):
    namespace: dict = {}
    exec(f"from deteval import {name}", namespace)
    assert namespace[name] is getattr(deteval, name)
    assert name in dir(deteval)


def test_all_is_the_lazy_table():
    # The lazy table also holds deprecated aliases, which are importable but not in __all__.
    deprecated = {"average_precision"}
    assert sorted(deteval.__all__) == sorted(set(deteval._LAZY) - deprecated)
    assert deprecated <= set(deteval._LAZY)
    assert len(set(deteval.__all__)) == len(deteval.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        deteval.nope  # noqa: B018
    assert isinstance(deteval.__version__, str) and "__version__" in dir(deteval)


def test_a_keypoint_evaluation_of_two_files_imports_no_mask_module(tmp_path):
    """The keypoint results file read early, beside the ground truth (two files over the
    early readers' size): nothing of the masks package (its byte-pair table, pycocotools'
    routines) is imported for keypoints."""
    from keypointgen import make_keypoints_dataset

    gt, results = make_keypoints_dataset(5, n_images=300, n_categories=1,
                                         coordinates="float", bbox_mode="none")
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "kp.json").write_text(json.dumps(results))
    assert (tmp_path / "kp.json").stat().st_size > 1 << 16
    loaded = _modules_after(
        "import deteval\n"
        f"deteval.evaluate_coco({str(tmp_path / 'gt.json')!r}, "
        f"{str(tmp_path / 'kp.json')!r}, iou_type='keypoints')")
    assert "deteval.io._numeric_keypoints" in loaded      # (the early reader ran)
    assert [m for m in loaded if m.startswith("deteval.masks")] == []
