"""The network as files: network/policy as get_network_policy and set_network_policy,
network/log (or sessions/ID/network) as get_network_log. docs/network.md describes the files."""

import os
import re
import urllib.parse

from .errors import ValidationError, map_error
from .fsio import CHUNK, read_text, write_control
from .names import check_name
from .remote import remote_of

_MODES = ("none", "filtered", "host")
_PATTERN = re.compile(r"[\x21-\x7e]{1,500}")
# The log is a ring of at most 1 MiB; lines appended while it is read can add a little, so the
# read stops past this much instead of following a busy log forever.
_LOG_MAX = 2 << 20


def parse_policy(text):
    """network/policy's text: `mode MODE`, then `allow PATTERN [private]` and `deny PATTERN`."""
    out = {"mode": None, "allow": [], "deny": []}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        if words[0] == "mode":
            out["mode"] = words[1]
        elif words[0] == "allow":
            out["allow"].append({"pattern": words[1], "private": words[2:3] == ["private"]})
        elif words[0] == "deny":
            out["deny"].append(words[1])
    return out


def _check_pattern(p):
    """A pattern as one word of a line: anything else (a space, a newline) would write another
    rule than the caller meant. The daemon checks the rest, at the write()."""
    if not isinstance(p, str) or not _PATTERN.fullmatch(p):
        raise ValidationError(f"invalid network pattern {p!r}: one word of printable ASCII")
    return p


def policy_text(mode=None, allow=(), deny=()):
    """The policy's text; `allow` takes patterns or {"pattern", "private"} dicts."""
    if mode is not None and mode not in _MODES:
        raise ValidationError(f"invalid network mode {mode!r}: none, filtered or host")
    if isinstance(allow, str) or isinstance(deny, str):
        raise ValidationError("network policy: allow and deny are lists")
    lines = [] if mode is None else [f"mode {mode}"]
    for rule in allow:
        if isinstance(rule, str):
            lines.append(f"allow {_check_pattern(rule)}")
        elif isinstance(rule, dict):
            marker = " private" if rule.get("private") else ""
            lines.append(f"allow {_check_pattern(rule.get('pattern'))}{marker}")
        else:
            raise ValidationError(f"invalid allow rule {rule!r}: a pattern or a dict")
    lines += [f"deny {_check_pattern(p)}" for p in deny]
    return "".join(f"{line}\n" for line in lines)


def get_network_policy(sandbox):
    try:
        return parse_policy(read_text(os.path.join(sandbox.mountpoint, "network", "policy")))
    except OSError as exc:
        raise map_error(exc, "network", "network policy") from None


def set_network_policy(sandbox, mode=None, allow=(), deny=()):
    """Replaces the whole policy in one open: applied at the close, or nothing of it is.
    Without a mode the mode in force stays."""
    text = policy_text(mode, allow, deny)
    try:
        write_control(os.path.join(sandbox.mountpoint, "network", "policy"), text)
    except OSError as exc:
        raise map_error(exc, "network", "network policy") from None


def _dash(s):
    return None if s == "-" else s


def unpercent(s):
    """A field as the log writes it: any byte of what the sandbox sent as %HH
    (docs/network.md). The bytes are UTF-8, with U+FFFD for what is not."""
    return urllib.parse.unquote(s, errors="replace")


def parse_log_line(line):
    """One log line by docs/network.md's fields; the last field is the rest of the line."""
    f = line.split(" ", 10)
    if len(f) < 11:
        return None
    return {
        "time": f[0], "session": _dash(f[1]), "process": _dash(f[2]),
        "protocol": _dash(f[3]), "target": unpercent(f[4]), "address": _dash(unpercent(f[5])),
        "decision": f[6], "bytes_from_client": int(f[7]), "bytes_to_client": int(f[8]),
        "duration_ms": int(f[9]), "reason": unpercent(f[10]),
    }


def _read_log_now(path):
    """Up to _LOG_MAX bytes of a log as it is now: O_NONBLOCK reads stop where a blocking one
    would wait."""
    chunks, total = [], 0
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while total < _LOG_MAX:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                break  # at the end, where a blocking read would wait
            if not data:
                break
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    return b"".join(chunks)


def get_network_log(sandbox, session=None, limit=None):
    """The log's lines held now, oldest first: reads never wait at its end (O_NONBLOCK), and the
    ring's oldest line is where a read from 0 starts. `limit` keeps the last lines."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValidationError(f"invalid limit {limit!r}: a count of lines")
    if session is None:
        path, kind, what = os.path.join(sandbox.mountpoint, "network", "log"), "network", "network log"
    else:
        check_name(session, "session")
        path = os.path.join(sandbox.mountpoint, "sessions", session, "network")
        kind, what = "session", f"session {session}"
    try:
        at = remote_of(path)
        data = at[0].read_now(at[1])[:_LOG_MAX] if at is not None else _read_log_now(path)
    except OSError as exc:
        raise map_error(exc, kind, what) from None
    text = data.decode("utf-8", "replace")
    # Only whole lines: a read stopped at _LOG_MAX may end inside one.
    text = text[:text.rfind("\n") + 1]
    entries = [e for e in map(parse_log_line, filter(None, text.split("\n"))) if e]
    return entries if limit is None else entries[max(0, len(entries) - limit):]
