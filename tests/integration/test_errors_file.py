"""The mount's `errors` file: a refused write or mkdir whose errno alone does not say why gets a
line there, "TIME PATH ERRNO REASON", the path and the reason %HH-escaped; it reads to its
current end like a log on disk, and what a user (or the sandbox) wrote cannot forge a line."""

import os
import re
import socket
import subprocess

from sbxutil import errno_of, read_bytes, write_errno

LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+) (E[A-Z]+) (.*)")


def unpercent(text):
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), text)


def lines_after(sbx, start):
    """The errors file's records from byte start on, as (path, errno, reason)."""
    data = read_bytes(sbx.mnt / "errors")[start:].decode()
    out = []
    for line in data.splitlines():
        m = LINE.fullmatch(line)
        assert m, line
        out.append((unpercent(m.group(1)), m.group(2), unpercent(m.group(3))))
    return out


def size(sbx):
    return os.stat(sbx.mnt / "errors").st_size


def test_a_refused_write_says_why_in_errors(sbx):
    start = size(sbx)
    s = sbx.new_session()
    # No mode line: the mount's mode stays, whichever it is (host under --isolation none).
    assert write_errno(sbx.mnt / "network" / "policy", "allow example.com privat\n") == 22
    assert write_errno(s / "ctl", "foo\n") == 22
    assert write_errno(s / "ctl", "kill BOGUS\n") == 22
    assert write_errno(s / "env", "1X=y\n") == 22
    assert errno_of(os.mkdir, sbx.mnt / "ports" / "03000") == 22
    assert errno_of(os.mkdir, sbx.sessions / "a b") == 22
    assert write_errno(sbx.mnt / "ports" / "expose", "http\n") == 22
    sid = s.name
    assert lines_after(sbx, start) == [
        ("network/policy", "EINVAL",
         "line 1: 'privat': the only word after a pattern is private, on allow"),
        (f"sessions/{sid}/ctl", "EINVAL",
         "no verb 'foo' (it takes: kill [SIGNAL], killall [SIGNAL], timeout MS, restart)"),
        (f"sessions/{sid}/ctl", "EINVAL",
         "kill BOGUS: no such signal (it takes: kill [SIGNAL], killall [SIGNAL], timeout MS, "
         "restart)"),
        (f"sessions/{sid}/env", "EINVAL",
         "a line is NAME=VALUE or -NAME: NAME of letters, digits and _, not first a digit; "
         "VALUE as is, or in the $'...' form, no NUL"),
        ("ports/03000", "EINVAL",
         "'03000' is no port: a number from 1 to 65535, without a sign or leading zeros"),
        ("sessions/a b", "EINVAL", "a session id is 1 to 64 of A-Z a-z 0-9 . _ -, not . or .."),
        ("ports/expose", "EINVAL",
         "'http' is no port: a number from 1 to 65535, without a sign or leading zeros"),
    ]
    os.rmdir(s)


def test_settings_and_snapshot_lines_say_why(sbx):
    start = size(sbx)
    s = sbx.new_session()
    ctx = sbx.mnt / "contexts" / "errs"
    os.mkdir(ctx)
    try:
        assert write_errno(s / "timeout", "soon\n") == 22
        assert write_errno(ctx / "language", "cobol\n") == 22
        assert write_errno(ctx / "cwd", "relative\n") == 22
        assert write_errno(sbx.mnt / "snapshots" / "ctl", "restore\n") == 22
        assert lines_after(sbx, start) == [
            (f"sessions/{s.name}/timeout", "EINVAL",
             "a timeout is a number of milliseconds, 0 to 4294967295"),
            ("contexts/errs/language", "EINVAL", "a language is python, javascript or typescript"),
            ("contexts/errs/cwd", "EINVAL", "a cwd is an absolute path"),
            ("snapshots/ctl", "EINVAL",
             "a line is restore [force] NAME [DIR] or take NAME [DIR], DIR in the workspace"),
        ]
    finally:
        os.rmdir(ctx)
        os.rmdir(s)


def test_names_checkouts_terminals_and_port_names_say_why(sbx):
    start = size(sbx)
    s = sbx.new_session()
    term = s / "terms" / "t"
    os.mkdir(term)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    os.mkdir(sbx.mnt / "ports" / str(port))
    try:
        assert errno_of(os.mkdir, sbx.mnt / "snapshots" / ".hidden") == 22
        assert errno_of(os.mkdir, sbx.mnt / "contexts" / "a b") == 22
        assert write_errno(s / "checkout", "https://example.com/r.git dir=../../etc\n") == 22
        assert write_errno(term / "size", "0 0\n") == 22
        assert write_errno(term / "wait", "(\n") == 22
        assert write_errno(sbx.mnt / "ports" / str(port) / "name", "a\x01b\n") == 22
        got = lines_after(sbx, start)
    finally:
        os.rmdir(sbx.mnt / "ports" / str(port))
        os.rmdir(term)
        os.rmdir(s)
    assert got == [
        ("snapshots/.hidden", "EINVAL",
         "a snapshot's name is 1 to 64 of A-Z a-z 0-9 . _ -, not first a ."),
        ("contexts/a b", "EINVAL", "a context's name is 1 to 64 of A-Z a-z 0-9 . _ -, not . or .."),
        (f"sessions/{s.name}/checkout", "EINVAL",
         "one line, URL [branch=NAME] [dir=PATH] [depth=N], the PATH inside the workspace"),
        (f"sessions/{s.name}/terms/t/size", "EINVAL",
         "ROWS COLS: rows from 1 and columns from 2, each at most 1000"),
        (f"sessions/{s.name}/terms/t/wait", "EINVAL",
         "one line of a regular expression (see docs/terminals.md)"),
        (f"ports/{port}/name", "EINVAL",
         "a name is one line of at most 128 bytes, no control characters"),
    ]


def test_what_was_written_forges_no_line(sbx):
    start = size(sbx)
    forged = "x\n2026-01-01T00:00:00Z sessions EINVAL forged"
    assert errno_of(os.mkdir, sbx.sessions / forged) == 22
    assert write_errno(sbx.sessions / "default" / "ctl",
                       "kill \x1b[31mred\n") == 22
    got = lines_after(sbx, start)
    assert [p for p, _, _ in got] == [f"sessions/{forged}", "sessions/default/ctl"]
    raw = read_bytes(sbx.mnt / "errors")[start:].decode()
    assert raw.count("\n") == 2 and "\x1b" not in raw and "forged\n" not in raw


def test_it_reads_to_its_end_and_tail_follows(sbx):
    # cat returns (the file ends where its last line does); tail -c sees a new line appear.
    res = subprocess.run(["cat", str(sbx.mnt / "errors")], capture_output=True, timeout=10)
    assert res.returncode == 0 and len(res.stdout) == size(sbx)
    before = size(sbx)
    assert write_errno(sbx.sessions / "default" / "ctl", "nothing\n") == 22
    assert size(sbx) > before
    tail = subprocess.run(["tail", "-c", str(size(sbx) - before), str(sbx.mnt / "errors")],
                          capture_output=True, timeout=10)
    assert tail.stdout.decode().endswith("(it takes: kill [SIGNAL], killall [SIGNAL], "
                                         "timeout MS, restart)\n")
