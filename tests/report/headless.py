"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only).

Chromium is started with --remote-debugging-pipe: it reads commands on fd 3 and
writes replies and events on fd 4, each a JSON message ended by a NUL byte. Every
event is kept, so a test can look for console errors, uncaught exceptions, CSP
violations and network requests after the fact.
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ProtocolError(RuntimeError):
    pass


class Browser:
    def __init__(self, executable, log_path, width=1400, height=1000):
        self.width = width
        self.profile = tempfile.mkdtemp(prefix="attngeom-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def preexec():  # child: our pipe ends become fds 3 and 4 (moved high first, so no clobbering)
            r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        args = [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
                "--user-data-dir=" + self.profile, "--remote-debugging-pipe",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                     preexec_fn=preexec, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []  # (sessionId, method, params)
        self.session = None

    # -- protocol --------------------------------------------------------------------

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("timed out waiting for the browser")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise ProtocolError("browser closed the pipe (crashed?); exit code %s" % self.proc.poll())
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=True, timeout=60):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise ProtocolError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append((reply.get("sessionId"), reply["method"], reply.get("params", {})))

    def open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(domain + ".enable")
        self.resize(1000)

    def resize(self, height):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": int(height), "deviceScaleFactor": 1, "mobile": False})

    def navigate(self, url):
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise ProtocolError("navigation to %s failed: %s" % (url, result["errorText"]))

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise ProtocolError("evaluate failed: %s" % result["exceptionDetails"])
        return result["result"].get("value")

    def wait_for(self, expression, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        return None

    def screenshot(self, path, max_height=16000, timeout=180):
        """A full-page PNG; painting a tall page in software takes long on a loaded machine."""
        height = min(max_height, int(self.evaluate("document.documentElement.scrollHeight")))
        self.resize(height)
        time.sleep(0.3)
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                         timeout=timeout)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return height

    # -- what the page did -------------------------------------------------------------

    def problems(self):
        """Console errors and warnings, uncaught exceptions, browser log errors (CSP
        violations, failed loads) and any request that would leave the machine."""
        out = []
        for _, method, p in self.events:
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                out.append("console.%s: %s" % (p["type"], text))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("uncaught exception: %s %s" % (d.get("text", ""), d.get("exception", {}).get("description", "")))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append("browser log error (%s): %s %s" % (e.get("source"), e.get("text"), e.get("url", "")))
            elif method == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:", "blob:", "about:")):
                    out.append("network request: %s" % url)
        return out

    def close(self):
        try:
            if self.proc.poll() is None:
                self.send("Browser.close", session=False, timeout=10)
        except (ProtocolError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
