"""Stopping the daemon: every way of unmounting ends all shells and processes and leaves the
mount point clean. Each test runs its own private sbxfs."""

import os
import shlex
import signal
import subprocess
import tempfile

import pytest

from sbxutil import (SbxMount, descendants, is_mounted, mounts_on, kill_quietly, pid_alive,
                     procs_matching, read_pipe_until, run_proc, sbxfs_binary, sleep_tag, status,
                     uniq, wait_file_sh, wait_until, write_bytes, cat_pipe)


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


def _identity(pid):
    """(pid, start time) of a process, its state aside, or None once it is reaped: a pid reused
    by another process does not pass for the one that was there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return pid, int(data[data.rindex(b")") + 2:].split()[19])


@pytest.mark.sbx_timeout(240)
@pytest.mark.heavy
def test_unmount_returns_once_the_daemon_is_gone():
    """`sbxfs MNT && sbxfs -u MNT && sbxfs MNT`, as a newcomer types it, 100 times: every mount
    finds its state dir free, and when -u returns the daemon has exited and none of its
    children is left behind (not even as a zombie: the daemon reaps them before it exits, so
    none becomes init's to reap)."""
    m = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-remount-"))
    mount = [a for a in m.command_line() if a != "-f"]
    unmount = [str(sbxfs_binary()), "-u", str(m.mnt)]
    try:
        for i in range(100):
            res = run_proc(mount, timeout=30)
            assert res.returncode == 0, f"mount {i}: {res.stderr.decode(errors='replace')}"
            daemon = int((m.state / "sbxfs.pid").read_text())
            family = [_identity(p) for p in descendants(daemon)]
            assert family, "the daemon has no children (launcher, watchdog) to check"
            res = run_proc(unmount, timeout=30)
            assert res.returncode == 0, f"-u {i}: {res.stderr.decode(errors='replace')}"
            assert not pid_alive(daemon), f"-u {i} returned while the daemon still ran"
            left = [f for f in family if f and _identity(f[0]) == f]
            assert not left, f"-u {i}: children of the daemon left: {left}"
    finally:
        if is_mounted(m.mnt):
            run_proc(unmount, timeout=30)
        m.cleanup_tmp()


def test_a_second_mount_on_a_busy_state_dir_names_the_other_daemon(fresh_mount):
    """A state dir in use by a mount that is not stopping: the second mount fails after a
    moment, naming the daemon that holds it and what to pass instead."""
    m = fresh_mount()
    other = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-busy-"))
    try:
        args = [str(sbxfs_binary()), "--workspace", str(other.ws), "--state-dir",
                str(m.state), str(other.mnt)]
        res = run_proc(args, timeout=30)
        err = res.stderr.decode(errors="replace")
        assert res.returncode == 1, err
        assert f"state dir {m.state}: in use by another sbxfs (pid {m.proc.pid})" in err, err
        assert "--state-dir" in err, err
        assert m.run(m.new_session(), "echo still") == (b"still\n", b"", 0)
    finally:
        other.cleanup_tmp()


def test_a_mount_waits_for_the_daemon_still_stopping(fresh_mount):
    """An unmount that does not wait (fusermount3 -u, umount) and a mount at once on the same
    state dir: the new mount says the old daemon is still stopping, waits for it, and mounts."""
    m = fresh_mount()
    # A session with a command whose kill takes the grace: the old daemon stops slowly.
    s = m.new_session()
    m.submit(s, "trap '' TERM; sleep 1000")
    for point in mounts_on(m.mnt):  # workspace/ and the covers of the trees the sandbox writes
        subprocess.run(["umount", "-l", point], check=True, timeout=10)
    res = m.fusermount_unmount()
    assert res.returncode == 0, res.stderr
    res = run_proc([a for a in m.command_line() if a != "-f"], timeout=60)
    err = res.stderr.decode(errors="replace")
    try:
        assert res.returncode == 0, err
        assert m.wait_exit(10) == 0
    finally:
        run_proc([str(sbxfs_binary()), "-u", str(m.mnt)], timeout=30)


def _signals_caught(pid):
    """The set of signals pid has a handler for (SigCgt of its status)."""
    with open(f"/proc/{pid}/status") as f:
        mask = int(next(line for line in f if line.startswith("SigCgt:")).split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_sigint_stops_a_daemon_started_in_the_background_of_a_script():
    """`sbxfs -f MNT &` in a script: bash starts background jobs with SIGINT ignored, and libfuse
    sets its handler only over the default. The daemon handles SIGINT all the same, and a
    kill -INT unmounts it."""
    m = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-bg-"))
    pidfile = m.tmp / "bg.pid"
    script = f"{shlex.join(m.command_line())} 2>{shlex.quote(str(m.stderr_log))} & " \
             f"echo $! > {shlex.quote(str(pidfile))}; wait"
    shell = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    try:
        wait_until(lambda: is_mounted(m.mnt) and pidfile.exists(), 10, "the mount",
                   show=m.daemon_log)
        daemon = int(pidfile.read_text())
        assert signal.SIGINT in _signals_caught(daemon)
        os.kill(daemon, signal.SIGINT)
        assert shell.wait(timeout=15) == 0, m.daemon_log()
        assert not is_mounted(m.mnt)
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait(timeout=10)
        if is_mounted(m.mnt):
            run_proc([str(sbxfs_binary()), "-u", str(m.mnt)], timeout=30)
        m.cleanup_tmp()


@pytest.mark.parametrize("how", ["Ctrl-C", "SIGTERM"])
def test_a_stop_by_signal_with_a_terminal_open_logs_no_warning(fresh_mount, how):
    """Ctrl-C on the terminal of `sbxfs -f` (SIGINT to its whole process group: the launcher
    is not in it) or SIGTERM to the daemon, with a terminal running: the shutdown logs only
    that it unmounted, no launcher restart and no cgroup of the terminal already gone."""
    m = fresh_mount()  # its own session: the daemon leads its process group, as in a shell
    term = m.sessions / "default" / "terms" / uniq("t")
    os.mkdir(term)
    write_bytes(term / "cmd", "bash\n")
    wait_until(lambda: status(term)["state"] == "running", 10, "the terminal")
    before = m.stderr_log.read_text()
    if how == "Ctrl-C":
        os.killpg(m.proc.pid, signal.SIGINT)
    else:
        m.proc.send_signal(signal.SIGTERM)
    assert m.wait_exit(15) == 0, m.daemon_log()
    after = m.stderr_log.read_text()[len(before):]
    assert after.splitlines() == ["sbxfs: unmounted"], after
