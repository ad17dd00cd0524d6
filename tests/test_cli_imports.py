"""Each command loads only what it uses: building the parser (``--help``, any command's
``--help``) imports argparse-level code only, and a bbox ``deteval coco`` imports none of the
modules the boxes do not need. A heavy import added at the top of a command module, of the
option helpers or of a module on the bbox path fails here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Never imported by building the parser: the readers, numpy and the libraries they use.
NOT_FOR_THE_PARSER = ("numpy", "orjson", "msgspec", "shapely", "PIL", "matplotlib",
                      "pycocotools", "xml", "tempfile", "deteval.io", "deteval.data",
                      "deteval.boxes", "deteval.masks", "deteval.protocols", "deteval.doctor",
                      "deteval.classification", "deteval.report", "deteval.viz",
                      "deteval.diagnostics")
#: Never imported by ``deteval coco`` on boxes.
NOT_FOR_COCO_BBOX = ("shapely", "PIL", "matplotlib", "pycocotools", "deteval.io.labels",
                     "deteval.classification", "deteval.report", "deteval.viz",
                     "deteval.diagnostics", "deteval.geometry", "deteval.confusion",
                     "deteval.outcomes", "deteval.streaming", "deteval.protocols.voc",
                     "deteval.protocols._voc_stages", "deteval.ap",
                     # docs/startup.md: the other formats' readers (and xml), the mask code,
                     # the writers and the tidy export; numpy.ma (np.unique, np.median),
                     # pandas, pyarrow, scipy
                     "xml", "numpy.ma", "pandas", "pyarrow", "scipy",
                     "deteval.masks", "deteval.io.formats", "deteval.io._common",
                     "deteval.io.voc", "deteval.io.yolo", "deteval.io.csv",
                     "deteval.io.coco.writer", "deteval.tidy",
                     # small files: no thread reads the results file (nor threading), and
                     # results under 64 KiB go to msgspec without the numpy reader
                     "threading", "deteval.io._numeric_json", "deteval.io._numeric_template",
                     # the segm ground truth's reader (its decoder is built at import)
                     "deteval.io.coco.typed_segm_gt")
#: ... nor, when it writes no file, a JSON library other than msgspec (the readers' own),
#: nor shutil (argparse asks it the terminal's width; tempfile imports it).
NOT_WITHOUT_OUTPUT_FILES = ("orjson", "json", "shutil", "tempfile")


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return set(json.loads(proc.stdout.splitlines()[-1]))


def _heavy(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if m in names or m.startswith(tuple(f"{n}." for n in names)))


def _main_call(argv: list[str], status: int = 0) -> str:
    return ("import io\nfrom deteval.cli import main\n"
            f"out, err = io.StringIO(), io.StringIO()\n"
            f"status = main({argv!r}, stdout=out, stderr=err)\n"
            f"assert status == {status}, (status, err.getvalue())\n")


def test_building_the_parser_imports_no_heavy_module():
    code = ("import argparse\nfrom deteval.cli import _main\n"
            "parser = argparse.ArgumentParser()\ncommands = parser.add_subparsers()\n"
            "for module in _main._commands().values():\n    module.add_parser(commands)\n")
    assert _heavy(_loaded_after(code), NOT_FOR_THE_PARSER) == []


def test_help_of_every_command_imports_no_heavy_module():
    from deteval.cli import _main

    code = _main_call(["--help"]) + "".join(_main_call([name, "--help"])
                                            for name in _main._commands())
    assert _heavy(_loaded_after(code), NOT_FOR_THE_PARSER) == []


def test_version_imports_no_numpy():
    loaded = _loaded_after(_main_call(["--version"]))
    assert _heavy(loaded, NOT_FOR_THE_PARSER) == []
    # nor argparse and typing: the shortcut prints before the parser is built
    assert _heavy(loaded, ("argparse", "gettext", "typing", "deteval.cli._parser")) == []
    assert not [m for m in loaded if m.startswith("deteval.cli.") and m not in (
        "deteval.cli._common", "deteval.cli._main")]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["coco", "--help"]])
def test_the_program_builds_its_parser_without_numpy_or_ctypes(argv):
    """``python -m deteval`` (the process's own command line, docs/startup.md §4.1): the
    settings of its process wait for a command to run (ctypes, for glibc's malloc)."""
    probe = ("import runpy, sys\n"
             f"sys.argv = ['deteval', *{argv!r}]\n"
             "try:\n    runpy.run_module('deteval', run_name='__main__', alter_sys=True)\n"
             "except SystemExit as exit_:\n    assert not exit_.code, exit_.code\n")
    assert _heavy(_loaded_after(probe), NOT_FOR_THE_PARSER + ("ctypes",)) == []


def test_the_help_lists_every_command():
    import io

    from deteval.cli import _main, main

    out = io.StringIO()
    assert main(["--help"], stdout=out) == 0
    listed = [line.split()[0] for line in out.getvalue().splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(_main._commands())


def _tiny_bbox_pair(folder: Path) -> tuple[Path, Path]:
    images = [{"id": i, "width": 64, "height": 48, "file_name": f"{i}.jpg"} for i in (1, 2)]
    gt = {"images": images, "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [4, 4, 20, 10],
                           "area": 200, "iscrowd": 0},
                          {"id": 2, "image_id": 2, "category_id": 2, "bbox": [10, 8, 30, 30],
                           "area": 900, "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [5, 4, 20, 10], "score": 0.9},
          {"image_id": 2, "category_id": 2, "bbox": [0, 0, 8, 8], "score": 0.4},
          {"image_id": 2, "category_id": 1, "bbox": [10, 8, 30, 30], "score": 0.7}]
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    return gt_path, dt_path


@pytest.mark.parametrize("options", [[], ["--per-class", "--json", "{folder}/out.json"]])
def test_coco_on_boxes_imports_only_what_boxes_need(tmp_path, options):
    gt, dt = _tiny_bbox_pair(tmp_path)
    argv = ["coco", str(gt), str(dt), *(o.format(folder=tmp_path) for o in options)]
    code = _main_call(argv) + "assert 'Average Precision' in out.getvalue()\n"
    loaded = _loaded_after(code)
    assert "deteval.protocols.coco" in loaded   # the evaluation did run
    assert _heavy(loaded, NOT_FOR_COCO_BBOX) == []
    if not options:   # (the probe imports json itself, to print the modules)
        assert _heavy(loaded, NOT_WITHOUT_OUTPUT_FILES) == ["json", "json.decoder",
                                                              "json.encoder", "json.scanner"]


def test_python_m_deteval_coco_imports_only_what_boxes_need(tmp_path):
    """The command as a user runs it (``python -m deteval coco GT DT``, with ``-X
    importtime``): the modules it held at the end and those the import log names."""
    gt, dt = _tiny_bbox_pair(tmp_path)
    probe = ("import runpy, sys\n"
             f"sys.argv = ['deteval', 'coco', {str(gt)!r}, {str(dt)!r}]\n"
             "try:\n    runpy.run_module('deteval', run_name='__main__', alter_sys=True)\n"
             "except SystemExit as exit_:\n    assert not exit_.code, exit_.code\n"
             "print(sorted(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", probe],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    modules = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and line.count("|") == 2}
    assert "Average Precision" in proc.stdout
    assert {"deteval.protocols.coco", "numpy", "msgspec"} <= modules   # the log was read
    loaded = modules | set(ast.literal_eval(proc.stdout.splitlines()[-1]))
    assert _heavy(loaded, NOT_FOR_COCO_BBOX + NOT_WITHOUT_OUTPUT_FILES) == []


def test_coco_on_boxes_imports_no_pathlib_without_an_editable_finder(tmp_path):
    """pathlib (with ``urllib.parse`` and ``ipaddress``) is imported where a path is written
    or resolved, not by a run that writes no file. An editable install's import finder
    imports it at every start-up, so this probe starts without ``site`` (``-S``), with the
    repository and the same site-packages on its path, as a regular install runs."""
    import site

    gt, dt = _tiny_bbox_pair(tmp_path)
    probe = (f"import sys\nsys.path[:0] = {[str(ROOT), *site.getsitepackages()]!r}\n"
             "import runpy\n"
             f"sys.argv = ['deteval', 'coco', {str(gt)!r}, {str(dt)!r}]\n"
             "try:\n    runpy.run_module('deteval', run_name='__main__', alter_sys=True)\n"
             "except SystemExit as exit_:\n    assert not exit_.code, exit_.code\n"
             "print([sys.modules['deteval'].__file__, sorted(sys.modules)])\n")
    proc = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    source, loaded = ast.literal_eval(proc.stdout.splitlines()[-1])
    assert "Average Precision" in proc.stdout and "deteval.protocols.coco" in loaded
    assert source.startswith(str(ROOT))
    assert _heavy(loaded, ("pathlib", "urllib", "ipaddress") + NOT_FOR_COCO_BBOX
                  + NOT_WITHOUT_OUTPUT_FILES) == []


@pytest.mark.parametrize("command", ["coco", "voc", "classify"])
def test_a_command_line_imports_its_command_module_alone(command):
    loaded = _loaded_after(_main_call([command, "--help"]))
    commands = {m for m in loaded if m.startswith("deteval.cli.")
                and not m.startswith("deteval.cli._")}
    # coco's options include compare's resampling options (--ci): compare's module too.
    assert commands <= {f"deteval.cli.{command}", "deteval.cli.check", "deteval.cli.compare"}
    assert f"deteval.cli.{command}" in commands
