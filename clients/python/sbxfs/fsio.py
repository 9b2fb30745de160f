"""File operations on control files: whole writes, reads to EOF, run handles, snapshots. A
path of a sandbox over HTTP (remote.py) takes the tree's routes instead: the same operation,
done by the server on the mount."""

import json
import os
import re
import shlex

from .remote import remote_of

CHUNK = 1 << 16
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def write_control(path, data):
    """One write of `data` to a control file; its errors come from write or close."""
    if isinstance(data, str):
        data = data.encode()
    if (at := remote_of(path)) is not None:
        return at[0].write(at[1], data)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_bytes(path):
    """Reads a file to EOF: for stdout, exit or result this blocks until the command ends."""
    if (at := remote_of(path)) is not None:
        return at[0].read_all(at[1])
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_json(path):
    """A result file: one JSON object and a newline, the only raw newline in it (JSON strings
    escape theirs), so the newline ends the read with no read for the EOF after it."""
    if (at := remote_of(path)) is not None:
        return json.loads(at[0].read_all(at[1]))
    fd = os.open(path, os.O_RDONLY)
    try:
        data = b""
        while chunk := os.read(fd, CHUNK):
            data += chunk
            if data.endswith(b"\n"):
                break
        return json.loads(data)
    finally:
        os.close(fd)


def read_text(path):
    return read_bytes(path).decode("utf-8", "replace")


def read_snapshot(path):
    """What a growing file holds now (its size is what was written so far), without waiting."""
    if (at := remote_of(path)) is not None:
        return at[0].read_now(at[1])
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        out = bytearray()
        while len(out) < size:
            chunk = os.pread(fd, size - len(out), len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    finally:
        os.close(fd)


def submit(path, text):
    """A run handle: the file opened read-write; the read after the write submits and returns
    the number of this very submission, whoever else writes."""
    if (at := remote_of(path)) is not None:
        return int(at[0].submit(at[1], text))
    fd = os.open(path, os.O_RDWR)
    try:
        data = text.encode() if isinstance(text, str) else text
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        reply = b""
        while not reply.endswith(b"\n"):  # `N\n`: its newline ends it, no read for the EOF
            chunk = os.read(fd, 64)
            if not chunk:
                break
            reply += chunk
        return int(reply)
    finally:
        os.close(fd)


def follow(path, on_chunk, stop=None):
    """Calls on_chunk(bytes) for everything written to a stream file until it ends (EOF), or
    until stop() is true after a chunk."""
    if (at := remote_of(path)) is not None:
        return at[0].follow(at[1], on_chunk, stop)
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                return
            on_chunk(chunk)
            if stop is not None and stop():
                return
    finally:
        os.close(fd)


def parse_status(text):
    """`key value` lines (status files) as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" ")
        if sep:
            out[key] = value
    return out


def env_value(value):
    """A value in the one-line form env and cwd files take: bash's $'...' when it holds a
    control byte or starts with $' (docs/semantics.md, "One line per value")."""
    s = str(value)
    if "\0" in s:
        raise ValueError("a value cannot hold a NUL byte")
    if not re.search(r"[\x00-\x1f\x7f]", s) and not s.startswith("$'"):
        return s
    out = "$'"
    for ch in s:
        c = ord(ch)
        if ch == "\\":
            out += "\\\\"
        elif ch == "'":
            out += "\\'"
        elif ch == "\n":
            out += "\\n"
        elif ch == "\t":
            out += "\\t"
        elif ch == "\r":
            out += "\\r"
        elif c < 0x20 or c == 0x7F:
            out += f"\\x{c:02x}"
        else:
            out += ch
    return out + "'"


shell_quote = shlex.quote
