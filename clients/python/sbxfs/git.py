"""git_checkout: one request line to the session's checkout file, then its final line."""

import os
import re

from .times import iso
from .errors import GitTimeoutError, ValidationError, git_error, map_error
from .fsio import read_text, submit
from .processes import _in_thread


def _request_line(url, branch, target_dir, depth):
    parts = [url]
    for key, value in (("branch", branch), ("dir", target_dir), ("depth", depth)):
        if value is not None:
            parts.append(f"{key}={value}")
    for p in parts:
        if not p or re.search(r"\s", str(p)):
            raise ValidationError(f"git checkout: invalid argument {p!r}")
    return " ".join(str(p) for p in parts) + "\n"


def git_checkout(session, url, branch=None, target_dir=None, depth=None, clone_timeout_ms=None):
    """The checkout file shows the session's latest checkout, opened right after this one was
    queued. clone_timeout_ms bounds the wait; the clone itself is bounded by the daemon's
    [session] git_timeout_ms."""
    path = os.path.join(session.dir, "checkout")
    line = _request_line(url, branch, target_dir, depth)
    try:
        submit(path, line)
        text = _in_thread(lambda: read_text(path), clone_timeout_ms, lambda: GitTimeoutError(
            f"git checkout of {url}: no result within {clone_timeout_ms} ms"))
    except OSError as exc:
        raise map_error(exc, "session", f"git checkout of {url}") from None
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    m = re.match(r"^ok (\S+) (.*) (\S+)$", last)
    if m:
        return {"success": True, "repo_url": url, "branch": m.group(3), "target_dir": m.group(2),
                "commit": m.group(1), "timestamp": iso()}
    m = re.match(r"^error ([a-z-]+): (.*)$", last)
    if m:
        raise git_error(m.group(1), m.group(2))
    raise git_error("io", f"unexpected checkout status: {last}")
