"""Stopping the daemon: every way of unmounting ends all shells and processes and leaves the
mount point clean. Each test runs its own private sbxfs."""

import os
import signal
import subprocess

import pytest

from sbxutil import (descendants, is_mounted, kill_quietly, pid_alive, procs_matching,
                     read_pipe_until, sleep_tag, uniq, wait_file_sh, wait_until, cat_pipe)


def _busy_sessions(m):
    """Two sessions left running: one in a long foreground command, one idle with a
    background job. Returns (sleep tags, every process the daemon started)."""
    fg, bg = sleep_tag(), sleep_tag()
    a, b = m.new_session(), m.new_session()
    m.submit(a, f"sleep {fg}")
    assert m.run(b, f"sleep {bg} >/dev/null 2>&1 &\necho started") == (b"started\n", b"", 0)
    wait_until(lambda: procs_matching(f"sleep {fg}") and procs_matching(f"sleep {bg}"), 10,
               "the session sleeps to start")
    procs = descendants(m.proc.pid)
    assert procs, "no processes under the daemon although sessions are running"
    return (fg, bg), procs


def _stop(m, how):
    if how == "sbxfs -u":
        res = m.unmount()
        assert res.returncode == 0, res.stderr.decode(errors="replace")
    else:
        m.proc.send_signal({"SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}[how])
    rc = m.wait_exit(10)
    assert rc is not None, f"daemon still running 10 s after {how}"
    return rc


@pytest.mark.parametrize("how", ["sbxfs -u", "SIGTERM", "SIGINT"])
def test_unmount_ends_every_shell_and_process(fresh_mount, how):
    m = fresh_mount()
    tags, procs = _busy_sessions(m)
    try:
        rc = _stop(m, how)
        assert rc == 0, f"daemon exit status {rc} after {how}\n{m.daemon_log()}"
        assert not is_mounted(m.mnt), f"{m.mnt} still mounted after {how}"
        assert not is_mounted(m.workspace), f"{m.workspace} still mounted after {how}"
        assert os.listdir(m.mnt) == [], "mount point not left empty"
        wait_until(lambda: not any(pid_alive(p) for p in procs), 5,
                   "the daemon's processes to end",
                   show=lambda: "alive: " + ", ".join(
                       f"{p}" for p in procs if pid_alive(p)))
        for tag in tags:
            assert not procs_matching(f"sleep {tag}"), f"sleep {tag} survived {how}"
    finally:
        kill_quietly([p for p in procs if pid_alive(p)])
        for tag in tags:
            kill_quietly(procs_matching(f"sleep {tag}"))


def test_parked_reader_does_not_prevent_sigterm_shutdown(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    go = uniq("never")
    m.submit(s, f"echo parked; {wait_file_sh(go, 120)}")
    with cat_pipe(s / "stdout", lambda: m.touch(go)) as cat:
        read_pipe_until(cat.stdout, b"parked\n", 10)
        m.proc.send_signal(signal.SIGTERM)
        rc = m.wait_exit(10)
        assert rc is not None, "daemon did not exit on SIGTERM while a reader was parked"
        assert not is_mounted(m.mnt)
        try:
            cat.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("the parked reader is still blocked after the daemon exited")


def test_remount_after_unmount(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    assert m.run(s, "echo before") == (b"before\n", b"", 0)
    assert m.unmount().returncode == 0
    assert m.wait_exit(10) == 0
    m.start()
    assert (m.sessions / "default").is_dir()
    s2 = m.new_session()
    assert m.run(s2, "echo after") == (b"after\n", b"", 0)
