"""The report in a real browser (headless Chromium, driven over the DevTools protocol by the
helper module ``chromium.py``): at 1280x800 the pages of reports on 20, 80 and 1,203 classes
run their script without an error, load every picture from the folder and nothing from
anywhere else, do not overflow sideways, keep the figures' texts apart, sort and page the
per-class table, and show a confusion cell's images when the cell is clicked; the
single-file page makes no request beyond itself; a comparison of two runs renders too.
Skipped when Chromium is not installed."""

from __future__ import annotations

import base64
import io
import json
import time

import pytest
import reportgen
from chromium import CHROMIUM, DEADLINE, SKIP_REASON, open_page, problems, start

pytest.importorskip("PIL", reason="the gallery needs Pillow")

from deteval.demo import make_demo  # noqa: E402
from deteval.report import compare_report, write_report  # noqa: E402

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)

# Sizes of the generated scenes: classes -> images (1,203 classes: LVIS's count).
SCENES = {20: 40, 80: 60, 1203: 150}

# Pairs of texts of one figure whose boxes overlap by more than a pixel each way.
OVERLAPS = """
(() => {
  const found = [];
  document.querySelectorAll("svg.plot").forEach((svg, s) => {
    const boxes = Array.from(svg.querySelectorAll("text"))
      .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i][1], b = boxes[j][1];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) { found.push([s, boxes[i][0], boxes[j][0]]); }
      }
    }
  });
  return found.slice(0, 5);
})()"""

PICTURES = """
(async () => {
  const images = Array.from(document.images);
  images.forEach(i => { i.loading = "eager"; });
  await Promise.all(images.map(i => i.complete ? null : new Promise(ok => {
    i.addEventListener("load", ok); i.addEventListener("error", ok); })));
  return images.map(i => [i.getAttribute("src").slice(0, 40), i.naturalWidth]);
})()"""

VISIBLE_SHOTS = ("Array.from(document.querySelectorAll('#gallery-grid figure'))"
                 ".filter(f => !f.hidden).map(f => f.getAttribute('data-cells'))")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chromium")
    session = start(folder / "profile", time.monotonic() + DEADLINE)
    yield session
    session.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Reports of the generated scenes (a small gallery: the pages, not the drawings, are
    under test), keyed by the number of classes."""
    folder = tmp_path_factory.mktemp("scenes")
    out = {}
    for n_classes, n_images in SCENES.items():
        gt, dt = reportgen.make_scene(n_classes, n_images, seed=n_classes)
        images = reportgen.write_images(gt, folder / f"images{n_classes}")
        out[n_classes] = write_report(gt, dt, folder / f"report{n_classes}", images_dir=images,
                                      gallery=4)
    return out


def _screenshot_is_not_blank(browser) -> None:
    from PIL import Image

    shot = browser.send("Page.captureScreenshot", {"format": "png"})
    picture = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
    assert picture.size == (1280, 800)
    colours = picture.getcolors(maxcolors=1 << 20)
    assert len(colours) > 50, f"a blank-looking page: {len(colours)} colours"


def _click_top_confusion(browser, payload) -> None:
    """Click the heatmap cell of the top confusion (it is in the heatmap: its classes are
    the most confused ones); the gallery shows exactly the images holding that cell."""
    top = payload["confusion_view"]["top"][0]
    cell = f"{top['true']}:{top['pred']}"
    expected = [e for e in payload["gallery"]["images"] if cell in e["tags"]["cells"]]
    assert expected, "the gallery holds examples of the top confusion"
    clicked = browser.evaluate(
        f"(() => {{ const r = document.querySelector('rect.cell[data-true=\"{top['true']}\"]"
        f"[data-pred=\"{top['pred']}\"]'); if (!r) return false; r.dispatchEvent("
        "new MouseEvent('click', {bubbles: true})); return true; })()")
    assert clicked, "the top confusion's cell is in the heatmap"
    shown = browser.evaluate(VISIBLE_SHOTS)
    assert len(shown) == len(expected)
    assert all(cell in cells.split() for cells in shown)
    status = browser.evaluate("document.getElementById('gallery-status').textContent")
    assert status.startswith(f"{len(expected)} of {len(payload['gallery']['images'])} images")
    browser.evaluate("document.getElementById('gallery-clear').click()")
    assert len(browser.evaluate(VISIBLE_SHOTS)) == len(payload["gallery"]["images"])


@pytest.mark.parametrize("n_classes", sorted(SCENES))
def test_report_at_1280_pixels(browser, reports, n_classes):
    index = reports[n_classes]
    payload = json.loads((index.parent / "results.json").read_text())
    first = open_page(browser, index.resolve().as_uri())
    assert browser.evaluate("document.body.dataset.ready") == "1"
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    # The per-class table fits its box: no sideways scrolling at 1280 pixels.
    assert browser.evaluate("(() => { const t = document.getElementById('per-class-table'); "
                            "return t.offsetWidth <= t.parentNode.clientWidth; })()")
    assert browser.evaluate(OVERLAPS) == []
    pictures = browser.evaluate(PICTURES)
    assert len(pictures) == len(payload["gallery"]["images"]) > 0
    assert all(width > 0 for _, width in pictures), pictures
    # The heatmap is bounded: at most 30 classes and Unknown.
    n_shown = min(n_classes, 30) + 1
    assert browser.evaluate("document.querySelectorAll('svg.heatmap text.label').length") \
        == 2 * n_shown
    # The per-class table: 50 rows at a time, a filter box that finds a class.
    visible = "Array.from(document.querySelectorAll('#per-class-table tbody tr'))" \
              ".filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    assert len(browser.evaluate(visible)) == min(n_classes, 50)
    name = payload["per_class"][-1]["name"]
    browser.evaluate(f"(() => {{ const i = document.querySelector('[data-pager] input'); "
                     f"i.value = '{name}'; i.dispatchEvent(new Event('input')); }})()")
    assert browser.evaluate(visible) == [name]
    _click_top_confusion(browser, payload)
    # A click on a class row shows the images holding that class.
    k = payload["gallery"]["images"][0]["tags"]["classes"][0]
    row = payload["per_class"][k]["name"]
    browser.evaluate(f"(() => {{ const i = document.querySelector('[data-pager] input'); "
                     f"i.value = '{row}'; i.dispatchEvent(new Event('input')); "
                     "Array.from(document.querySelectorAll('#per-class-table tbody tr'))"
                     ".find(r => !r.hidden).click(); })()")
    expected = [e for e in payload["gallery"]["images"] if k in e["tags"]["classes"]]
    assert len(browser.evaluate(VISIBLE_SHOTS)) == len(expected) > 0
    # A click on an error count shows the images with that error; the search box finds an
    # image by its file name.
    kind = payload["gallery"]["images"][0]["tags"]["errors"][0]
    key = "fn" if kind == "missed" else kind
    browser.evaluate(f"document.querySelector('#outcome-table td[data-key={key}]').click()")
    expected = [e for e in payload["gallery"]["images"] if kind in e["tags"]["errors"]]
    assert len(browser.evaluate(VISIBLE_SHOTS)) == len(expected) > 0
    name = payload["gallery"]["images"][-1]["file_name"]
    browser.evaluate(f"(() => {{ const i = document.getElementById('gallery-search'); "
                     f"i.value = '{name}'; i.dispatchEvent(new Event('input')); }})()")
    assert len(browser.evaluate(VISIBLE_SHOTS)) == 1
    _screenshot_is_not_blank(browser)
    assert problems(browser.events[first:]) == []


def test_sorting_in_chromium(browser, tmp_path):
    gt, dt = make_demo(seed=2, n_images=8)
    index = write_report(gt, dt, tmp_path / "report")
    payload = json.loads((index.parent / "results.json").read_text())
    first = open_page(browser, index.resolve().as_uri())
    names = "Array.from(document.querySelectorAll('#per-class-table tbody tr'))" \
            ".map(r => r.cells[0].textContent)"
    rows = payload["per_class"]
    by_ap = sorted((r for r in rows if r["AP"] >= 0), key=lambda r: r["AP"])
    undefined = [r["name"] for r in rows if r["AP"] < 0]
    header = "document.querySelector('#per-class-table th[data-key=AP]')"
    browser.evaluate(f"{header}.click()")
    assert browser.evaluate(names) == [r["name"] for r in by_ap] + undefined
    browser.evaluate(f"{header}.click()")
    assert browser.evaluate(names) == [r["name"] for r in reversed(by_ap)] + undefined
    assert browser.evaluate(f"{header}.getAttribute('aria-sort')") == "descending"
    assert problems(browser.events[first:]) == []


def test_single_file_makes_no_request_beyond_itself(browser, tmp_path):
    gt, dt = reportgen.make_scene(12, 20, seed=3)
    images = reportgen.write_images(gt, tmp_path / "images")
    page = write_report(gt, dt, tmp_path / "report.html", images_dir=images, gallery=4,
                        single_file=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["images", "report.html"]
    url = page.resolve().as_uri()
    first = open_page(browser, url)
    assert browser.evaluate("document.body.dataset.ready") == "1"
    payload = json.loads(browser.evaluate(
        "document.getElementById('results-json').textContent"))
    pictures = browser.evaluate(PICTURES)
    assert len(pictures) == len(payload["gallery"]["images"]) > 0
    assert all(src.startswith("data:image/jpeg") and width > 0 for src, width in pictures)
    _click_top_confusion(browser, payload)
    requests = [e["params"]["request"]["url"] for e in browser.events[first:]
                if e.get("method") == "Network.requestWillBeSent"]
    assert set(requests) <= {url} or all(r == url or r.startswith("data:") for r in requests)
    assert problems(browser.events[first:], allowed=(url, "data:")) == []


def test_comparison_at_1280_pixels(browser, tmp_path):
    gt, dt = reportgen.make_scene(80, 40, seed=4)
    _, other = reportgen.make_scene(80, 40, seed=5)   # another detector on the same scene
    images = reportgen.write_images(gt, tmp_path / "images")
    index = compare_report(gt, dt, other, tmp_path / "report", images_dir=images, gallery=3,
                           names=("first run", "second run"))
    first = open_page(browser, index.resolve().as_uri())
    assert browser.evaluate("document.body.dataset.ready") == "1"
    assert browser.evaluate("document.documentElement.scrollWidth") <= 1280
    assert browser.evaluate(OVERLAPS) == []
    pictures = browser.evaluate(PICTURES)
    assert len(pictures) == 6 and all(width > 0 for _, width in pictures)
    _screenshot_is_not_blank(browser)
    assert problems(browser.events[first:]) == []
