"""The audit journal and the metrics (docs/journal.md, docs/metrics.md): get_journal reads the
events kept, watch_journal follows new ones, get_metrics parses a metrics file. Over a mount
or over HTTP alike (remote.py): the same files, read at offsets."""

import json
import os
import re
import select
import time

from .errors import SandboxError, ValidationError, map_error
from .names import check_name
from .remote import remote_of

_CHUNK = 1 << 20
# Over HTTP a follower looks at the journal's end again this often (a mount is polled).
_FOLLOW_REMOTE_S = 0.05
_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _path(sandbox, session):
    if session is None:
        return os.path.join(sandbox.mountpoint, "journal"), "journal", "journal"
    check_name(session, "session")
    return (os.path.join(sandbox.mountpoint, "sessions", session, "journal"), "session",
            f"session {session}")


def _check_since(since):
    if since is not None and (isinstance(since, bool) or not isinstance(since, int) or since < 0):
        raise ValidationError(f"invalid since {since!r}: a sequence number")


class _Reader:
    """The file's bytes from an offset on, over a mount (an open descriptor, which poll()
    wakes at the next event) or over HTTP."""

    def __init__(self, path):
        self.at = remote_of(path)
        self.fd = None if self.at else os.open(path, os.O_RDONLY | os.O_NOFOLLOW)

    def read(self, offset):
        if self.at:
            return self.at[0].read_at(self.at[1], offset)
        return os.pread(self.fd, _CHUNK, offset)

    def wait(self, seconds):
        if self.at:
            time.sleep(min(seconds, _FOLLOW_REMOTE_S))
            return
        p = select.poll()
        p.register(self.fd, select.POLLIN)
        p.poll(int(seconds * 1000))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)


def _read_from(r, offset, since):
    """The events from offset to the end now, and where to go on."""
    events, rest = [], b""
    while True:
        chunk = r.read(offset)
        if not chunk:
            break
        offset += len(chunk)
        data = rest + chunk
        end = data.rfind(b"\n") + 1
        rest = data[end:]
        for line in data[:end].split(b"\n"):
            if line:
                e = json.loads(line)
                if since is None or e["seq"] >= since:
                    events.append(e)
    return events, offset - len(rest)


def get_journal(sandbox, since=None, session=None, limit=None):
    _check_since(since)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValidationError(f"invalid limit {limit!r}: a count of events")
    path, kind, what = _path(sandbox, session)
    try:
        r = _Reader(path)
        try:
            events, _ = _read_from(r, 0, since)
        finally:
            r.close()
    except OSError as exc:
        raise map_error(exc, kind, what) from None
    return events if limit is None else events[max(0, len(events) - limit):]


def watch_journal(sandbox, since=None, session=None, stop=None):
    _check_since(since)
    path, kind, what = _path(sandbox, session)
    try:
        r = _Reader(path)
    except OSError as exc:
        raise map_error(exc, kind, what) from None
    try:
        events, offset = _read_from(r, 0, since if since is not None else float("inf"))
        yield from events
        while stop is None or not stop():
            try:
                events, offset = _read_from(r, offset, None)
            except OSError as exc:
                raise map_error(exc, kind, what) from None
            yield from events
            if not events:
                r.wait(1.0)
    finally:
        r.close()


def _sample(line):
    m = _SAMPLE.fullmatch(line)
    if not m:
        raise SandboxError(f"a metrics line that is not one: {line!r}")
    labels = {k: re.sub(r"\\(.)", lambda c: "\n" if c.group(1) == "n" else c.group(1), v)
              for k, v in _LABEL.findall(m.group(2) or "")}
    return {"name": m.group(1), "labels": labels, "value": float(m.group(3))}


def get_metrics(sandbox, session=None, proc=None):
    if proc is not None and session is None:
        raise ValidationError("a proc needs its session")
    parts = ["metrics"]
    if session is not None:
        check_name(session, "session")
        parts = ["sessions", session, "metrics"]
        if proc is not None:
            check_name(proc, "process")
            parts = ["sessions", session, "procs", proc, "metrics"]
    path = os.path.join(sandbox.mountpoint, *parts)
    try:
        at = remote_of(path)
        if at is not None:
            text = at[0].read_all(at[1]).decode()
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                text = b"".join(iter(lambda: os.read(fd, _CHUNK), b"")).decode()
            finally:
                os.close(fd)
    except OSError as exc:
        raise map_error(exc, "metrics" if session is None else "session",
                        "metrics" if session is None else f"session {session}") from None
    return [_sample(line) for line in text.split("\n") if line and not line.startswith("#")]
