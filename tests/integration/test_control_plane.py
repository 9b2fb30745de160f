"""The control plane never starves and never lies: at the daemon's descriptor limit and with a
full spool disk, a command either runs or its `cmd` close fails with the errno, and `exit`,
`status` and `runs/` say what became of it; `mkdir sessions/ID` works whole or fails whole."""

import errno
import os
import re
import resource
import subprocess
import tempfile
from contextlib import contextmanager

import pytest

from sbxutil import (ConfMount, bounded, errname, read_bytes, status, uniq, wait_until,
                     write_bytes)

# src/core/fdres.h FDRES_COUNT: descriptors the daemon keeps back for the control plane.
FD_RESERVE = 64

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="lowers the daemon's limits, mounts")


@contextmanager
def mount_with(config_text, before_start=None):
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-cp-"), config_text)
    undo = before_start(m) if before_start else None
    try:
        m.start(timeout=10)
        yield m
        m.check_alive("during this test")
    finally:
        problems = m.stop() if m.alive() else []
        m.abort()
        if undo:
            undo()
        m.cleanup_tmp()
    assert not problems, "unclean shutdown:\n" + "\n".join(problems)


def lowest_free_fd(pid):
    used = {int(n) for n in os.listdir(f"/proc/{pid}/fd")}
    fd = 0
    while fd in used:
        fd += 1
    return fd


@contextmanager
def fd_limit(m, extra=0):
    """Puts the daemon at its descriptor limit (+extra): every fd below the soft limit is taken,
    so a plain open() in it fails with EMFILE. Restores the old limit on the way out (the hard
    limit stays: raising it again may need more than root in a container)."""
    pid = m.proc.pid
    old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    limit = lowest_free_fd(pid) + extra
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, old[1]))
    try:
        yield limit
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)


def close_errno(path, data):
    """One write() and the close() of path: (errno of write, errno of close), 0 for success."""
    def go():
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        werr = cerr = 0
        try:
            os.write(fd, data.encode())
        except OSError as exc:
            werr = exc.errno
        try:
            os.close(fd)
        except OSError as exc:
            cerr = exc.errno
        return werr, cerr

    return bounded(go, what=f"write and close of {path}")


def mkdir_errno(path):
    def go():
        try:
            os.mkdir(path)
            return 0
        except OSError as exc:
            return exc.errno

    return bounded(go, what=f"mkdir {path}")


def assert_runs(m, s, token):
    out, err, code = m.run(s, f"echo {token}")
    assert (out, err, code) == (f"{token}\n".encode(), b"", 0), (out, err, code)


def assert_refused(s, n, errno_name, why):
    """Command n of session s was refused: done, 126, empty output, and status says why."""
    assert read_bytes(s / "exit") == b"126\n"
    assert read_bytes(s / "stdout") == b""
    st = status(s)
    assert st["command"] == str(n) and st["run_state"] == "done" and st["exit"] == "126", st
    assert st["error"].startswith(f"{errno_name}: {why}"), st
    rst = status(s / "runs" / str(n))
    assert rst["exit"] == "126" and rst["error"] == st["error"], rst


# --- descriptors -------------------------------------------------------------------------------


@needs_root
def test_commands_and_sessions_keep_working_at_the_descriptor_limit():
    # history 2: old runs' spools are closed as new ones come, so the reserve is never used up
    with mount_with("[session]\nhistory = 2\n") as m:
        s = m.new_session()
        assert_runs(m, s, "before")
        with fd_limit(m):
            for i in range(40):
                assert_runs(m, s, f"at-limit-{i}")
            # a new session gets its shell from the reserve, and gives it back at rmdir
            for i in range(5):
                t = m.new_session()
                assert_runs(m, t, f"new-session-{i}")
                assert int(status(t)["shell_pid"]) > 0
                bounded(os.rmdir, t)
            assert status(s)["exit"] == "0"
            assert read_bytes(s / "exit") == b"0\n"
        wait_until(lambda: "drawing on the control plane's reserve" in m.daemon_log(20000), 5,
                   "the daemon to log that it drew on the reserve (the limit was reached)",
                   show=m.daemon_log)
        assert_runs(m, s, "after")


@needs_root
def test_exhausted_descriptors_refuse_commands_and_sessions_with_emfile():
    with mount_with("") as m:
        s = m.new_session()
        job = s / "procs" / "web"
        bounded(os.mkdir, job)
        assert_runs(m, s, "before")
        with fd_limit(m):
            # each command keeps its 3 spools (stdout, stderr, output) open in the history:
            # the reserve runs out
            refused = None
            for n in range(2, 2 + FD_RESERVE + 10):
                werr, cerr = close_errno(s / "cmd", f"echo run-{n}\n")
                assert werr == 0, errname(werr)
                if cerr:
                    refused = n
                    assert cerr == errno.EMFILE, errname(cerr)
                    break
                assert read_bytes(s / "stdout") == f"run-{n}\n".encode()
                assert read_bytes(s / "exit") == b"0\n"
            assert refused is not None, "the daemon never ran out of descriptors"
            assert refused > 2 + FD_RESERVE // 3 - 8, f"the reserve gave only {refused - 2} runs"
            # refused, and said so: never 0-then-nothing
            assert_refused(s, refused, "EMFILE", "cannot create its output spool")
            assert str(refused) in os.listdir(s / "runs")
            # the next one too, with its own number
            assert close_errno(s / "cmd", "echo again\n") == (0, errno.EMFILE)
            assert_refused(s, refused + 1, "EMFILE", "cannot create its output spool")
            # a session is made whole or not at all
            name = uniq("nofd")
            assert mkdir_errno(m.sessions / name) == errno.EMFILE
            assert name not in os.listdir(m.sessions)
            assert mkdir_errno(m.sessions / name) == errno.EMFILE  # and no half of it is left
            # a background process: its start is refused the same way
            assert close_errno(job / "cmd", "echo hi\n") == (0, errno.EMFILE)
            jst = status(job)
            assert jst["state"] == "failed" and jst["exit"] == "126", jst
            assert jst["error"].startswith("EMFILE: "), jst
            assert read_bytes(job / "exit") == b"126\n"
            # reading the control files still works
            assert status(m.sessions / "default")["state"] == "idle"
        # the pressure is gone: everything works again
        assert_runs(m, s, "after")
        assert "error" not in status(s), status(s)
        t = m.new_session(name)
        assert_runs(m, t, "new")
        write_bytes(job / "cmd", "echo hi")
        assert read_bytes(job / "exit") == b"0\n" and read_bytes(job / "stdout") == b"hi\n"
        assert "error" not in status(job)
        log = m.daemon_log(20000)
        assert "the control plane's reserve is used up" in log, log


@needs_root
def test_a_workspace_holding_the_descriptors_does_not_starve_commands():
    # The FUSE workspace costs the daemon descriptors for what the host holds open in it.
    with mount_with("[workspace]\nmount = fuse\n") as m:
        s = m.new_session()
        names = [f"f{i}" for i in range(600)]
        for n in names:
            (m.ws / n).write_bytes(b"x")
        held = []
        with fd_limit(m, extra=100) as limit:
            try:
                for n in names:
                    try:
                        held.append(os.open(m.workspace / n, os.O_RDONLY))
                    except OSError as exc:
                        assert exc.errno in (errno.EMFILE, errno.ENFILE), exc
                if len(held) == len(names) and lowest_free_fd(m.proc.pid) < limit:
                    pytest.skip("the workspace's descriptor budget kept it below the limit")
                for i in range(10):
                    assert_runs(m, s, f"held-{i}")
                t = m.new_session()
                assert_runs(m, t, "new")
                bounded(os.rmdir, t)
            finally:
                for fd in held:
                    os.close(fd)
        assert_runs(m, s, "after")


# --- disk --------------------------------------------------------------------------------------


def small_tmpfs_state(m):
    """Mounts a 4 MiB tmpfs on the mount's state dir (spools live there); returns the undo."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(m.state)],
                   check=True)
    return lambda: subprocess.run(["umount", "-l", str(m.state)], check=False)


def fill(path, leave=0):
    """Fills the filesystem of path; with leave, frees that many bytes again."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    if leave:
        os.truncate(path, os.path.getsize(path) - leave)


@needs_root
def test_a_full_spool_disk_refuses_commands_with_enospc():
    with mount_with("", before_start=small_tmpfs_state) as m:
        s = m.new_session()
        assert_runs(m, s, "before")
        filler = m.state / "filler"
        fill(filler)
        assert close_errno(s / "cmd", "echo full\n") == (0, errno.ENOSPC)
        assert_refused(s, 2, "ENOSPC", "cannot create its output spool")
        job = s / "procs" / "p"
        bounded(os.mkdir, job)
        assert close_errno(job / "cmd", "echo full\n") == (0, errno.ENOSPC)
        assert status(job)["error"].startswith("ENOSPC: "), status(job)
        os.unlink(filler)
        assert_runs(m, s, "after")
        assert "error" not in status(s)


@needs_root
def test_output_past_a_full_spool_disk_is_dropped_and_said_so():
    with mount_with("", before_start=small_tmpfs_state) as m:
        s = m.new_session()
        filler = m.state / "filler"
        fill(filler, leave=256 * 1024)
        out, err, code = m.run(s, "head -c 2M /dev/zero; echo done >&2")
        assert code == 0
        assert 0 < len(out) < 2 << 20, len(out)
        st = status(s)
        assert st["truncated"] == "yes", st
        assert re.fullmatch(r"ENOSPC: writing its stdout spool: .+", st["error"]), st
        os.unlink(filler)
        assert_runs(m, s, "after")


# --- processes ---------------------------------------------------------------------------------

FORK_ALL = (
    "python3 -c 'import os, sys, time\n"
    "n = 0\n"
    "while True:\n"
    "    try:\n"
    "        pid = os.fork()\n"
    "    except OSError:\n"
    "        break\n"
    "    if pid == 0:\n"
    "        time.sleep(1000)\n"
    "        os._exit(0)\n"
    "    n += 1\n"
    "print(n, flush=True)\n"
    "time.sleep(1000)\n'"
)


@needs_root
def test_mkdir_fails_whole_when_the_launcher_cannot_fork_its_shell():
    # session_pids_max = max: one session fills the sandbox's own limit
    with mount_with("[sandbox]\npids_max = 64\nsession_pids_max = max\n") as m:
        if "pids" not in read_bytes(m.mnt / "limits").decode():
            pytest.skip("no pids controller: pids_max is not enforced")
        s = m.new_session()
        hog = s / "procs" / "hog"
        bounded(os.mkdir, hog)
        write_bytes(hog / "cmd", FORK_ALL)

        def first_line():  # the open waits for the first byte, the read returns what is there
            fd = os.open(hog / "stdout", os.O_RDONLY)
            try:
                return os.read(fd, 64)
            finally:
                os.close(fd)

        forked = bounded(first_line, timeout=30, what="the sandbox to be full of processes")
        assert forked.strip().isdigit(), (forked, status(hog))
        name = uniq("nopid")
        before = sorted(os.listdir(m.sessions))
        assert mkdir_errno(m.sessions / name) == errno.EAGAIN
        assert name not in os.listdir(m.sessions)
        # the same for a session made by reading clone
        with pytest.raises(OSError) as exc:
            read_bytes(m.sessions / "clone")
        assert exc.value.errno == errno.EAGAIN, exc.value
        assert sorted(os.listdir(m.sessions)) == before
        # a command of a session whose shell is there still runs when it needs no fork
        out, err, code = m.run(s, "echo still")
        assert (out, code) == (b"still\n", 0), (out, err, code)
        bounded(os.rmdir, hog)
        # the killed processes leave as they are reaped: then there is room again
        wait_until(lambda: mkdir_errno(m.sessions / name) != errno.EAGAIN, 10,
                   "room for a new session's shell", show=lambda: read_bytes(m.mnt / "limits"))
        assert name in os.listdir(m.sessions)
        assert_runs(m, m.sessions / name, "room-again")
