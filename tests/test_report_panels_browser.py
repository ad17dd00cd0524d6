"""The report with every diagnostics panel (error attribution, calibration, intervals beside
the numbers, slices) in headless Chromium at 1280x800: the script runs, no console error or
request outside the folder, no horizontal overflow, no two texts of a figure overlap, the
per-class table (one more column: the AP interval) fits its box; the same for a comparison
with paired intervals. Skipped when Chromium is not installed."""

from __future__ import annotations

import json
import time

import pytest
import reportgen
from chromium import CHROMIUM, DEADLINE, SKIP_REASON, open_page, problems, start
from test_report_browser import OVERLAPS

from deteval.report import compare_report, write_report

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)

FITS = ("(() => { const t = document.getElementById('TABLE'); "
        "return t.offsetWidth <= t.parentNode.clientWidth; })()")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    session = start(tmp_path_factory.mktemp("chromium") / "profile",
                    time.monotonic() + DEADLINE)
    yield session
    session.close()


def _check_page(browser, index, sections: list[str]) -> None:
    first = open_page(browser, index.resolve().as_uri())
    assert browser.evaluate("document.body.dataset.ready") == "1"
    for key in sections:
        assert browser.evaluate(f"document.getElementById('{key}') !== null"), key
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    assert browser.evaluate(FITS.replace("TABLE", "per-class-table")) is True
    assert browser.evaluate(OVERLAPS) == []
    assert problems(browser.events[first:]) == []


def test_report_with_every_panel_at_1280_pixels(browser, tmp_path):
    gt, dt = reportgen.make_scene(80, 60, seed=11)
    tags = {image["id"]: {"camera": f"camera_{image['id'] % 4}"} for image in gt["images"]}
    images = reportgen.write_images(gt, tmp_path / "images")
    index = write_report(gt, dt, tmp_path / "report", images_dir=images, gallery=4, ci=20,
                         slices={"by": ["camera", "size", "aspect"], "tags": tags})
    panels = json.loads((index.parent / "results.json").read_text())["panels"]
    assert {"tide", "lrp", "calibration", "intervals", "slices"} <= set(panels)
    _check_page(browser, index, ["summary", "per-class", "slices", "error-attribution",
                                 "calibration"])
    # One bar per TIDE row; one per calibration bin, as high as its precision is above 0.
    heights = ("Array.from(document.querySelectorAll('rect.{}'))"
               ".map(r => r.getBoundingClientRect().height > 0)")
    assert browser.evaluate(heights.format("dap")) == [True] * 8
    precision = panels["calibration"]["reliability"]["precision"]
    assert browser.evaluate(heights.format("bin")) == [bool(p) for p in precision]
    assert len(precision) == panels["calibration"]["bins"] == 10
    assert browser.evaluate(FITS.replace("TABLE", "slices-table")) is True


def test_comparison_with_paired_intervals_at_1280_pixels(browser, tmp_path):
    gt, dt = reportgen.make_scene(80, 40, seed=4)
    _, other = reportgen.make_scene(80, 40, seed=5)
    index = compare_report(gt, dt, other, tmp_path / "report", gallery=0, ci=20,
                           names=("first run", "second run"))
    _check_page(browser, index, ["summary", "per-class"])
    headers = browser.evaluate("Array.from(document.querySelectorAll('#per-class-table th'))"
                               ".map(h => h.textContent)")
    assert "\u0394AP 95% CI" in headers and "p (Holm)" in headers
