"""Run handles (cmd opened read-write answers the run number), runs/N/result (one JSON object
per run) and output (stdout and stderr interleaved as the daemon read them).

Every wait is bounded; commands are short, so the file runs in seconds.
"""

import errno
import os
import threading
from pathlib import Path

import pytest

from sbxutil import bounded, read_bytes, write_bytes


def handle_run(s, cmd):
    """Submits cmd through a handle on s/cmd and returns its run number."""
    fd = os.open(Path(s) / "cmd", os.O_RDWR)
    try:
        assert os.write(fd, cmd.encode()) == len(cmd.encode())
        text = os.read(fd, 64)
        assert text.endswith(b"\n"), text
        assert os.read(fd, 64) == b"", "a second read is EOF"
        return int(text)
    finally:
        os.close(fd)


# --- handles -----------------------------------------------------------------------------------


def test_handle_returns_the_run_number(sbx):
    s = sbx.new_session()
    n1 = bounded(handle_run, s, "echo one")
    n2 = bounded(handle_run, s, "echo two")
    assert n2 == n1 + 1
    assert read_bytes(s / "runs" / str(n1) / "stdout") == b"one\n"
    assert read_bytes(s / "runs" / str(n2) / "stdout") == b"two\n"
    assert read_bytes(s / "runs" / str(n2) / "cmd") == b"echo two"


def test_handle_close_does_not_submit_twice(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "echo once")
    assert read_bytes(s / "runs" / str(n) / "exit") == b"0\n"
    assert sorted(int(x) for x in os.listdir(s / "runs")) == [n]


def test_plain_write_then_close_still_submits(sbx):
    s = sbx.new_session()
    write_bytes(s / "cmd", b"echo plain")
    assert read_bytes(s / "stdout") == b"plain\n"
    assert os.listdir(s / "runs") == ["1"]


def test_python_open_r_plus(sbx):
    s = sbx.new_session()

    def go():
        with open(s / "cmd", "r+") as f:
            f.write("echo py")
            f.flush()
            return f.read()

    text = bounded(go)
    n = int(text)
    assert text == f"{n}\n"
    assert read_bytes(s / "runs" / str(n) / "stdout") == b"py\n"


def test_pread_at_zero_answers_too(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"echo pr")
            first = os.pread(fd, 2, 0)  # a short buffer: the rest comes next
            rest = os.pread(fd, 64, 0)
            return first + rest, os.pread(fd, 64, 0)
        finally:
            os.close(fd)

    text, eof = bounded(go)
    assert eof == b""
    n = int(text)
    assert read_bytes(s / "runs" / str(n) / "stdout") == b"pr\n"


def test_handle_reused_for_the_next_command(sbx):
    """After its number was read, a write on the handle starts the next command."""
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            ns = []
            for word in ("a", "b", "c"):
                os.write(fd, f"echo {word}".encode())
                ns.append(int(os.read(fd, 64)))
                assert os.read(fd, 64) == b""
            return ns
        finally:
            os.close(fd)

    ns = bounded(go)
    assert ns == [ns[0], ns[0] + 1, ns[0] + 2]
    for n, word in zip(ns, "abc"):
        assert read_bytes(s / "runs" / str(n) / "stdout") == f"{word}\n".encode()


def test_write_with_an_unread_number_is_ebusy(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"true")
            part = os.read(fd, 1)
            try:
                os.write(fd, b"echo no")
                return part, 0
            except OSError as e:
                return part, e.errno
        finally:
            os.close(fd)

    part, err = bounded(go)
    assert err == errno.EBUSY
    assert part == b"1"  # the first byte of "1\n"
    assert read_bytes(s / "exit") == b"0\n"
    assert os.listdir(s / "runs") == ["1"]


def test_handle_read_without_a_write_reads_the_latest_command(sbx):
    s = sbx.new_session()
    write_bytes(s / "cmd", b"echo latest")
    read_bytes(s / "exit")

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            return os.read(fd, 64)
        finally:
            os.close(fd)

    assert bounded(go) == b"echo latest"


def test_handle_submit_error_comes_from_read(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"true")
            os.rmdir(s)
            try:
                os.read(fd, 64)
                return 0
            except OSError as e:
                return e.errno
        finally:
            os.close(fd)

    assert bounded(go) == errno.ENOENT


def test_two_threads_one_session_no_mixups(sbx):
    s = sbx.new_session()
    runs = 1000
    errors = []

    def worker(tag):
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            for i in range(runs):
                os.write(fd, f"echo {tag}-{i}".encode())
                n = int(os.read(fd, 64))
                assert os.read(fd, 64) == b""
                out = read_bytes(s / "runs" / str(n) / "stdout")
                if out != f"{tag}-{i}\n".encode():
                    errors.append((tag, i, n, out))
        finally:
            os.close(fd)

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_procs_cmd_handle(sbx):
    s = sbx.new_session()
    os.mkdir(s / "procs" / "srv")

    def go():
        fd = os.open(s / "procs" / "srv" / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"echo started")
            return os.read(fd, 64)
        finally:
            os.close(fd)

    assert bounded(go) == b"1\n"
    assert read_bytes(s / "procs" / "srv" / "stdout") == b"started\n"
