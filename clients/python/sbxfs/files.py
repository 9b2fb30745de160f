"""File methods: paths as the sandbox sees them (/workspace/...) mapped onto the mount's
workspace/, and walked there by beneath.py, which follows no link a command planted."""

import base64
import codecs
import io
import ctypes
import ctypes.util
import errno
import os
import posixpath
import random
import select
import stat as st_
import string
import struct
import threading

from . import beneath
from . import remote_files
from .remote import remote_of
from .times import iso
from .errors import ValidationError, map_error
from .fsio import read_text

# What read_file reads into memory at most, unless its max_bytes says otherwise: a file that a
# command made 20 GiB (sparse, `truncate -s`) is refused rather than allocated.
READ_FILE_MAX = 32 << 20

CHUNK = 65536


def _fail(exc, path):
    return map_error(exc, "file", path)


def workspace_parts(session, path):
    """The names of a sandbox path beneath the workspace: absolute ones must be in it,
    relative ones are taken from the session's cwd."""
    if not isinstance(path, str) or not path:
        raise ValidationError("a path is required")
    if "\0" in path:
        raise ValidationError(f"{path!r}: a path cannot hold a NUL byte")
    roots = session.sandbox.workspace_roots
    abs_path = path
    if not path.startswith("/"):
        try:
            cwd = read_text(os.path.join(session.dir, "cwd")).rstrip("\n")
        except OSError as exc:
            # A session that is gone: its error, not one naming its file on the host.
            raise map_error(exc, "session", f"session {session.id}") from None
        abs_path = posixpath.join(cwd, path)
    abs_path = posixpath.normpath(abs_path)
    for root in roots:
        if abs_path == root or abs_path.startswith(root + "/"):
            return [p for p in abs_path[len(root):].split("/") if p]
    raise ValidationError(f"{path}: not in the workspace ({' or '.join(roots)})")


def _remote(session):
    """The Remote of a sandbox over HTTP (remote.py), else None."""
    at = remote_of(session.sandbox.workspace)
    return at[0] if at is not None else None


def _parent(session, parts):
    return beneath.parent(session.sandbox.workspace, parts)


def _is_text(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _ok(path, **extra):
    return {"success": True, "path": path, "timestamp": iso(), "exit_code": 0, **extra}


def _lstat_or_none(dir_fd, name):
    try:
        return beneath.lstat_at(dir_fd, name)
    except FileNotFoundError:
        return None


def write_file(session, path, content, encoding=None):
    """Written to a temporary file beside it, then renamed over it: readers see the old or the
    new content, never a part. An existing file keeps its permission bits, never set-id ones;
    a link there is refused, not written through or replaced."""
    parts = workspace_parts(session, path)
    if encoding == "base64":
        data = base64.b64decode(content)
    else:
        data = content if isinstance(content, bytes) else content.encode()
    try:
        if (at := _remote(session)) is not None:
            remote_files.write_file(at, parts, data)
            return _ok(path)
        with _parent(session, parts) as (dir_fd, name):
            if not name:
                raise beneath.is_dir_error()
            st = _lstat_or_none(dir_fd, name)
            if st is not None and st_.S_ISLNK(st.st_mode):
                raise beneath.link_error()
            if st is not None and st_.S_ISDIR(st.st_mode):
                raise beneath.is_dir_error()
            mode = st_.S_IMODE(st.st_mode) & 0o777 if st and st_.S_ISREG(st.st_mode) else None
            tail = "".join(random.choices(string.ascii_lowercase, k=8))
            tmp = f".{name}.sbxfs-{os.getpid()}-{tail}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644, dir_fd=dir_fd)
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    if mode is not None:
                        os.fchmod(fd, mode)
                finally:
                    os.close(fd)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dir_fd)
                except OSError:
                    pass
                raise
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path)


def _open_regular(session, parts):
    with _parent(session, parts) as (dir_fd, name):
        return beneath.open_regular(dir_fd, name)


def _too_big(size, max_bytes):
    return OSError(errno.EFBIG, f"{size} bytes or more, past read_file's max_bytes "
                   f"({max_bytes}); read_file_stream reads any size")


def _read_capped(fd, size, max_bytes):
    """The file's bytes, at most max_bytes of them: a file that grows while it is read stops
    there too."""
    if size > max_bytes:
        raise _too_big(size, max_bytes)
    out = bytearray()
    while True:
        chunk = os.read(fd, min(max(size - len(out), CHUNK), max_bytes + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
        if len(out) > max_bytes:
            raise _too_big(len(out), max_bytes)


def read_file(session, path, encoding=None, max_bytes=READ_FILE_MAX):
    """A regular file only (a FIFO, socket or device is refused at once), read into memory up
    to max_bytes (READ_FILE_MAX by default)."""
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise ValidationError(f"invalid max_bytes: {max_bytes!r}")
    parts = workspace_parts(session, path)
    try:
        if (at := _remote(session)) is not None:
            data = remote_files.read_regular(at, parts, max_bytes)
        else:
            fd, st = _open_regular(session, parts)
            try:
                data = _read_capped(fd, st.st_size, max_bytes)
            finally:
                os.close(fd)
    except OSError as exc:
        raise _fail(exc, path) from None
    text = _is_text(data)
    as_text = text and encoding != "base64"
    return _ok(path, content=data.decode() if as_text else base64.b64encode(data).decode(),
               encoding="utf-8" if as_text else "base64", is_binary=not text, size=len(data))


def read_file_stream(session, path, chunk_size=CHUNK):
    """metadata, then chunk events (utf-8 text, or base64 for binary files), then complete:
    any size, a chunk at a time."""
    parts = workspace_parts(session, path)
    try:
        if (at := _remote(session)) is not None:
            data = remote_files.read_regular(at, parts)
            f, size = io.BytesIO(data), len(data)
        else:
            fd, st = _open_regular(session, parts)
            f, size = open(fd, "rb"), st.st_size
    except OSError as exc:
        raise _fail(exc, path) from None
    with f:
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
    parts = workspace_parts(session, path)
    try:
        if (at := _remote(session)) is not None:
            remote_files.mkdir(at, parts, recursive)
        elif recursive:
            os.close(beneath.open_dir(session.sandbox.workspace, parts, create=True))
        else:
            with _parent(session, parts) as (dir_fd, name):
                if not name:
                    raise OSError(errno.EEXIST, "file exists")
                os.mkdir(name, dir_fd=dir_fd)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, recursive=recursive)


def delete_file(session, path):
    """A file or a symlink (the link itself); a directory is refused (IsDirectoryError)."""
    parts = workspace_parts(session, path)
    try:
        if (at := _remote(session)) is not None:
            remote_files.delete_file(at, parts)
            return _ok(path)
        with _parent(session, parts) as (dir_fd, name):
            if not name or st_.S_ISDIR(beneath.lstat_at(dir_fd, name).st_mode):
                raise beneath.is_dir_error()
            os.unlink(name, dir_fd=dir_fd)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path)


def rename_file(session, old_path, new_path):
    """The name itself moves (a link as a link); the workspace itself cannot."""
    src, dst = workspace_parts(session, old_path), workspace_parts(session, new_path)
    try:
        if (at := _remote(session)) is not None:
            remote_files.rename(at, src, dst)
            return _ok(old_path, new_path=new_path)
        with _parent(session, src) as (src_fd, a), _parent(session, dst) as (dst_fd, b):
            if not a or not b:
                raise OSError(errno.EBUSY, "the workspace itself cannot be moved or replaced")
            os.rename(a, b, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    except OSError as exc:
        raise _fail(exc, old_path) from None
    return _ok(old_path, new_path=new_path)


def move_file(session, source_path, destination_path):
    """Into an existing directory (not a link to one) it goes under its own name, else to that
    path."""
    parts = workspace_parts(session, destination_path)
    if (at := _remote(session)) is not None:
        into_dir = remote_files.is_dir(at, parts)
    else:
        try:
            with _parent(session, parts) as (dir_fd, name):
                into_dir = not name or st_.S_ISDIR(beneath.lstat_at(dir_fd, name).st_mode)
        except OSError:
            into_dir = False
    dest = destination_path
    if into_dir:
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


# What a listing skips: a name a command removed, or turned into a link or a file, meanwhile.
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


def _names(at, d):
    """The sorted names of a directory: a held descriptor, or over HTTP its parts."""
    if at is not None:
        return remote_files.listdir(at, d)
    listable = beneath.open_listable(d)
    try:
        return sorted(os.listdir(listable))
    finally:
        os.close(listable)


def _lstat(at, d, name):
    return remote_files.lstat(at, [*d, name]) if at is not None else beneath.lstat_at(d, name)


def _child(at, d, name):
    return [*d, name] if at is not None else beneath.open_child(d, name)


def _release(at, d):
    if at is None:
        os.close(d)


def list_files(session, path, recursive=False, include_hidden=False):
    """Links are listed as links; a recursive listing goes into directories only."""
    parts = workspace_parts(session, path)
    at = _remote(session)
    files = []

    def walk(d, rel):
        for name in _names(at, d):
            if not include_hidden and name.startswith("."):
                continue
            try:
                s = _lstat(at, d, name)
            except OSError as exc:
                if exc.errno in _GONE:
                    continue
                raise
            sub = f"{rel}/{name}" if rel else name
            files.append({
                "name": name, "absolute_path": posixpath.join(path, sub), "relative_path": sub,
                "type": _file_type(s.st_mode), "size": s.st_size,
                "modified_at": iso(s.st_mtime),
                "mode": _mode_string(s.st_mode),
                "permissions": {"readable": bool(s.st_mode & 0o400),
                                "writable": bool(s.st_mode & 0o200),
                                "executable": bool(s.st_mode & 0o100)}})
            if not recursive or not st_.S_ISDIR(s.st_mode):
                continue
            try:
                child = _child(at, d, name)
            except OSError as exc:
                if exc.errno in _GONE:
                    continue
                raise
            try:
                walk(child, sub)
            finally:
                _release(at, child)
    try:
        top = parts if at is not None else beneath.open_dir(session.sandbox.workspace, parts)
        try:
            walk(top, "")
        finally:
            _release(at, top)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, files=files, count=len(files))


def exists(session, path):
    """Whether the name is there (a link counts, unfollowed); a link on the way is an
    error."""
    parts = workspace_parts(session, path)
    try:
        if (at := _remote(session)) is not None:
            if parts:
                remote_files.lstat(at, parts)
        else:
            with _parent(session, parts) as (dir_fd, name):
                if name:
                    beneath.lstat_at(dir_fd, name)
        found = True
    except (FileNotFoundError, NotADirectoryError):
        found = False
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, exists=found)


class Watch:
    """inotify on the workspace directory: on_event({"type", "path"}) with create, modify or
    delete, from a thread, until stop()."""

    _MASKS = {0x100: "create", 0x080: "create", 0x002: "modify", 0x200: "delete",
              0x040: "delete"}

    def __init__(self, path, target, on_event):
        """target: a path naming the directory (its descriptor's /proc path)."""
        self.path = path
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        # CREATE MOVED_TO MODIFY DELETE MOVED_FROM, ONLYDIR
        mask = 0x100 | 0x080 | 0x002 | 0x200 | 0x040 | 0x01000000
        if self._libc.inotify_add_watch(self._fd, os.fsencode(target), mask) < 0:
            err = ctypes.get_errno()
            os.close(self._fd)
            raise OSError(err, os.strerror(err))
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
    """The directory opened beneath the workspace (no link followed), watched through its
    descriptor's /proc path: inotify takes the directory the descriptor holds."""
    parts = workspace_parts(session, path)
    if _remote(session) is not None:
        remote_files.watch(path)
    try:
        fd = beneath.open_dir(session.sandbox.workspace, parts)
        try:
            return Watch(path, f"/proc/self/fd/{fd}", on_event)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _fail(exc, path) from None


