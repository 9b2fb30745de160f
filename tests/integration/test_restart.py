"""What outlives the daemon (src/sandbox/saved.c): a new daemon on the same state dir, after an
unmount or a crash, brings back the root env, the network policy, the exposed ports (their
listeners come back) and every session with its id, env, cwd and timeout, each saying so in its
status. Running processes do not come back. The saved files are attacker input of a kind (what
commands exported): they come back through the same checks as a user's write, as one value
each."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import pytest

from sbxutil import (ConfMount, bounded, isolation_none, parse_status, read_bytes, started,
                     stopped_cleanly, wait_until, write_bytes)


@contextmanager
def conf_mount(config_text="", prefix="sbxfs-it-restart-"):
    m = started(ConfMount(tempfile.mkdtemp(prefix=prefix), config_text), timeout=30)
    try:
        yield m
    finally:
        stopped_cleanly(m, "restart's sbxfs")


def sh(m, session, cmd, timeout=60):
    out, err, code = m.run(m.sessions / session, cmd, timeout=timeout)
    assert code == 0, f"{cmd!r} exited {code}: {err.decode(errors='replace')}"
    return out.decode()


def session_ids(m):
    return sorted(p.name for p in m.sessions.iterdir() if p.is_dir())


def status(m, session):
    return parse_status(read_bytes(m.sessions / session / "status", timeout=10))


def make_state(m):
    """One of everything that is saved; returns what each file read then."""
    write_bytes(m.mnt / "env", "ROOTVAR=root value\n")
    if not isolation_none():  # the host's network has no policy (EOPNOTSUPP)
        write_bytes(m.mnt / "network" / "policy", "allow example.test\n")
    bounded(os.mkdir, m.mnt / "ports" / "3000", what="mkdir ports/3000")
    write_bytes(m.mnt / "ports" / "3000" / "name", "web\n")
    bounded(os.mkdir, m.sessions / "build", what="mkdir sessions/build")
    sh(m, "build", f"mkdir -p {m.cmd_ws}/sub/'odd dir' && cd {m.cmd_ws}/sub/'odd dir' && "
                   "export MINE=1 TRICK=$'two\\nPATH=/evil' && unset LANG")
    write_bytes(m.sessions / "build" / "timeout", "5000\n")
    sh(m, "default", "export IN_DEFAULT=yes")
    return {p: read_shown(m, p) for p in (
        "env", "network/policy", "ports/3000/name", "sessions/build/env",
        "sessions/build/cwd", "sessions/build/timeout", "sessions/default/env")}


def read_shown(m, path):
    """The file, less what a session's env has of the daemon's and the shell's own: a new
    daemon's proxy has new ports and credentials, and the cd that brings its cwd back sets
    OLDPWD, as a write to cwd does."""
    lines = read_bytes(m.mnt / path).splitlines(keepends=True)
    if path.endswith("/env") and path != "env":
        lines = [line for line in lines
                 if not line.lower().split(b"=")[0].endswith(b"proxy")
                 and not line.startswith(b"OLDPWD=")]
    return b"".join(lines)


def check_state(m, before):
    for path, data in before.items():
        assert read_shown(m, path) == data, path
    assert session_ids(m) == ["build", "default"]
    env = m.read_env(m.sessions / "build")
    assert env["MINE"] == "1" and env["TRICK"] == "$'two\\nPATH=/evil'" and "LANG" not in env
    assert env["ROOTVAR"] == "root value" and env["PATH"] != "/evil"
    assert sh(m, "build", 'pwd; printf "%s|%s" "$TRICK" "$ROOTVAR"') == \
        f"{m.cmd_ws}/sub/odd dir\ntwo\nPATH=/evil|root value"
    for s in ("build", "default"):
        restored = status(m, s)["restored"]
        assert re.fullmatch(r"[0-9]+\.[0-9]{3}", restored), restored
        assert abs(float(restored) - time.time()) < 120, restored
    # the listener came back
    assert read_bytes(m.mnt / "ports" / "3000" / "url").startswith(b"http://")


def test_a_restart_brings_back_sessions_env_policy_and_ports():
    with conf_mount() as m:
        assert status(m, "default")["restored"] == "no"
        before = make_state(m)
        bounded(os.mkdir, m.sessions / "gone", what="mkdir sessions/gone")
        os.rmdir(m.sessions / "gone")
        # a process does not outlive its daemon
        sh(m, "build", f"sleep 1000 & echo $! > {m.cmd_ws}/pid")
        m.stop()
        m.start(timeout=30)
        check_state(m, before)
        assert sh(m, "build", f"kill -0 $(cat {m.cmd_ws}/pid) 2>/dev/null || echo ended") == \
            "ended\n"
        # what comes back is saved again: a second restart keeps it too
        m.stop()
        m.start(timeout=30)
        check_state(m, before)


def test_a_crash_loses_nothing_saved_before_it():
    with conf_mount() as m:
        before = make_state(m)
        time.sleep(0.5)  # a save follows a change within 100 ms
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait(timeout=10)
        wait_until(lambda: not os.path.ismount(m.mnt), 20, "the watchdog's unmount")
        m.abort()
        m.start(timeout=30)
        check_state(m, before)


@pytest.mark.skipif(isolation_none(), reason="the host's network has no policy")
def test_a_changed_config_wins_over_a_saved_policy():
    with conf_mount("[network]\nallow = first.test\n") as m:
        write_bytes(m.mnt / "network" / "policy", "allow example.test\n")
        write_bytes(m.mnt / "env", "ADDED=1\n")
        m.stop()
        m.start(timeout=30)  # the config as it was: the saved policy holds
        assert "example.test" in read_bytes(m.mnt / "network" / "policy").decode()
        m.stop()
        m.config.write_text("[network]\nallow = other.test\n")
        m.start(timeout=30)
        policy = read_bytes(m.mnt / "network" / "policy").decode()
        assert "other.test" in policy and "example.test" not in policy, policy
        assert "changed since it was saved" in m.daemon_log()
        # the root env is the mount's alone (no config makes it): it stays
        assert read_bytes(m.mnt / "env") == b"ADDED=1\n"


def test_saved_files_are_checked_like_a_users_write():
    with conf_mount() as m:
        bounded(os.mkdir, m.sessions / "s1", what="mkdir sessions/s1")
        m.stop()
        saved = m.state / "saved"
        # a session dir whose name no session may have, a link, and an env that no write takes
        (saved / "sessions" / "bad name").mkdir()
        os.symlink("/etc", saved / "sessions" / "linked")
        (saved / "sessions" / "s1" / "env").write_text("1BAD=x\n")
        (saved / "ports").write_text("99999 x\n")
        m.start(timeout=30)
        assert session_ids(m) == ["default", "s1"]
        assert "1BAD" not in read_bytes(m.sessions / "s1" / "env").decode()
        assert os.listdir(m.mnt / "ports") == ["expose"]
        errors = read_bytes(m.mnt / "errors").decode()
        assert "ports" in errors and "sessions" in errors, errors


def test_a_start_waits_for_the_watchdog_of_a_daemon_that_died():
    """A daemon killed leaves its watchdog cleaning up (its processes, cgroups, mounts), holding
    the state dir's lock the daemon's pid is still written in; a start then waits for it, as
    for a daemon stopping, rather than refusing after a second."""
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-restart-"), "")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.pwrite(fd, b'%d\\n' % int(sys.argv[2]), 0)\n"
         "print('held', flush=True)\n"
         "time.sleep(2.5)\n", str(m.state / "lock"), str(dead_pid())],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        started(m, timeout=30)
        assert holder.poll() is not None  # it started once the holder let go, not before
        assert "still stopping; waiting for it" in m.daemon_log()
    finally:
        holder.kill()
        if m.alive():
            stopped_cleanly(m, "restart's sbxfs")
        else:
            m.cleanup_tmp()


def dead_pid():
    """The pid of a process that has ended and been reaped."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid
