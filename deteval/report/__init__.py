"""A self-contained HTML report of one evaluation, or of two runs compared.

:func:`write_report` writes one folder that can be opened from disk, copied or archived
whole, with no network access and nothing outside it (or, with ``single_file=True``, one
HTML file with everything embedded):

* ``index.html``: the summary (the 12 COCO numbers, the VOC mAP, LVIS's 13 or
  CrowdPose's 9), a per-class table (sorted by a click on a header, filtered by a search
  box, shown 50 rows at a time),
  the mean precision-recall curve with small multiples of the best and worst classes, the
  F1 curve, AP per class, the confusion heatmap (log colours, confused classes side by
  side, at most 30 classes) with the list of top confusions, the error counts, TIDE's dAP
  per error type and LRP, the reliability diagram with D-ECE and MCE, and a gallery of the
  images with the most errors drawn with their matches; when asked for (``ci=``,
  ``slices=``), bootstrap intervals beside every summary number and class AP, and the slice
  table; every diagnostic by the protocol's own rules (docs/report.md §1.10). A click on a
  confusion cell, a listed confusion, an error count or a class row shows the gallery
  images of it; a search
  box finds images and classes. Figures are inline SVG; CSS and script are inline; nothing
  is fetched.
* ``results.json``: every number the page shows. The page's numbers are formatted from the
  very values written there (and those are the protocol's own: ``COCOResult.stats``,
  ``VOCResult.map`` ...). A ratio that is 0/0 (the recall of a class without objects, the
  precision of one without detections) is undefined: null there and "n/a" on the page.
* ``gallery/*.jpg``: the drawings and their thumbnails, linked relatively.

A second report into the same folder removes the files the first one wrote (listed in
``.deteval-report.json``) and no other. :func:`compare_report` shows two runs on the same
ground truth side by side. The page's sections are :data:`PANELS`, a list of
:class:`Panel` builders to which other diagnostics add theirs (docs/report.md).

Errors and the gallery are counted at one IoU threshold and one score threshold by
:func:`deteval.outcomes.match_outcomes` (the confusion matrix's matching), so the drawn
boxes, the confusion matrix and the error counts agree. That matching, like the F1 curve's
(:func:`deteval.operating_points`), is the COCO rule in continuous coordinates whatever the
protocol: with a VOC protocol its TP and FP can differ slightly from the devkit's (whose
boxes are inclusive pixels and whose rule differs on duplicates), which the per-class table
shows side by side ("VOC TP" and "TP").

Examples
--------
>>> import json, tempfile
>>> import deteval
>>> from deteval.demo import make_demo
>>> gt, dt = make_demo(n_images=8)
>>> with tempfile.TemporaryDirectory() as folder:
...     index = write_report(gt, dt, folder)
...     numbers = json.loads((index.parent / "results.json").read_text())
...     names = sorted(p.name for p in index.parent.iterdir())
>>> names
['.deteval-report.json', 'index.html', 'results.json']
>>> numbers["summary"]["stats"] == deteval.evaluate_coco(gt, dt).stats.tolist()
True
"""

from __future__ import annotations

from ._compare import compare_report
from ._data import FIGURE_FORMATS, PROTOCOLS, f1_optimal_score, format_value
from ._files import MANIFEST
from ._panels import PANELS, Context, Panel
from ._write import write_report

__all__ = ["FIGURE_FORMATS", "MANIFEST", "PANELS", "PROTOCOLS", "Context", "Panel",
           "compare_report", "f1_optimal_score", "format_value", "write_report"]
