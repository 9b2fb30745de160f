"""benchutil.py: helpers shared by the benchmarks in tests/bench (not run on its own).

The scripts import it with their own directory put first on sys.path, so that they run both as
`tests/bench/X.py` and as `/usr/bin/python3 tests/bench/X.py` from anywhere.
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def sbxfs_binary():
    env = os.environ.get("SBXFS_BIN")
    return Path(env).expanduser().resolve() if env else REPO / "build" / "sbxfs"


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_to_eof(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def handle_exec(sdir):
    """`echo hi` through a run handle of session dir sdir: open cmd O_RDWR, write, read the run
    number, then read runs/N/result and check it."""
    fd = os.open(sdir / "cmd", os.O_RDWR)
    try:
        os.write(fd, b"echo hi")
        n = int(os.read(fd, 64))
    finally:
        os.close(fd)
    res = json.loads(read_to_eof(str(sdir / "runs" / str(n) / "result")))
    if res["stdout"] != "hi\n" or res["exitCode"] != 0:
        raise RuntimeError(f"run {n}: {res!r}")


def descendants(root):
    """Pids of every live descendant of root (from the ppid field of /proc/*/stat)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after it.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def percentile(sorted_values, q):
    """Nearest-rank percentile of an already sorted list."""
    k = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def med_p90(values):
    """Median and p90 (nearest rank) of values, in any order."""
    values = sorted(values)
    return statistics.median(values), percentile(values, 90)


def start_watchdog(seconds, proc):
    """A daemon timer that kills proc (the sbxfs daemon) if the run takes over seconds; the
    caller cancels it when done."""
    def fire():
        print(f"bench: still running after {seconds}s; killing sbxfs", file=sys.stderr)
        proc.kill()

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


class Mount:
    """A fresh `sbxfs -f` with its workspace, state dir and mount point under tmp (default: a
    new temporary directory), waited for until sessions/default exists.

    extra: more sbxfs arguments, before the mount point; new_session: start the daemon in a
    session of its own; remove_tmp: close() removes tmp (if nothing is left mounted there)."""

    def __init__(self, binary, tmp=None, extra=(), new_session=False, remove_tmp=True):
        self.tmp = tmp if tmp is not None else Path(tempfile.mkdtemp(prefix="sbxfs-bench-"))
        self.remove_tmp = remove_tmp
        self.mnt = self.tmp / "mnt"
        self.ws = self.tmp / "ws"
        for d in (self.ws, self.tmp / "state", self.mnt):
            d.mkdir()
        self.log = open(self.tmp / "sbxfs.log", "wb")
        self.proc = subprocess.Popen(
            [str(binary), "-f", "--workspace", str(self.ws),
             "--state-dir", str(self.tmp / "state"), *extra, str(self.mnt)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=new_session)
        deadline = time.monotonic() + 10
        while not (self.mnt / "sessions" / "default").is_dir():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                sys.exit(f"sbxfs did not mount:\n{self.log_text()}")
            time.sleep(0.02)

    def log_text(self):
        try:
            return (self.tmp / "sbxfs.log").read_text(errors="replace")
        except OSError:
            return ""

    def cgroup_mode(self):
        m = re.search(r"cgroup: (\S+)", self.log_text())
        return m.group(1).rstrip(";,") if m else "?"

    def close(self):
        if self.proc.poll() is None:
            subprocess.run([str(sbxfs_binary()), "-u", str(self.mnt)], stderr=subprocess.DEVNULL)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.log.close()
        if os.path.ismount(self.mnt):  # a killed daemon leaves a dead mount behind
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], stderr=subprocess.DEVNULL)
        if self.remove_tmp and not os.path.ismount(self.mnt):
            shutil.rmtree(self.tmp, ignore_errors=True)
