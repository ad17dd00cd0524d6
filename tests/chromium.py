"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ending in NUL on file descriptors 3 and 4), with nothing beyond the standard
library; the report's browser tests use it. ``CHROMIUM`` is None when Chromium is not
installed (``.ci/run`` installs Debian's ``chromium`` when it can)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


CHROMIUM = _chromium()
SKIP_REASON = ("Chromium is not installed (/usr/bin/chromium or chromium on PATH; Debian: "
               "apt-get install chromium)")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--window-size=1280,800")
DEADLINE = 90.0  # seconds for a whole browser session
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




def start(profile: Path, deadline: float) -> Browser:
    """A browser with one page session, its Runtime, Log, Network and Page events on."""
    browser = Browser(profile, deadline)
    try:
        targets = browser.send("Target.getTargets")["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        target = pages[0]["targetId"] if pages else browser.send(
            "Target.createTarget", {"url": "about:blank"})["targetId"]
        browser.session = browser.send("Target.attachToTarget",
                                       {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.send(f"{domain}.enable")
    except BaseException:
        browser.close()
        raise
    return browser


def open_page(browser: Browser, url: str, *, width: int = 1280, height: int = 800) -> int:
    """Load ``url`` in a ``width`` x ``height`` viewport; returns the index of the first
    event of this page in ``browser.events``."""
    browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False})
    first = len(browser.events)
    browser.send("Page.navigate", {"url": url})
    while True:
        event = browser._read_message()
        browser.events.append(event)
        if event.get("method") == "Page.loadEventFired":
            return first


def problems(events: list[dict], allowed: tuple[str, ...] = ("file://", "data:")) -> list[str]:
    """Script errors, console errors and warnings, failed requests and requests to any
    address not starting with one of ``allowed``."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(params["exceptionDetails"].get("text"))
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning",
                                                                         "assert"):
            found.append(f"console.{params['type']}: {params['args']}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            found.append(f"log: {params['entry']['text']} {params['entry'].get('url')}")
        elif method == "Network.loadingFailed":
            found.append(f"failed request: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(allowed):
                found.append(f"request outside: {url}")
    return found
