"""Contracts every public entry point keeps, each tested once over a registry of functions.

The contracts
-------------
* inputs untouched: the arguments compare equal (deep copies, numpy flags included) after
  the call;
* result arrays read-only: every numpy array reachable from the result (attributes of
  result objects, tuples, dicts) has ``writeable == False``;
* read-only after pickling: the result pickled and unpickled, and deep-copied, still has
  every array read-only (numpy's pickles drop the flag: a result sent from a worker process
  or loaded from disk would otherwise come back writable), with the same values;
* order and ids: the same problem with the detections (samples) in another order and the
  image, object and category ids relabelled (categories keep their order) gives the same
  numbers. Scores are made distinct first: ties are broken by input order, as in the
  reference implementations;
* empty input defined: no detections (no samples) gives a result, or a ``ValueError`` /
  ``TypeError`` / :class:`deteval.DetevalError` with a message, never another exception;
  only deteval's own warnings may be emitted;
* NaN refused: a NaN in one field raises a ``ValueError`` or ``TypeError`` naming the field;
* nothing printed: stdout and stderr stay empty.

Registering a new function
--------------------------
Append an :class:`Entry` to one of the registries (``PROTOCOLS``, ``DIAGNOSTICS``,
``CLASSIFICATION``, ``READERS``), or to ``ENTRIES`` directly. An entry says how to build a
fresh :class:`Case` (``make(tmp)``, where ``tmp`` is a scratch folder for file inputs;
the call is ``function(*case.args, **case.kwargs)``), which numbers of what it returns
must not move (``numbers``), where the result object is in what it returns (``result``,
default: all of it), and the optional hooks ``shuffle``, ``empty`` and ``nan`` (a
contract is skipped for an entry without its hook). The helpers
below build the hooks for the common input kinds (COCO dicts, label pairs, scores), so an
entry is usually one line. A contract that an entry breaks for a reason outside this
branch's files is listed in ``KNOWN_GAPS`` and runs as a strict xfail.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import oidgen
import pytest

import deteval
from deteval import classification as dc
from deteval.demo import make_demo
from deteval.errors import DetevalError, FormatWarning, UndefinedMetricWarning

# --------------------------------------------------------------------------------------------
# Cases and entries
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    """Positional arguments and keyword options of one call."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Entry:
    """A public function and how to exercise it (see the module docstring)."""

    name: str
    function: Callable[..., Any]
    make: Callable[[Path], Case]
    numbers: Callable[[Any], Any]
    shuffle: Callable[[Case, np.random.Generator], Case] | None = None
    empty: Callable[[Path], Case] | None = None
    nan: Callable[[Path], tuple[Case, str]] | None = None
    exact: bool = True  # numbers equal bit for bit (else to 1e-12: sums in another order)
    result: Callable[[Any], Any] = lambda returned: returned  # the result in what it returns

    def __call__(self, case: Case) -> Any:
        return self.function(*case.args, **case.kwargs)


# --------------------------------------------------------------------------------------------
# Detection inputs: COCO dicts from the demo generator
# --------------------------------------------------------------------------------------------


def coco_inputs(n_images: int = 5) -> tuple[dict, list]:
    """Demo ground truth and results, with distinct scores."""
    gt, results = make_demo(seed=0, n_images=n_images)
    for i, result in enumerate(results):
        result["score"] = round(result["score"], 2) + i * 1e-7
    return gt, results


def relabelled(gt: dict, results: list, rng: np.random.Generator) -> tuple[dict, list,
                                                                            np.ndarray]:
    """The same problem: results shuffled, image and object ids replaced by others (in
    another order), category ids by larger ones in the same order. Returns the new order of
    the results too (``new[i] = old[order[i]]``)."""
    gt, results = copy.deepcopy(gt), copy.deepcopy(results)
    old_ids = [image["id"] for image in gt["images"]]
    image_map = dict(zip(old_ids, rng.permutation(len(old_ids)) * 7 + 1000))
    category_map = {c["id"]: c["id"] * 10 + 3 for c in gt["categories"]}
    for image in gt["images"]:
        image["id"] = int(image_map[image["id"]])
    for category in gt["categories"]:
        category["id"] = category_map[category["id"]]
    for n, annotation in zip(rng.permutation(len(gt["annotations"])), gt["annotations"]):
        annotation["id"] = int(n) * 3 + 5
        annotation["image_id"] = int(image_map[annotation["image_id"]])
        annotation["category_id"] = category_map[annotation["category_id"]]
    order = rng.permutation(len(results))
    results = [results[i] for i in order]
    for result in results:
        result["image_id"] = int(image_map[result["image_id"]])
        result["category_id"] = category_map[result["category_id"]]
    return gt, results, order


def detection_entry(name: str, function: Callable[..., Any], numbers: Callable[[Any], Any],
                    **kwargs: Any) -> Entry:
    """An entry of a function ``f(gt, dt, **kwargs)`` taking COCO dicts."""

    def make(tmp: Path) -> Case:
        return Case(coco_inputs(), dict(kwargs))

    def shuffle(case: Case, rng: np.random.Generator) -> Case:
        gt, results, _ = relabelled(*case.args, rng)
        return Case((gt, results), case.kwargs)

    def empty(tmp: Path) -> Case:
        return Case((coco_inputs()[0], []), dict(kwargs))

    def nan(tmp: Path) -> tuple[Case, str]:
        gt, results = coco_inputs()
        results[3]["score"] = float("nan")
        return Case((gt, results), dict(kwargs)), "score"

    return Entry(name, function, make, numbers, shuffle, empty, nan)


def top_k_entry() -> Entry:
    """detection_top_k_accuracy takes per-detection class scores, shuffled with the rows."""
    n_classes = 5

    def scores(results: list) -> np.ndarray:
        rng = np.random.default_rng(1)
        return rng.random((len(results), n_classes))

    def make(tmp: Path) -> Case:
        gt, results = coco_inputs()
        return Case((gt, results, scores(results)), {"k": 2})

    def shuffle(case: Case, rng: np.random.Generator) -> Case:
        gt, results, class_scores = case.args
        gt, results, order = relabelled(gt, results, rng)
        return Case((gt, results, class_scores[order]), case.kwargs)

    def empty(tmp: Path) -> Case:
        return Case((coco_inputs()[0], [], np.zeros((0, n_classes))), {"k": 2})

    def nan(tmp: Path) -> tuple[Case, str]:
        case = make(tmp)
        case.args[2][4, 1] = np.nan
        return case, "class_scores"

    return Entry("detection_top_k_accuracy", deteval.detection_top_k_accuracy, make,
                 lambda r: (r.accuracy, r.per_k, r.n_matched), shuffle, empty, nan)


def crowdpose_entry(name: str = "evaluate_crowdpose",
                    function: Callable[..., Any] = deteval.evaluate_crowdpose,
                    numbers: Callable[[Any], Any] = lambda r: (r.stats.tolist(),
                                                               r.precision.tobytes())
                    ) -> Entry:
    """A function of CrowdPose dicts (images with crowdIndex, 14 keypoints):
    evaluate_crowdpose, or one that reads its result."""
    from crowdposegen import make_crowdpose_dataset

    def inputs() -> tuple[dict, list]:
        gt, results = make_crowdpose_dataset(4, n_images=5, bbox_mode="none")
        for i, result in enumerate(results):
            result["score"] = round(result["score"], 2) + i * 1e-7
        return gt, results

    def shuffle(case: Case, rng: np.random.Generator) -> Case:
        return Case(relabelled(*case.args, rng)[:2])

    return _pair_entry(name, function, inputs, numbers, shuffle)


def _pair_entry(name: str, function: Callable[..., Any], inputs: Callable[[], tuple],
                numbers: Callable[[Any], Any],
                shuffle: Callable[[Case, np.random.Generator], Case]) -> Entry:
    """An entry of ``function(gt, results)`` on ``inputs()``: empty is no results, NaN a
    result's score."""

    def nan(tmp: Path) -> tuple[Case, str]:
        gt, results = inputs()
        results[3]["score"] = float("nan")
        return Case((gt, results)), "score"

    return Entry(name, function, lambda tmp: Case(inputs()), numbers, shuffle,
                 lambda tmp: Case((inputs()[0], [])), nan)


def lvis_entry(name: str, function: Callable[..., Any], numbers: Callable[[Any], Any]
               ) -> Entry:
    """A function of LVIS dicts (images with neg / not-exhaustive lists, frequencies):
    evaluate_lvis, or one that reads its result. Relabelling maps the lists' ids too."""
    from lvisgen import make_lvis_dataset

    def inputs() -> tuple[dict, list]:
        gt, results = make_lvis_dataset(6, p_crowded_image=0.0, n_images=5)
        known = {c["id"] for c in gt["categories"]}
        results = [r for r in results if r["category_id"] in known]
        for i, result in enumerate(results):
            result["score"] = round(result["score"], 2) + i * 1e-7
        return gt, results

    def shuffle(case: Case, rng: np.random.Generator) -> Case:
        old = [c["id"] for c in case.args[0]["categories"]]
        gt, results, _ = relabelled(*case.args, rng)
        new = dict(zip(old, (c["id"] for c in gt["categories"])))
        for image in gt["images"]:
            for key in ("neg_category_ids", "not_exhaustive_category_ids"):
                image[key] = [new[c] for c in image[key]]
        return Case((gt, results))

    return _pair_entry(name, function, inputs, numbers, shuffle)


def _tidy_numbers(r: dict) -> tuple:
    """Order-free numbers of a tidy table: status and outcome counts, sorted IoUs."""
    return (np.bincount(r["status"].codes, minlength=5).tolist(),
            np.bincount(r["outcome"].codes + 1, minlength=10).tolist(),
            np.sort(r["iou"]).tobytes())


def openimages_entry(name: str, function: Callable[..., Any], numbers: Callable[[Any], Any]
                     ) -> Entry:
    """A function of the Open Images challenge files (``oidgen.write_problem``)."""
    return Entry(name, function, lambda tmp: Case(*oidgen.write_problem(tmp)), numbers,
                 lambda case, rng: Case(*oidgen.write_problem(case.args[0].parent, rng=rng)),
                 lambda tmp: Case(*oidgen.write_problem(tmp, empty=True)),
                 lambda tmp: (Case(*oidgen.write_problem(tmp, nan=True)), "Score"))


def _confident(path: Any) -> Any:
    """The Open Images detections of a file scoring at least 0.5 (a second model)."""
    from deteval.io.openimages import OIDDetections, read_oid_detections

    dt = read_oid_detections(path)
    keep = dt.score >= 0.5
    return OIDDetections(dt.image_id[keep], dt.label[keep], dt.score[keep], dt.xyxy[keep])


def _curve_numbers(points: Any) -> dict:
    return {key: np.asarray(value).tolist() for key, value in points.curves["overall"].items()}


def _tide_numbers(r: Any) -> list:
    return [r.ap, r.dap.tolist(), r.fixed_ap.tolist(), r.dap_fp, r.dap_fn, r.counts.tolist()]


PROTOCOLS = [
    detection_entry("evaluate_coco", deteval.evaluate_coco,
                    lambda r: (r.stats.tolist(), r.precision.tobytes(), r.recall.tobytes())),
    detection_entry("evaluate_voc", deteval.evaluate_voc,
                    lambda r: (r.ap.tobytes(), r.mean_ap)),
    Entry("evaluate_openimages", deteval.evaluate_openimages,
          lambda tmp: Case(*oidgen.write_problem(tmp)), lambda r: (r.ap.tobytes(), r.mean_ap),
          lambda case, rng: Case(*oidgen.write_problem(case.args[0].parent, rng=rng)),
          lambda tmp: Case(*oidgen.write_problem(tmp, empty=True)),
          lambda tmp: (Case(*oidgen.write_problem(tmp, nan=True)), "Score")),
    crowdpose_entry(),
    lvis_entry("evaluate_lvis", deteval.evaluate_lvis,
               lambda r: (r.stats.tolist(), r.precision.tobytes())),
]

DIAGNOSTICS = [
    detection_entry("detection_confusion_matrix", deteval.detection_confusion_matrix,
                    lambda r: r.counts.tolist()),
    detection_entry("match_outcomes", deteval.match_outcomes, lambda r: r.counts()),
    detection_entry("operating_points", deteval.operating_points, _curve_numbers),
    detection_entry("error_attribution", deteval.error_attribution, _tide_numbers),
    detection_entry("error_attribution voc2012", deteval.error_attribution, _tide_numbers,
                    protocol="voc2012"),
    lvis_entry("error_attribution lvis", lambda gt, dt: deteval.error_attribution(
        gt, dt, protocol="lvis"), _tide_numbers),
    crowdpose_entry("error_attribution crowdpose", lambda gt, dt: deteval.error_attribution(
        gt, dt, protocol="crowdpose"), _tide_numbers),
    openimages_entry("error_attribution openimages", lambda gt, dt, **kw:
                     deteval.error_attribution(gt, dt, protocol="openimages", **kw),
                     _tide_numbers),
    detection_entry("lrp", deteval.lrp, lambda r: r.stats.tolist()),
    detection_entry("calibration", deteval.calibration,
                    lambda r: [r.dece, r.count.tolist(), r.tp.tolist(), r.class_dece.tolist()],
                    binning="quantile"),
    detection_entry("slices", deteval.slices,
                    lambda r: [(s.key, s.value, s.n_gt, s.n_detections, s.stats) for s in r]),
    top_k_entry(),
    detection_entry("bootstrap_coco", lambda gt, dt, **kw: deteval.bootstrap_coco(
        deteval.evaluate_coco(gt, dt), **kw), lambda r: (r.estimates, r.samples),
        n_resamples=20, seed=0),
    detection_entry("compare_coco", lambda gt, dt, **kw: deteval.compare_coco(
        [deteval.evaluate_coco(gt, dt),
         deteval.evaluate_coco(gt, [d for d in dt if d["score"] >= 0.5])], **kw),
        lambda r: (r.difference, r.low, r.high, r.p_adjusted), n_resamples=20, seed=0),
    # the tidy export of a COCO evaluation: rows in input order, so counts and sorted IoUs
    detection_entry("tidy_columns", lambda gt, dt: deteval.tidy_columns(
        deteval.evaluate_coco(gt, dt)), lambda r: (
            np.bincount(r["status"].codes, minlength=5).tolist(),
            np.bincount(r["outcome"].codes + 1, minlength=10).tolist(),
            np.sort(r["iou"]).tobytes())),
    detection_entry("bootstrap_voc", lambda gt, dt, **kw: deteval.bootstrap_voc(
        deteval.evaluate_voc(gt, dt), **kw), lambda r: (r.estimates, r.samples),
        n_resamples=20, seed=0),
    detection_entry("compare_voc", lambda gt, dt, **kw: deteval.compare_voc(
        [deteval.evaluate_voc(gt, dt),
         deteval.evaluate_voc(gt, [d for d in dt if d["score"] >= 0.5])], **kw),
        lambda r: (r.difference, r.low, r.high, r.p_adjusted), n_resamples=20, seed=0),
    # LVIS, CrowdPose and Open Images: intervals and the tidy export of their results
    lvis_entry("bootstrap_lvis", lambda gt, dt: deteval.bootstrap_lvis(
        deteval.evaluate_lvis(gt, dt), n_resamples=20, seed=0),
        lambda r: (r.estimates, r.samples)),
    crowdpose_entry("bootstrap_crowdpose", lambda gt, dt: deteval.bootstrap_crowdpose(
        deteval.evaluate_crowdpose(gt, dt), n_resamples=20, seed=0),
        lambda r: (r.estimates, r.samples)),
    openimages_entry("bootstrap_openimages", lambda *a, **kw: deteval.bootstrap_openimages(
        deteval.evaluate_openimages(*a, **kw), n_resamples=20, seed=0),
        lambda r: (r.estimates, r.samples)),
    lvis_entry("compare_lvis", lambda gt, dt: deteval.compare_lvis(
        [deteval.evaluate_lvis(gt, dt),
         deteval.evaluate_lvis(gt, [d for d in dt if d["score"] >= 0.5])],
        n_resamples=20, seed=0), lambda r: (r.difference, r.low, r.high, r.p_adjusted)),
    crowdpose_entry("compare_crowdpose", lambda gt, dt: deteval.compare_crowdpose(
        [deteval.evaluate_crowdpose(gt, dt),
         deteval.evaluate_crowdpose(gt, [d for d in dt if d["score"] >= 0.5])],
        n_resamples=20, seed=0), lambda r: (r.difference, r.low, r.high, r.p_adjusted)),
    openimages_entry("compare_openimages", lambda gt, dt, **kw: deteval.compare_openimages(
        [deteval.evaluate_openimages(gt, dt, **kw),
         deteval.evaluate_openimages(gt, _confident(dt), **kw)], n_resamples=20, seed=0),
        lambda r: (r.difference, r.low, r.high, r.p_adjusted)),
    lvis_entry("tidy_columns[lvis]", lambda gt, dt: deteval.tidy_columns(
        deteval.evaluate_lvis(gt, dt)), _tidy_numbers),
    crowdpose_entry("tidy_columns[crowdpose]", lambda gt, dt: deteval.tidy_columns(
        deteval.evaluate_crowdpose(gt, dt)), _tidy_numbers),
    openimages_entry("tidy_columns[openimages]", lambda *a, **kw: deteval.tidy_columns(
        deteval.evaluate_openimages(*a, **kw)), _tidy_numbers),
    lvis_entry("slices[lvis]", lambda gt, dt: deteval.slices(
        deteval.evaluate_lvis(gt, dt), by=["size"]),
        lambda r: [(s.key, s.value, s.n_gt, s.n_detections, s.stats) for s in r]),
    crowdpose_entry("slices[crowdpose]", lambda gt, dt: deteval.slices(
        deteval.evaluate_crowdpose(gt, dt), by=["size"]),
        lambda r: [(s.key, s.value, s.n_gt, s.n_detections, s.stats) for s in r]),
    # LRP and calibration of every protocol's result
    detection_entry("lrp_of_result[voc]", lambda gt, dt: deteval.lrp_of_result(
        deteval.evaluate_voc(gt, dt)), lambda r: r.stats.tolist()),
    lvis_entry("lrp_of_result[lvis]", lambda gt, dt: deteval.lrp_of_result(
        deteval.evaluate_lvis(gt, dt)), lambda r: r.stats.tolist()),
    crowdpose_entry("lrp_of_result[crowdpose]", lambda gt, dt: deteval.lrp_of_result(
        deteval.evaluate_crowdpose(gt, dt)), lambda r: r.stats.tolist()),
    openimages_entry("lrp_of_result[openimages]", lambda *a, **kw: deteval.lrp_of_result(
        deteval.evaluate_openimages(*a, **kw)), lambda r: r.stats.tolist()),
    detection_entry("calibration[voc]", lambda gt, dt: deteval.calibration(
        deteval.evaluate_voc(gt, dt)), lambda r: [r.dece, r.count.tolist(), r.tp.tolist()]),
    lvis_entry("calibration[lvis]", lambda gt, dt: deteval.calibration(
        deteval.evaluate_lvis(gt, dt)), lambda r: [r.dece, r.count.tolist(), r.tp.tolist()]),
    crowdpose_entry("calibration[crowdpose]", lambda gt, dt: deteval.calibration(
        deteval.evaluate_crowdpose(gt, dt)), lambda r: [r.dece, r.count.tolist(),
                                                        r.tp.tolist()]),
]


# --------------------------------------------------------------------------------------------
# Classification inputs: labels, scores, score matrices, real values
# --------------------------------------------------------------------------------------------

_N = 40


def _labels(seed: int, n: int = _N) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, n)


def _values(seed: int, n: int = _N) -> np.ndarray:
    return np.random.default_rng(seed).random(n) * 10


def _permuted(case: Case, rng: np.random.Generator, sample_args: int) -> Case:
    """``case`` with the first ``sample_args`` arguments' rows in one new order."""
    order = rng.permutation(len(case.args[0]))
    args = tuple(np.asarray(a)[order] if i < sample_args else a
                 for i, a in enumerate(case.args))
    return Case(args, case.kwargs)


def _with_nan(case: Case, index: int, field: str) -> tuple[Case, str]:
    args = list(case.args)
    array = np.array(args[index], dtype=np.float64)
    array.flat[3] = np.nan
    args[index] = array
    return Case(tuple(args), case.kwargs), field


def sample_entry(name: str, function: Callable[..., Any], make_args: Callable[[], tuple], *,
                 sample_args: int = 2, nan_field: tuple[int, str] | None = (1, "y_pred"),
                 exact: bool = False, **kwargs: Any) -> Entry:
    """An entry of a function of per-sample arrays (the first ``sample_args`` arguments)."""

    def make(tmp: Path) -> Case:
        return Case(make_args(), dict(kwargs))

    def empty(tmp: Path) -> Case:
        args = make_args()
        return Case(tuple(np.asarray(a)[:0] if i < sample_args else a
                          for i, a in enumerate(args)), dict(kwargs))

    nan = None if nan_field is None else (lambda tmp: _with_nan(make(tmp), *nan_field))
    return Entry(name, function, make, _flat, lambda c, rng: _permuted(c, rng, sample_args),
                 empty, nan, exact)


def _flat(result: Any) -> list:
    """Every number of a result (float, array, tuple or named tuple of them) as a list."""
    if isinstance(result, tuple):
        return [_flat(part) for part in result]
    return np.asarray(result, dtype=np.float64).ravel().tolist()


def _pair() -> tuple:
    return _labels(1), _labels(2)


def _scored() -> tuple:
    return _labels(1), np.random.default_rng(3).permutation(_N) / _N + 0.01


def _score_matrix() -> tuple:
    return np.random.default_rng(4).integers(0, 3, _N), np.random.default_rng(5).random((_N, 3))


def _real_pair() -> tuple:
    return _values(6), _values(7)


_COSTS = np.array([[0.0, 1.0], [5.0, 0.0]])

CLASSIFICATION = [
    sample_entry("confusion_matrix", dc.confusion_matrix, _pair, exact=True),
    *[sample_entry(f.__name__, f, _pair, zero_division=0)
      for f in (dc.precision, dc.recall, dc.specificity, dc.false_positive_rate,
                dc.false_negative_rate, dc.f1_score)],
    sample_entry("precision_per_class", dc.precision, _pair, average=None, zero_division=0),
    sample_entry("fbeta_score", dc.fbeta_score, _pair, beta=2.0, average="macro"),
    *[sample_entry(f.__name__, f, _pair)
      for f in (dc.accuracy, dc.error_rate, dc.balanced_accuracy, dc.cohen_kappa,
                dc.matthews_corrcoef)],
    sample_entry("expected_cost", lambda y, p, c: dc.expected_cost(y, p, c),
                 lambda: (*_pair(), _COSTS)),
    *[sample_entry(f.__name__, f, _scored, nan_field=(1, "scores"))
      for f in (dc.roc_auc_score, dc.average_precision, dc.pr_auc_trapezoid,
                dc.break_even_point)],
    sample_entry("counts_at_threshold", lambda y, s: dc.counts_at_threshold(y, s, 0.5), _scored,
                 nan_field=(1, "scores")),
    *[sample_entry(f.__name__, f, _scored, nan_field=(1, "scores"), exact=True)
      for f in (dc.roc_curve, dc.precision_recall_curve)],
    sample_entry("cost_curve", dc.cost_curve, _scored, nan_field=(1, "scores")),
    sample_entry("top_k_accuracy", dc.top_k_accuracy, _score_matrix,
                 nan_field=(1, "score_matrix"), k=2),
    # element-wise: its output follows the input's order, so no shuffle
    dataclasses.replace(
        sample_entry("probability_cost", dc.probability_cost, lambda: (np.linspace(0, 1, _N),),
                     sample_args=1, nan_field=(0, "p_positive"), cost_fn=5.0, cost_fp=1.0),
        shuffle=None),
    sample_entry("precision_recall_fscore_from_matrices",
                 dc.precision_recall_fscore_from_matrices,
                 lambda: (np.random.default_rng(8).integers(0, 9, (6, 3, 3)),), sample_args=1,
                 nan_field=(0, "confusion_matrices"), average="macro", zero_division=0),
    *[sample_entry(f.__name__, f, _real_pair)
      for f in (dc.mean_squared_error, dc.root_mean_squared_error, dc.mean_absolute_error,
                dc.root_mean_squared_log_error)],
]


# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------


def _gt_rows(dataset: deteval.Dataset) -> list:
    """The objects as id-free rows (image file, class name, box, area, crowd), sorted."""
    gt = dataset.gt
    files, names = dataset.images.file_names, dataset.categories.names
    return sorted((files[i], names[c], tuple(b), a, bool(crowd)) for i, c, b, a, crowd in zip(
        gt.image_index.tolist(), gt.category_index.tolist(), gt.xywh.tolist(),
        gt.area.tolist(), gt.iscrowd.tolist()))


def _dt_rows(dataset: deteval.Dataset, detections: deteval.Detections) -> list:
    files, names = dataset.images.file_names, dataset.categories.names
    return sorted((files[i], names[c], tuple(b), s) for i, c, b, s in zip(
        detections.image_index.tolist(), detections.category_index.tolist(),
        detections.as_xywh().tolist(), detections.scores.tolist()))


def _write(tmp: Path, name: str, data: Any) -> Path:
    path = tmp / name
    path.write_text(json.dumps(data))
    return path


def _gt_nan() -> dict:
    gt = coco_inputs()[0]
    gt["annotations"][2]["bbox"][1] = float("nan")
    return gt


def _results_nan() -> list:
    results = coco_inputs()[1]
    results[3]["score"] = float("nan")
    return results


def _relabelled(rng: np.random.Generator) -> tuple[dict, list]:
    gt, results, _ = relabelled(*coco_inputs(), rng)
    return gt, results


def reader_entries() -> list[Entry]:
    """read_coco_gt and read_coco_results on dicts, read_gt and read_detections on files.

    The shuffled case of a results reader reads the relabelled results against the
    relabelled ground truth; ``numbers`` then compares id-free rows."""

    def coco_gt(tmp: Path, gt: dict | None = None) -> Case:
        return Case((coco_inputs()[0] if gt is None else gt,))

    def coco_results(tmp: Path, gt: dict | None = None, results: list | None = None) -> Case:
        gt_dict, results_list = coco_inputs()
        dataset = deteval.read_coco_gt(gt or gt_dict)
        return Case((results_list if results is None else results, dataset))

    def gt_file(tmp: Path, gt: dict | None = None) -> Case:
        return Case((_write(tmp, "gt.json", coco_inputs()[0] if gt is None else gt),))

    def dt_file(tmp: Path, gt: dict | None = None, results: list | None = None) -> Case:
        gt_dict, results_list = coco_inputs()
        dataset = deteval.read_coco_gt(gt or gt_dict)
        return Case((_write(tmp, "dt.json", results_list if results is None else results),
                     dataset))

    def shuffled_gt(maker):
        def shuffle(case: Case, rng: np.random.Generator) -> Case:
            tmp = case.args[0].parent if isinstance(case.args[0], Path) else None
            return maker(tmp, _relabelled(rng)[0])
        return shuffle

    def shuffled_dt(maker):
        def shuffle(case: Case, rng: np.random.Generator) -> Case:
            tmp = case.args[0].parent if isinstance(case.args[0], Path) else None
            return maker(tmp, *_relabelled(rng))
        return shuffle

    def with_dataset(read):
        # the dataset is an input, and the id-free rows need it: return both
        return lambda source, dataset: (dataset, read(source, dataset))

    empty_gt = {**coco_inputs()[0], "annotations": []}
    return [
        Entry("read_coco_gt", deteval.read_coco_gt, coco_gt, _gt_rows, shuffled_gt(coco_gt),
              lambda tmp: coco_gt(tmp, empty_gt), lambda tmp: (coco_gt(tmp, _gt_nan()), "bbox")),
        Entry("read_gt", deteval.read_gt, gt_file, _gt_rows, shuffled_gt(gt_file),
              lambda tmp: gt_file(tmp, empty_gt), lambda tmp: (gt_file(tmp, _gt_nan()), "bbox")),
        Entry("read_coco_results", with_dataset(deteval.read_coco_results),
              coco_results, lambda r: _dt_rows(*r), shuffled_dt(coco_results),
              lambda tmp: coco_results(tmp, None, []),
              lambda tmp: (coco_results(tmp, None, _results_nan()), "score"),
              result=lambda returned: returned[1]),
        Entry("read_detections", with_dataset(deteval.read_detections), dt_file,
              lambda r: _dt_rows(*r), shuffled_dt(dt_file), lambda tmp: dt_file(tmp, None, []),
              lambda tmp: (dt_file(tmp, None, _results_nan()), "score"),
              result=lambda returned: returned[1]),
    ]


READERS = reader_entries()

ENTRIES = PROTOCOLS + DIAGNOSTICS + CLASSIFICATION + READERS

#: (entry name, contract) -> why it fails; run as strict xfails until fixed.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def entries_for(contract: str, hook: str | None = None) -> list:
    """The entries that define ``hook``, as pytest params (known gaps as strict xfails)."""
    params = []
    for entry in ENTRIES:
        if hook is not None and getattr(entry, hook) is None:
            continue
        marks = ()
        if (entry.name, contract) in KNOWN_GAPS:
            marks = pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[entry.name, contract])
        params.append(pytest.param(entry, id=entry.name, marks=marks))
    return params


# --------------------------------------------------------------------------------------------
# Helpers of the contracts
# --------------------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Deep equality with arrays (values, dtype, shape, writeable flag) and NaN == NaN."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and a.flags.writeable == b.flags.writeable
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, Path) and isinstance(b, Path):
        return a == b
    if isinstance(a, deteval.Dataset):  # an input built by a reader: compare its columns
        return same(_gt_rows(a), _gt_rows(b))
    return bool(a == b)


def snapshot(case: Case) -> Any:
    """A deep copy of the inputs, with the bytes of file inputs."""
    files = {a: a.read_bytes() for a in case.args if isinstance(a, Path)}
    return copy.deepcopy((case.args, case.kwargs)), files


def arrays_in(result: Any, seen: set | None = None):
    """Every numpy array reachable from ``result`` (dataclass fields, attributes, tuples,
    lists, dicts), with a path naming it."""
    seen = set() if seen is None else seen
    if id(result) in seen:
        return
    seen.add(id(result))
    if isinstance(result, np.ndarray):
        if result.dtype != object:
            yield "", result
        return
    if isinstance(result, dict):
        items = result.items()
    elif isinstance(result, (list, tuple)):
        items = enumerate(result)
    elif dataclasses.is_dataclass(result):
        items = ((f.name, getattr(result, f.name)) for f in dataclasses.fields(result))
    elif hasattr(result, "__dict__") and type(result).__module__.startswith("deteval"):
        items = vars(result).items()
    else:
        return
    for key, value in items:
        for path, array in arrays_in(value, seen):
            yield f"[{key!r}]{path}", array


def arrays_held(result: Any):
    """The arrays of :func:`arrays_in` held by a deteval object (an attribute of one, or in
    a container one holds); a bare array, or one in a tuple or dict the function returned,
    is numpy's to pickle."""
    def owned(value: Any) -> bool:
        return (not isinstance(value, (np.ndarray, dict, list, tuple))
                and type(value).__module__.startswith("deteval"))
    if owned(result):
        yield from arrays_in(result)
    elif isinstance(result, (dict, list, tuple)):
        for key, value in (result.items() if isinstance(result, dict) else enumerate(result)):
            for path, array in arrays_held(value):
                yield f"[{key!r}]{path}", array


def assert_same_numbers(entry: Entry, a: Any, b: Any) -> None:
    if entry.exact:
        assert same(a, b), entry.name
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   rtol=1e-12, atol=1e-15, err_msg=entry.name)


# --------------------------------------------------------------------------------------------
# The contracts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", entries_for("inputs untouched"))
def test_inputs_are_left_untouched(entry, tmp_path):
    case = entry.make(tmp_path)
    (args, kwargs), files = snapshot(case)
    entry(case)
    assert same(case.args, args) and same(case.kwargs, kwargs)
    assert {a: a.read_bytes() for a in files} == files


@pytest.mark.parametrize("entry", entries_for("read-only results"))
def test_result_arrays_are_read_only(entry, tmp_path):
    result = entry.result(entry(entry.make(tmp_path)))
    writable = [path or "result" for path, array in arrays_in(result) if array.flags.writeable]
    assert not writable, f"{entry.name}: writable arrays {writable[:5]}"


@pytest.mark.parametrize("entry", entries_for("read-only after pickling"))
def test_result_arrays_stay_read_only_after_pickling(entry, tmp_path):
    result = entry.result(entry(entry.make(tmp_path)))
    before = dict(arrays_held(result))
    if not before:
        pytest.skip("no deteval object in the result: its bare arrays are numpy's pickles")
    for way, again in (("pickled", pickle.loads(pickle.dumps(result))),
                       ("deep-copied", copy.deepcopy(result))):
        after = dict(arrays_held(again))
        assert after.keys() == before.keys(), f"{entry.name} {way}: other arrays"
        writable = [path or "result" for path, array in after.items() if array.flags.writeable]
        assert not writable, f"{entry.name} {way}: writable arrays {writable[:5]}"
        assert all(same(after[p], before[p]) for p in before), f"{entry.name} {way}: values"


@pytest.mark.parametrize("entry", entries_for("order and ids", "shuffle"))
def test_order_and_ids_do_not_change_the_numbers(entry, tmp_path):
    case = entry.make(tmp_path)
    expected = entry.numbers(entry(case))
    for seed in range(3):
        other = entry.shuffle(entry.make(tmp_path), np.random.default_rng(seed))
        assert_same_numbers(entry, entry.numbers(entry(other)), expected)


@pytest.mark.parametrize("entry", entries_for("empty input", "empty"))
def test_empty_input_is_defined(entry, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            entry(entry.empty(tmp_path))
        except (ValueError, TypeError, DetevalError) as error:
            assert str(error), f"{entry.name}: {type(error).__name__} without a message"
    foreign = [w for w in caught
               if not issubclass(w.category, (UndefinedMetricWarning, FormatWarning))]
    assert not foreign, [str(w.message) for w in foreign]


@pytest.mark.parametrize("entry", entries_for("NaN refused", "nan"))
def test_nan_is_refused_naming_the_field(entry, tmp_path):
    case, field = entry.nan(tmp_path)
    with pytest.raises((ValueError, TypeError), match=field):
        entry(case)


@pytest.mark.parametrize("entry", entries_for("nothing printed"))
def test_nothing_is_printed(entry, tmp_path, capsys):
    case = entry.make(tmp_path)
    capsys.readouterr()
    entry(case)
    assert capsys.readouterr() == ("", "")
