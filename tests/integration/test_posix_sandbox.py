"""workspace/ and the sandbox's commands on the same files.

Commands write the backing directory directly, not through the mount. What a command wrote is
read through workspace/ as soon as the command has ended (file data never comes from a stale
cache); names and attributes the kernel had already cached through workspace/ catch up within
the documented delay, [workspace] cache_timeout (1 s by default). What workspace/ wrote is in
the backing file before write() returns, so the next command reads it.
"""

import errno
import fcntl
import hashlib
import os
import threading
import time

import pytest

from sbxutil import uniq, wait_until

CACHE_TIMEOUT = 1.0
SLACK = 0.5


@pytest.fixture
def wd(sbx):
    """A fresh directory every command can write: (name relative to the workspace, path
    through the mount)."""
    name = uniq("coh")
    path = sbx.workspace / name
    os.mkdir(path)
    os.chmod(path, 0o777)
    return name, path


def run_ok(sbx, s, cmd):
    out, err, code = sbx.run(s, cmd)
    assert code == 0, (cmd, out, err)
    return out


def test_workspace_writes_are_read_by_the_next_command(sbx, wd):
    name, path = wd
    s = sbx.new_session()
    for size in (1, 4096, 1 << 20):
        data = os.urandom(size)
        with open(path / "f", "wb") as f:
            f.write(data)
        out = run_ok(sbx, s, f"sha256sum < {name}/f")
        assert out.split()[0].decode() == hashlib.sha256(data).hexdigest()
    # the shell's `echo x > f; cat f` way, through an open file that stays open
    fd = os.open(path / "g", os.O_WRONLY | os.O_CREAT, 0o666)
    try:
        os.write(fd, b"written, still open\n")
        assert run_ok(sbx, s, f"cat {name}/g") == b"written, still open\n"
    finally:
        os.close(fd)


def test_command_writes_are_read_through_workspace_at_once(sbx, wd):
    name, path = wd
    s = sbx.new_session()
    os.listdir(path)
    run_ok(sbx, s, f"printf 'from the sandbox' > {name}/new; head -c 300000 /dev/urandom "
                   f"> {name}/big; sha256sum {name}/big > {name}/big.sum")
    assert (path / "new").read_bytes() == b"from the sandbox"
    want = (path / "big.sum").read_bytes().split()[0].decode()
    assert hashlib.sha256((path / "big").read_bytes()).hexdigest() == want


def test_command_changes_to_cached_files_show_within_the_cache_timeout(sbx, wd):
    name, path = wd
    s = sbx.new_session()
    for n in ("grow", "same", "gone", "moved"):
        (path / n).write_bytes(b"0123456789")
        os.chmod(path / n, 0o666)
    run_ok(sbx, s, f"printf 0123456789 > {name}/mode")  # the command's own file: it may chmod
    # cache names, attributes and data through workspace/
    for n in ("grow", "same", "gone", "moved", "mode"):
        assert (path / n).read_bytes() == b"0123456789"
        os.stat(path / n)
    assert not (path / "appeared").exists()
    run_ok(sbx, s, f"cd {name} && printf more >> grow && printf ABCDEFGHIJ > same.tmp && "
                   f"cat same.tmp > same && rm gone && mv moved moved2 && chmod 600 mode && "
                   f"echo hi > appeared")
    t0 = time.monotonic()

    def caught_up():
        try:
            return ((path / "grow").read_bytes() == b"0123456789more"
                    and os.stat(path / "grow").st_size == 14
                    and (path / "same").read_bytes() == b"ABCDEFGHIJ"
                    and not (path / "gone").exists()
                    and not (path / "moved").exists()
                    and (path / "moved2").read_bytes() == b"0123456789"
                    and os.stat(path / "mode").st_mode & 0o777 == 0o600
                    and (path / "appeared").read_bytes() == b"hi\n")
        except FileNotFoundError:
            return False

    wait_until(caught_up, CACHE_TIMEOUT + 5, "workspace/ to show the command's changes")
    elapsed = time.monotonic() - t0
    assert elapsed <= CACHE_TIMEOUT + SLACK, f"took {elapsed:.2f}s"


def test_an_open_reader_sees_a_command_appending(sbx, wd):
    """A reader through workspace/ (tail -f style: read to EOF, wait, read on) gets what a
    command appends to the backing file."""
    name, path = wd
    s = sbx.new_session()
    (path / "log").write_bytes(b"line 1\n")
    os.chmod(path / "log", 0o666)
    fd = os.open(path / "log", os.O_RDONLY)
    try:
        assert os.read(fd, 100) == b"line 1\n"
        assert os.read(fd, 100) == b""
        run_ok(sbx, s, f"echo 'line 2' >> {name}/log")
        got = wait_until(lambda: os.read(fd, 100), CACHE_TIMEOUT + 5, "the appended line")
        assert got == b"line 2\n"
        wait_until(lambda: os.fstat(fd).st_size == 14, CACHE_TIMEOUT + SLACK, "the new size")
    finally:
        os.close(fd)


def test_both_sides_write_one_file(sbx, wd):
    name, path = wd
    s = sbx.new_session()
    (path / "shared").write_bytes(b"." * 20)
    os.chmod(path / "shared", 0o666)
    fd = os.open(path / "shared", os.O_RDWR)
    try:
        os.pwrite(fd, b"WS", 0)
        run_ok(sbx, s, f"printf SB | dd of={name}/shared bs=1 seek=10 conv=notrunc 2>/dev/null")
        os.pwrite(fd, b"ws", 18)
        assert os.pread(fd, 100, 0) == b"WS........SB......ws"
    finally:
        os.close(fd)
    assert run_ok(sbx, s, f"cat {name}/shared") == b"WS........SB......ws"


def test_flock_is_shared_with_the_sandbox(sbx, wd):
    name, path = wd
    s = sbx.new_session()
    (path / "lock").write_bytes(b"")
    os.chmod(path / "lock", 0o666)
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out, _, code = sbx.run(s, f"flock -n {name}/lock -c 'echo got it'; echo status $?")
        assert out == b"status 1\n", out
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert run_ok(sbx, s, f"flock -n {name}/lock -c 'echo got it'") == b"got it\n"
        # and the other way round: the sandbox holds it, workspace/ waits
        sbx.submit(s, f"cd {name} && flock lock -c 'touch held; "
                      f"while [ ! -e release ]; do sleep 0.02; done'")
        wait_until(lambda: (path / "held").exists(), 10, "the command to hold the lock")
        with pytest.raises(OSError) as exc:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert exc.value.errno == errno.EWOULDBLOCK
        threading.Timer(0.3, lambda: (path / "release").write_bytes(b"")).start()
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the command lets go
        assert sbx.exit_status(s) == 0
    finally:
        os.close(fd)
