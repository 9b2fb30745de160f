"""Background processes: sessions/ID/procs/NAME/ as the SDK's Process objects."""

import codecs
import os
import queue
import random
import string
import threading
import time
from datetime import datetime, timezone

from . import osio
from .commands import env_cwd_prefix
from .times import iso
from .errors import (ProcessExitedBeforeReadyError, ProcessReadyTimeoutError, map_error)
from .fsio import follow, parse_status, read_snapshot, read_text, submit, write_control
from .names import check_name, is_name

_STATES = {"idle": "starting", "starting": "starting", "running": "running"}


def _unix_time(value):
    if not value or value == "-":
        return None
    return datetime.fromtimestamp(float(value), tz=timezone.utc)


def _signal_name(signal):
    return str(signal if signal is not None else "TERM").removeprefix("SIG")


def _in_thread(fn, timeout, on_timeout):
    """fn() in a daemon thread, waited for at most `timeout` ms (None: no limit). A blocked read
    left behind ends with the process."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(None if timeout is None else timeout / 1000)
    if t.is_alive():
        raise on_timeout()
    if "error" in box:
        raise box["error"]
    return box.get("value")


class Process:
    def __init__(self, session, id):
        self.session = session
        self.id = check_name(id, "process")
        self.session_id = session.id
        self.dir = os.path.join(session.dir, "procs", id)
        self.pid = 0
        self.command = ""
        self.status = "starting"
        self.start_time = None
        self.end_time = None
        self.exit_code = None

    def __repr__(self):
        return f"Process(id={self.id!r}, status={self.status!r}, pid={self.pid})"

    def _fail(self, exc):
        return map_error(exc, "process", f"process {self.id}")

    def refresh(self):
        """Reads status (and cmd) again; returns self."""
        try:
            st = parse_status(read_text(os.path.join(self.dir, "status")))
            if not self.command:
                self.command = read_text(os.path.join(self.dir, "cmd")).removesuffix("\n")
        except OSError as exc:
            raise self._fail(exc) from None
        self.status = _STATES.get(st.get("state"), st.get("state"))
        self.pid = int(st.get("pid", 0) or 0)
        self.start_time = _unix_time(st.get("started"))
        self.end_time = _unix_time(st.get("ended"))
        self.exit_code = int(st["exit"]) if st.get("exit", "-") != "-" else None
        return self

    def get_status(self):
        return self.refresh().status

    def kill(self, signal=None):
        """The signal goes to its whole tree; KILL follows after the session's grace."""
        try:
            write_control(os.path.join(self.dir, "ctl"), f"kill {_signal_name(signal)}\n")
        except ProcessLookupError:
            pass
        except OSError as exc:
            raise self._fail(exc) from None

    def get_logs(self):
        try:
            out, err = (read_snapshot(os.path.join(self.dir, s)) for s in ("stdout", "stderr"))
        except OSError as exc:
            raise self._fail(exc) from None
        return {"stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace"),
                "process_id": self.id}

    def wait_for_log(self, pattern, timeout=None):
        """Waits until a line of stdout or stderr holds `pattern` (a str or a compiled regex);
        returns {"line", "match"}."""
        test = (lambda line: pattern in line) if isinstance(pattern, str) else pattern.search
        found = queue.Queue()

        def watch(stream):
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            pending = [""]
            hit = []

            def on_chunk(data):
                lines = (pending[0] + decoder.decode(data)).split("\n")
                pending[0] = lines.pop()
                for line in lines:
                    if not hit and test(line):
                        hit.append(line)
            try:
                follow(os.path.join(self.dir, stream), on_chunk, lambda: bool(hit))
            except OSError as exc:
                found.put(self._fail(exc))
                return
            if not hit and pending[0] and test(pending[0]):
                hit.append(pending[0])
            found.put(hit[0] if hit else None)

        for stream in ("stdout", "stderr"):
            threading.Thread(target=watch, args=(stream,), daemon=True).start()
        deadline = None if timeout is None else time.monotonic() + timeout / 1000
        for _ in range(2):
            try:
                got = found.get(timeout=None if deadline is None
                                else max(0, deadline - time.monotonic()))
            except queue.Empty:
                raise ProcessReadyTimeoutError(
                    f"process {self.id}: no log line matching {pattern!r} within {timeout} ms"
                ) from None
            if isinstance(got, Exception):
                raise got
            if got is not None:
                match = None if isinstance(pattern, str) else pattern.search(got)
                return {"line": got, "match": match}
        raise ProcessExitedBeforeReadyError(
            f"process {self.id} ended without a log line matching {pattern!r}")

    def wait_for_port(self, port, timeout=None):
        """Waits until its tree listens on TCP `port` (its `ports` file)."""
        deadline = None if timeout is None else time.monotonic() + timeout / 1000
        delay = 0.01
        while True:
            try:
                ports = read_text(os.path.join(self.dir, "ports")).split()
            except OSError as exc:
                raise self._fail(exc) from None
            if str(port) in ports:
                return
            status = self.get_status()
            if status not in ("running", "starting"):
                raise ProcessExitedBeforeReadyError(
                    f"process {self.id} ended ({status}) before listening on port {port}")
            if deadline is not None and time.monotonic() + delay > deadline:
                raise ProcessReadyTimeoutError(
                    f"process {self.id}: port {port} not listening within {timeout} ms")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def wait_for_exit(self, timeout=None):
        def wait():
            try:
                return int(read_text(os.path.join(self.dir, "exit")))
            except OSError as exc:
                raise self._fail(exc) from None
        code = _in_thread(wait, timeout, lambda: ProcessReadyTimeoutError(
            f"process {self.id} still running after {timeout} ms"))
        self.refresh()
        return {"exit_code": code}


def _procs_dir(session):
    return os.path.join(session.dir, "procs")


def _new_id(prefix):
    tail = "".join(random.choices(string.ascii_lowercase + string.digits, k=8))
    return f"{prefix}-{tail}"


def start_process(session, command, process_id=None, env=None, cwd=None, encoding=None,
                  auto_cleanup=False, timeout=None):
    proc = Process(session, _new_id("proc") if process_id is None else process_id)
    try:
        osio.mkdir(proc.dir)
        if timeout:
            write_control(os.path.join(proc.dir, "ctl"), f"timeout {timeout}\n")
        submit(os.path.join(proc.dir, "cmd"), env_cwd_prefix(env, cwd) + command)
    except OSError as exc:
        raise proc._fail(exc) from None
    proc.command = command
    proc.refresh()
    if auto_cleanup:
        def cleanup():
            try:
                read_text(os.path.join(proc.dir, "exit"))
                osio.rmdir(proc.dir)
            except OSError:
                pass
        threading.Thread(target=cleanup, daemon=True).start()
    return proc


def get_process(session, id):
    return Process(session, id).refresh()


def list_processes(session):
    try:
        names = sorted(n for n in osio.listdir(_procs_dir(session)) if n != "ctl" and is_name(n))
    except OSError as exc:
        raise map_error(exc, "session", f"session {session.id}") from None
    out = []
    for name in names:
        try:
            out.append(get_process(session, name))
        except Exception:  # removed meanwhile
            continue
    return out


def kill_all_processes(session):
    """Every running process of the session gets TERM (then KILL after the grace); returns
    how many."""
    running = [p for p in list_processes(session) if p.status == "running"]
    try:
        write_control(os.path.join(_procs_dir(session), "ctl"), "kill\n")
    except OSError as exc:
        raise map_error(exc, "session", f"session {session.id}") from None
    return len(running)


def cleanup_completed_processes(session):
    """Forgets every process that has ended; returns how many."""
    count = 0
    for p in list_processes(session):
        if p.status in ("running", "starting"):
            continue
        try:
            osio.rmdir(p.dir)
            count += 1
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise p._fail(exc) from None
    return count


def stream_process_logs(session, id):
    """stdout and stderr events as they come, then `exit`."""
    proc = Process(session, id).refresh()
    events = queue.Queue()
    threads = []
    for stream in ("stdout", "stderr"):
        decoder = codecs.getincrementaldecoder("utf-8")("replace")

        def run(stream=stream, decoder=decoder):
            def on_chunk(data):
                text = decoder.decode(data)
                if text:
                    events.put({"type": stream, "timestamp": iso(), "data": text,
                                "process_id": id})
            follow(os.path.join(proc.dir, stream), on_chunk)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)

    def finish():
        for t in threads:
            t.join()
        events.put(None)
    threading.Thread(target=finish, daemon=True).start()
    while (ev := events.get()) is not None:
        yield ev
    code = proc.wait_for_exit()["exit_code"]
    yield {"type": "exit", "timestamp": iso(), "exit_code": code, "process_id": id}
