"""The file operations of files.py for a sandbox over HTTP, each one request (or a few) on the
tree's workspace/ paths, which the server walks by descriptor, following no link. They raise
the OSError a mount's would; files.py shapes their results as it does a mount's."""

import errno
import os

from .errors import SandboxError


def _rel(parts):
    return "/".join(["workspace", *parts])


def _err(num, text=None):
    return OSError(num, text or os.strerror(num))


def _link():
    return _err(errno.ELOOP, "a symbolic link, which the client does not follow in the workspace")


def _type_or_none(r, parts):
    try:
        return r.stat(_rel(parts))["type"]
    except FileNotFoundError:
        return None


def write_file(r, parts, data):
    """The server writes beside it and renames, keeping an existing file's mode."""
    kind = _type_or_none(r, parts) if parts else "directory"
    if kind == "symlink":
        raise _link()
    if kind == "directory":
        raise _err(errno.EISDIR)
    r.write(_rel(parts), data)


def read_regular(r, parts, max_bytes=None):
    """A regular file's bytes (at most max_bytes: EFBIG past them)."""
    st = r.stat(_rel(parts)) if parts else {"type": "directory"}
    if st["type"] == "directory":
        raise _err(errno.EISDIR)
    if st["type"] == "symlink":
        raise _link()
    if st["type"] != "file":
        raise _err(errno.EINVAL, "not a regular file: the client reads regular files only")
    data = r.read_all(_rel(parts)) if max_bytes is None or st["size"] <= max_bytes else None
    if data is None or (max_bytes is not None and len(data) > max_bytes):
        raise _err(errno.EFBIG, f"more than max_bytes ({max_bytes})")
    return data


def mkdir(r, parts, recursive):
    if not parts and not recursive:
        raise _err(errno.EEXIST)
    for i in range(1 if recursive else len(parts), len(parts) + 1):
        try:
            r.mkdir(_rel(parts[:i]))
        except FileExistsError:
            if not recursive or r.stat(_rel(parts[:i]))["type"] != "directory":
                raise


def delete_file(r, parts):
    if not parts or r.stat(_rel(parts))["type"] == "directory":
        raise _err(errno.EISDIR)
    r.remove(_rel(parts))


def rename(r, src, dst):
    if not src or not dst:
        raise _err(errno.EBUSY, "the workspace itself cannot be moved or replaced")
    r.rename(_rel(src), _rel(dst))


def is_dir(r, parts):
    try:
        return not parts or r.stat(_rel(parts))["type"] == "directory"
    except OSError:
        return False


def lstat(r, parts):
    """(mode with its type bits, size, mtime in seconds) as a mount's lstat gives them."""
    s = r.stat(_rel(parts))
    kind = {"file": 0o100000, "directory": 0o040000, "symlink": 0o120000}.get(s["type"], 0)
    return os.stat_result((kind | s["mode"], 0, 0, 0, 0, 0, s["size"], 0, s["mtimeMs"] / 1000, 0))


def listdir(r, parts):
    kind = r.stat(_rel(parts))["type"] if parts else "directory"
    if kind == "symlink":
        raise _link()
    if kind != "directory":
        raise _err(errno.ENOTDIR)
    return sorted(e["name"] for e in r.listdir(_rel(parts)))


def watch(path):
    raise SandboxError(f"{path}: watch needs a mount: inotify sees nothing of a sandbox over HTTP",
                       errno="ENOTSUP")
