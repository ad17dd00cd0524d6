"""The report in a real browser: headless Chromium opens index.html from disk, runs its
script without an error, loads every picture without a failed or outside request, sorts the
per-class table on a click and renders a non-blank page.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), which needs nothing beyond the
standard library. Skipped when Chromium is not installed (``.ci/run`` installs Debian's
``chromium`` when it can).
"""

from __future__ import annotations

import base64
import io
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="reports need matplotlib (pip install 'deteval[plot]')")

from deteval.demo import make_demo  # noqa: E402
from deteval.report import write_report  # noqa: E402


def _chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (/usr/bin/chromium or chromium on "
    "PATH; Debian: apt-get install chromium)")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--window-size=1280,2000")
DEADLINE = 20.0  # seconds for the whole browser session
_LAUNCHER = """
import fcntl, os, sys
commands, replies = (fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3])
os.dup2(commands, 3)
os.dup2(replies, 4)
for fd in {int(sys.argv[1]), int(sys.argv[2]), commands, replies} - {3, 4}:
    os.close(fd)
os.execv(sys.argv[3], sys.argv[3:])
"""


class Browser:
    """Chromium with the DevTools protocol on a pipe; one page session."""

    def __init__(self, profile: Path, deadline: float) -> None:
        self.deadline = deadline
        self.log = profile.parent / "chromium.log"   # a file: a full pipe would block it
        self._log_file = self.log.open("wb")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # A small Python launcher puts the pipe ends on descriptors 3 (commands) and 4
        # (replies), where Chromium expects them, then becomes Chromium.
        self.process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(to_chrome_r), str(from_chrome_w), CHROMIUM,
             *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(to_chrome_r, from_chrome_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self._log_file)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.write_fd, self.read_fd = to_chrome_w, from_chrome_r
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def _read_message(self) -> dict:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe: "
                                       + self.stderr_tail())
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read_message()
            self.events.append(event)
            if event.get("method") == method:
                return event

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def stderr_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-10:])

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                os.write(self.write_fd, json.dumps(
                    {"id": 10**6, "method": "Browser.close"}).encode() + b"\0")
                self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.write_fd)
            os.close(self.read_fd)
            self._log_file.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from PIL import Image, ImageDraw

    gt, dt = make_demo(seed=2, n_images=8)
    folder = tmp_path_factory.mktemp("browser")
    images = folder / "images"
    images.mkdir()
    rng = np.random.default_rng(1)
    for image in gt["images"]:
        picture = Image.new("RGB", (image["width"], image["height"]), (90, 120, 150))
        draw = ImageDraw.Draw(picture)
        for _ in range(8):
            x, y = rng.integers(0, 560), rng.integers(0, 400)
            draw.rectangle([x, y, x + 70, y + 50],
                           fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
        picture.save(images / image["file_name"])
    return write_report(gt, dt, folder / "report", images_dir=images, gallery=4)


def test_report_renders_in_chromium(report, tmp_path):
    started = time.monotonic()
    browser = Browser(tmp_path / "profile", started + DEADLINE)
    try:
        targets = browser.send("Target.getTargets")["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        target = pages[0]["targetId"] if pages else browser.send(
            "Target.createTarget", {"url": "about:blank"})["targetId"]
        browser.session = browser.send("Target.attachToTarget",
                                       {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.send(f"{domain}.enable")
        browser.send("Page.navigate", {"url": report.resolve().as_uri()})
        browser.wait_for("Page.loadEventFired")

        assert browser.evaluate("document.body.dataset.ready") == "1", \
            "the inline script did not run to its end"
        # Every picture loads (lazy ones too) and has pixels.
        loaded = browser.evaluate("""
            (async () => {
              const images = Array.from(document.images);
              images.forEach(i => { i.loading = "eager"; });
              await Promise.all(images.map(i => i.complete ? null : new Promise(ok => {
                i.addEventListener("load", ok); i.addEventListener("error", ok); })));
              return images.map(i => [i.getAttribute("src"), i.naturalWidth]);
            })()""")
        payload = json.loads((report.parent / "results.json").read_text())
        assert len(loaded) == 4 + len(payload["gallery"]["images"])
        assert all(width > 0 for _, width in loaded), loaded

        # Sorting: a click on "AP" sorts ascending (undefined last), a second descending.
        names = "Array.from(document.querySelectorAll('#per-class-table tbody tr'))" \
                ".map(r => r.cells[0].textContent)"
        rows = payload["per_class"]
        by_ap = sorted((r for r in rows if r["AP"] >= 0), key=lambda r: r["AP"])
        undefined = [r["name"] for r in rows if r["AP"] < 0]
        browser.evaluate("document.querySelector('#per-class-table th[data-key=AP]').click()")
        assert browser.evaluate(names) == [r["name"] for r in by_ap] + undefined
        browser.evaluate("document.querySelector('#per-class-table th[data-key=AP]').click()")
        assert browser.evaluate(names) == [r["name"] for r in reversed(by_ap)] + undefined
        assert browser.evaluate(
            "document.querySelector('#per-class-table th[data-key=AP]')"
            ".getAttribute('aria-sort')") == "descending"

        shot = browser.send("Page.captureScreenshot", {"format": "png"})
        elapsed = time.monotonic() - started
    finally:
        browser.close()

    from PIL import Image

    picture = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
    assert picture.width >= 1000
    colours = picture.getcolors(maxcolors=1 << 20)
    assert len(colours) > 500, f"a blank-looking page: {len(colours)} colours"
    assert max(count for count, _ in colours) < 0.9 * picture.width * picture.height

    problems = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            problems.append(params["exceptionDetails"].get("text"))
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning",
                                                                          "assert"):
            problems.append(f"console.{params['type']}: {params['args']}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            problems.append(f"log: {params['entry']['text']} {params['entry'].get('url')}")
        elif method == "Network.loadingFailed":
            problems.append(f"failed request: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(("file://", "data:")):
                problems.append(f"request outside the folder: {url}")
    assert problems == []
    assert elapsed < DEADLINE
