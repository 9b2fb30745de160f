"""pydriver.py: speaks to the context drivers (src/drivers/sbxfs-pydriver, sbxfs-jsdriver) as the
daemon will (fds 0-4, frames), for tests/integration/test_pydriver.py, test_jsdriver.py and
tests/bench/bench_contexts.py."""

import json
import os
import select
import signal
import struct
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DRIVER = REPO / "src" / "drivers" / "sbxfs-pydriver"
JSDRIVER = REPO / "src" / "drivers" / "sbxfs-jsdriver"


class Cell:
    def __init__(self):
        self.stdout = b""
        self.stderr = b""
        self.results = []
        self.error = None


class Driver:
    def __init__(self, env=None, driver=DRIVER, cmd=None):
        """cmd: the driver's command line (default: the Python driver, `driver`, under python3)."""
        req_r, self._req_w = os.pipe()
        self._ev_r, ev_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self._err_r, err_w = os.pipe()
        for fd in (self._out_r, self._err_r, self._ev_r):
            os.set_blocking(fd, False)

        def child_fds():
            # dup2 onto itself would keep close-on-exec; go through free descriptors.
            r, w = os.dup(req_r), os.dup(ev_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            cmd or ["/usr/bin/python3", str(driver)], stdin=subprocess.DEVNULL, stdout=out_w,
            stderr=err_w, close_fds=False, preexec_fn=child_fds,
            env=env or {"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
        for fd in (req_r, ev_w, out_w, err_w):
            os.close(fd)
        self._evbuf = b""
        self.started = Cell()  # what it wrote to 1 and 2 before ready
        self.ready = self._next_event(self.started, 60)

    def _drain(self, cell):
        for fd, attr in ((self._out_r, "stdout"), (self._err_r, "stderr")):
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                setattr(cell, attr, getattr(cell, attr) + chunk)

    def _next_event(self, cell, timeout, on_output=None):
        deadline = time.monotonic() + timeout
        while True:
            if len(self._evbuf) >= 4:
                (n,) = struct.unpack(">I", self._evbuf[:4])
                if len(self._evbuf) >= 4 + n:
                    ev = json.loads(self._evbuf[4:4 + n])
                    self._evbuf = self._evbuf[4 + n:]
                    return ev
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no event from the driver")
            select.select([self._ev_r, self._out_r, self._err_r], [], [], left)
            self._drain(cell)
            if on_output:
                on_output(cell)
            try:
                chunk = os.read(self._ev_r, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                return None
            self._evbuf += chunk

    def send(self, code):
        body = json.dumps({"op": "run", "code": code}).encode()
        os.write(self._req_w, struct.pack(">I", len(body)) + body)

    def collect(self, timeout=60, on_output=None):
        """Events until done; None as the last value when the driver died."""
        cell = Cell()
        while True:
            ev = self._next_event(cell, timeout, on_output)
            if ev is None:
                cell.error = cell.error or {"name": "DriverExited"}
                return cell
            if ev["ev"] == "result":
                cell.results.append(ev)
            elif ev["ev"] == "error":
                cell.error = ev
            elif ev["ev"] == "done":
                self._drain(cell)
                return cell

    def run(self, code, timeout=60):
        self.send(code)
        return self.collect(timeout)

    def interrupt(self):
        self.proc.send_signal(signal.SIGINT)

    def close(self):
        os.close(self._req_w)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._ev_r, self._out_r, self._err_r):
            os.close(fd)
