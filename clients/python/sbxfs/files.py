"""File methods: paths as the sandbox sees them (/workspace/...) mapped onto the mount's
workspace/."""

import base64
import codecs
import ctypes
import ctypes.util
import os
import posixpath
import random
import select
import stat as st_
import string
import struct
import threading
from datetime import datetime, timezone

from .commands import _now
from .errors import IsDirectoryError_, ValidationError, map_error
from .fsio import read_text


def _fail(exc, path):
    return map_error(exc, "file", path)


def host_path(session, path):
    """Absolute paths must be in the workspace; relative ones are taken from the session's
    cwd."""
    if not isinstance(path, str) or not path:
        raise ValidationError("a path is required")
    sb = session.sandbox
    abs_path = path
    if not path.startswith("/"):
        abs_path = posixpath.join(read_text(os.path.join(session.dir, "cwd")).rstrip("\n"), path)
    abs_path = posixpath.normpath(abs_path)
    for root in sb.workspace_roots():
        if abs_path == root or abs_path.startswith(root + "/"):
            return sb.workspace + abs_path[len(root):]
    raise ValidationError(f"{path}: not in the workspace ({' or '.join(sb.workspace_roots())})")


def _is_text(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _ok(path, **extra):
    return {"success": True, "path": path, "timestamp": _now(), "exit_code": 0, **extra}


def write_file(session, path, content, encoding=None):
    """Written to a temporary file beside it, then renamed over it: readers see the old or the
    new content, never a part; an existing file's mode is kept."""
    target = host_path(session, path)
    if encoding == "base64":
        data = base64.b64decode(content)
    else:
        data = content if isinstance(content, bytes) else content.encode()
    tail = "".join(random.choices(string.ascii_lowercase, k=8))
    tmp = os.path.join(os.path.dirname(target),
                       f".{os.path.basename(target)}.sbxfs-{os.getpid()}-{tail}")
    try:
        try:
            mode = st_.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = None
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.rename(tmp, target)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _fail(exc, path) from None
    return _ok(path)


def read_file(session, path, encoding=None):
    target = host_path(session, path)
    try:
        with open(target, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise _fail(exc, path) from None
    text = _is_text(data)
    as_text = text and encoding != "base64"
    return _ok(path, content=data.decode() if as_text else base64.b64encode(data).decode(),
               encoding="utf-8" if as_text else "base64", is_binary=not text, size=len(data))


def read_file_stream(session, path, chunk_size=65536):
    """metadata, then chunk events (utf-8 text, or base64 for binary files), then complete."""
    target = host_path(session, path)
    try:
        f = open(target, "rb")
    except OSError as exc:
        raise _fail(exc, path) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8192)
        binary = bool(head) and not _is_text(head) and b"\0" in head
        f.seek(0)
        yield {"type": "metadata", "mime_type": "application/octet-stream" if binary
               else "text/plain", "size": size, "is_binary": binary,
               "encoding": "base64" if binary else "utf-8"}

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        total = 0
        while chunk := f.read(3 * 21846 if binary else chunk_size):
            total += len(chunk)
            data = base64.b64encode(chunk).decode() if binary else decoder.decode(chunk)
            if data:
                yield {"type": "chunk", "data": data}
        yield {"type": "complete", "bytes_read": total}


def mkdir(session, path, recursive=False):
    target = host_path(session, path)
    try:
        if recursive:
            os.makedirs(target, exist_ok=True)
        else:
            os.mkdir(target)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, recursive=recursive)


def delete_file(session, path):
    """A file or a symlink; a directory is refused (IsDirectoryError)."""
    target = host_path(session, path)
    try:
        if st_.S_ISDIR(os.lstat(target).st_mode):
            raise IsDirectoryError_(f"{path}: is a directory", errno="EISDIR")
        os.unlink(target)
    except OSError as exc:
        if isinstance(exc, IsDirectoryError_):
            raise
        raise _fail(exc, path) from None
    return _ok(path)


def rename_file(session, old_path, new_path):
    try:
        os.rename(host_path(session, old_path), host_path(session, new_path))
    except OSError as exc:
        raise _fail(exc, old_path) from None
    return _ok(old_path, new_path=new_path)


def move_file(session, source_path, destination_path):
    """Into an existing directory it goes under its own name, else to that path."""
    dest = destination_path
    if os.path.isdir(host_path(session, destination_path)):
        dest = posixpath.join(destination_path, posixpath.basename(source_path))
    return rename_file(session, source_path, dest)


def _mode_string(mode):
    return "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def _file_type(mode):
    if st_.S_ISREG(mode):
        return "file"
    if st_.S_ISDIR(mode):
        return "directory"
    if st_.S_ISLNK(mode):
        return "symlink"
    return "other"


def list_files(session, path, recursive=False, include_hidden=False):
    root = host_path(session, path)
    files = []

    def walk(d):
        for name in sorted(os.listdir(d)):
            if not include_hidden and name.startswith("."):
                continue
            full = os.path.join(d, name)
            s = os.lstat(full)
            rel = os.path.relpath(full, root)
            files.append({
                "name": name, "absolute_path": posixpath.join(path, rel), "relative_path": rel,
                "type": _file_type(s.st_mode), "size": s.st_size,
                "modified_at": datetime.fromtimestamp(s.st_mtime, tz=timezone.utc).isoformat(),
                "mode": _mode_string(s.st_mode),
                "permissions": {"readable": bool(s.st_mode & 0o400),
                                "writable": bool(s.st_mode & 0o200),
                                "executable": bool(s.st_mode & 0o100)}})
            if recursive and st_.S_ISDIR(s.st_mode):
                walk(full)
    try:
        walk(root)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, files=files, count=len(files))


def exists(session, path):
    return _ok(path, exists=os.path.lexists(host_path(session, path)))


class Watch:
    """inotify on the workspace directory: on_event({"type", "path"}) with create, modify or
    delete, from a thread, until stop()."""

    _MASKS = {0x100: "create", 0x080: "create", 0x002: "modify", 0x200: "delete",
              0x040: "delete"}

    def __init__(self, path, target, on_event):
        self.path = path
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        mask = 0x100 | 0x080 | 0x002 | 0x200 | 0x040  # CREATE MOVED_TO MODIFY DELETE MOVED_FROM
        if self._libc.inotify_add_watch(self._fd, os.fsencode(target), mask) < 0:
            err = ctypes.get_errno()
            os.close(self._fd)
            raise OSError(err, os.strerror(err), target)
        self._stop_r, self._stop_w = os.pipe()
        self._on_event = on_event
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            ready, _, _ = select.select([self._fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            buf = os.read(self._fd, 65536)
            off = 0
            while off < len(buf):
                _wd, mask, _cookie, length = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16:off + 16 + length].rstrip(b"\0").decode(errors="replace")
                off += 16 + length
                for bit, kind in self._MASKS.items():
                    if mask & bit:
                        self._on_event({"type": kind, "path": posixpath.join(self.path, name)})
                        break

    def stop(self):
        if self._fd < 0:
            return
        os.write(self._stop_w, b"x")
        self._thread.join()
        for fd in (self._fd, self._stop_r, self._stop_w):
            os.close(fd)
        self._fd = -1


def watch(session, path, on_event):
    target = host_path(session, path)
    try:
        return Watch(path, target, on_event)
    except OSError as exc:
        raise _fail(exc, path) from None


