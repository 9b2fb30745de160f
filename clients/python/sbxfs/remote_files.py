"""The file calls (files.py) for a sandbox over HTTP: each a request on the tree's workspace/
paths, which the server walks by descriptor, following no link. Same answers and errors as
files.py gives on a mount."""

import base64
import codecs
import errno
import os
import posixpath

from .errors import SandboxError, map_error
from .times import iso

CHUNK = 65536


def _rel(parts):
    return "/".join(["workspace", *parts])


def _ok(path, **extra):
    return {"success": True, "path": path, "timestamp": iso(), "exit_code": 0, **extra}


def _fail(exc, path):
    return map_error(exc, "file", path)


def _is_text(data):
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _type_or_none(r, rel):
    try:
        return r.stat(rel)["type"]
    except FileNotFoundError:
        return None


def write_file(r, path, parts, data):
    """The server writes beside it and renames, keeping an existing file's mode."""
    try:
        if not parts:
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
        kind = _type_or_none(r, _rel(parts))
        if kind == "symlink":
            raise OSError(errno.ELOOP, "a symbolic link, which the client does not follow in the workspace")
        if kind == "directory":
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
        r.write(_rel(parts), data)
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path)


def _regular(r, path, parts, max_bytes=None):
    if not parts:
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
    st = r.stat(_rel(parts))
    if st["type"] == "directory":
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
    if st["type"] == "symlink":
        raise OSError(errno.ELOOP, "a symbolic link, which the client does not follow in the workspace")
    if st["type"] != "file":
        raise OSError(errno.EINVAL, "not a regular file: the client reads regular files only")
    if max_bytes is not None and st["size"] > max_bytes:
        raise OSError(errno.EFBIG, f"{st['size']} bytes or more, past read_file's max_bytes ({max_bytes})")
    data = r.read_all(_rel(parts))
    if max_bytes is not None and len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"{len(data)} bytes or more, past read_file's max_bytes ({max_bytes})")
    return data


def read_file(r, path, parts, encoding, max_bytes):
    try:
        data = _regular(r, path, parts, max_bytes)
    except OSError as exc:
        raise _fail(exc, path) from None
    text = _is_text(data)
    as_text = text and encoding != "base64"
    return _ok(path, content=data.decode() if as_text else base64.b64encode(data).decode(),
               encoding="utf-8" if as_text else "base64", is_binary=not text, size=len(data))


def read_file_stream(r, path, parts, chunk_size=CHUNK):
    try:
        data = _regular(r, path, parts)
    except OSError as exc:
        raise _fail(exc, path) from None
    head = data[:8192]
    binary = bool(head) and not _is_text(head) and b"\0" in head
    yield {"type": "metadata", "mime_type": "application/octet-stream" if binary else "text/plain",
           "size": len(data), "is_binary": binary, "encoding": "base64" if binary else "utf-8"}
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    step = 3 * 21846 if binary else chunk_size
    for i in range(0, len(data), step):
        chunk = data[i:i + step]
        out = base64.b64encode(chunk).decode() if binary else decoder.decode(chunk)
        if out:
            yield {"type": "chunk", "data": out}
    yield {"type": "complete", "bytes_read": len(data)}


def mkdir(r, path, parts, recursive):
    try:
        if not parts and not recursive:
            raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
        for i in range(1 if recursive else len(parts), len(parts) + 1):
            try:
                r.mkdir(_rel(parts[:i]))
            except FileExistsError:
                if not recursive or r.stat(_rel(parts[:i]))["type"] != "directory":
                    raise
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, recursive=recursive)


def delete_file(r, path, parts):
    try:
        if not parts or r.stat(_rel(parts))["type"] == "directory":
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
        r.remove(_rel(parts))
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path)


def rename_file(r, old_path, new_path, src, dst):
    try:
        if not src or not dst:
            raise OSError(errno.EBUSY, "the workspace itself cannot be moved or replaced")
        r.rename(_rel(src), _rel(dst))
    except OSError as exc:
        raise _fail(exc, old_path) from None
    return _ok(old_path, new_path=new_path)


def is_dir(r, parts):
    try:
        return not parts or r.stat(_rel(parts))["type"] == "directory"
    except OSError:
        return False


def _mode_string(mode):
    return "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))


def list_files(r, path, parts, recursive, include_hidden):
    files = []

    def walk(rel_parts, rel):
        for e in sorted(r.listdir(_rel(rel_parts)), key=lambda e: e["name"]):
            name = e["name"]
            if not include_hidden and name.startswith("."):
                continue
            try:
                s = r.stat(_rel([*rel_parts, name]))
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    continue
                raise
            sub = f"{rel}/{name}" if rel else name
            mode = s["mode"]
            files.append({
                "name": name, "absolute_path": posixpath.join(path, sub), "relative_path": sub,
                "type": s["type"], "size": s["size"],
                "modified_at": iso(s["mtimeMs"] / 1000),
                "mode": _mode_string(mode),
                "permissions": {"readable": bool(mode & 0o400), "writable": bool(mode & 0o200),
                                "executable": bool(mode & 0o100)}})
            if recursive and s["type"] == "directory":
                walk([*rel_parts, name], sub)
    try:
        if not is_dir(r, parts):
            r.stat(_rel(parts))  # its own error: ENOENT, or ELOOP for a link
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        walk(parts, "")
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, files=files, count=len(files))


def exists(r, path, parts):
    try:
        if parts:
            r.stat(_rel(parts))
        found = True
    except (FileNotFoundError, NotADirectoryError):
        found = False
    except OSError as exc:
        raise _fail(exc, path) from None
    return _ok(path, exists=found)


def watch(path):
    raise SandboxError(f"{path}: watch needs a mount: inotify sees nothing of a sandbox over HTTP",
                       errno="ENOTSUP")
