"""Bounded disk: the workspace image of [sandbox] workspace_max (a command that fills it gets
ENOSPC, the control plane and the host's workspace/ keep working, the image and its files
survive a restart), the spool budget of [session] spool_max (the oldest runs' output goes first,
the newest is exact), and the rotation of the daemon's log at [sbxfs] log_max."""

import json
import os
import re
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from sbxutil import (ConfMount, is_mounted, read_bytes, sbxfs_binary, spool_stats, status,
                     wait_until, write_bytes)

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="workspace_max loop-mounts an image: root only")

MiB = 1 << 20
WS_MAX = 64 * MiB
SPOOL_MAX = 8 * MiB
# Bytes the budget may be passed by: none is expected (room is taken before a write); a page
# for the rounding of a file's last block.
SPOOL_SLACK = 64 * 1024


def image_of(m):
    return m.state / "workspace.img"


def loop_devices_of(img):
    out = subprocess.run(["losetup", "-j", str(img)], capture_output=True, text=True,
                         timeout=10).stdout
    return [line.split(":")[0] for line in out.splitlines() if line.strip()]


@contextmanager
def running(m):
    """Starts m, stops it cleanly on the way out and checks that nothing is left mounted."""
    try:
        m.start(timeout=20)
        yield m
        m.check_alive("during this test")
    finally:
        problems = m.stop() if m.alive() else []
        m.abort()
    assert not problems, "unclean shutdown:\n" + "\n".join(problems)


@contextmanager
def conf_mount(config_text, prefix="sbxfs-it-disk-"):
    m = ConfMount(tempfile.mkdtemp(prefix=prefix), config_text)
    try:
        yield m
    finally:
        if m.alive():
            m.stop()
        m.abort()
        if is_mounted(m.ws):  # never rm -rf through a live image mount
            subprocess.run(["umount", "-l", str(m.ws)], capture_output=True, timeout=10)
        m.cleanup_tmp()


def ws_config(size="64M"):
    return f"[sandbox]\nworkspace_max = {size}\n"


def no_space(stderr):
    return b"No space left on device" in stderr or b"Disk quota exceeded" in stderr


# --- the workspace image -----------------------------------------------------------------------

@needs_root
def test_a_full_workspace_gives_enospc_and_the_control_plane_keeps_working():
    with conf_mount(ws_config()) as m, running(m):
        assert is_mounted(m.ws), "the image is not mounted over the workspace directory"
        s = m.new_session()
        ws = m.cmd_ws
        out, err, code = m.run(s, f"fallocate -l 100M {ws}/big; echo rc=$?", timeout=60)
        assert out == b"rc=1\n" and no_space(err), (out, err)
        out, err, code = m.run(s, f"rm -f {ws}/big; head -c 100M /dev/zero > {ws}/fill; "
                               f"echo rc=$?", timeout=60)
        assert out == b"rc=1\n" and no_space(err), (out, err)
        # what it holds is bounded by the image, on the host's disk too
        fill = os.stat(m.workspace / "fill").st_size
        assert 32 * MiB < fill <= WS_MAX, fill
        assert image_of(m).stat().st_blocks * 512 <= WS_MAX + MiB
        vfs = os.statvfs(m.workspace)
        assert vfs.f_blocks * vfs.f_frsize <= WS_MAX and vfs.f_bavail == 0, vfs
        # the control plane answers: the same session, a new one, background processes
        assert m.run(s, "echo alive") == (b"alive\n", b"", 0)
        t = m.new_session()
        assert m.run(t, "echo also") == (b"also\n", b"", 0)
        os.mkdir(s / "procs" / "p")
        write_bytes(s / "procs" / "p" / "cmd", "echo bg\n")
        assert read_bytes(s / "procs" / "p" / "stdout") == b"bg\n"
        # the host's view works, and space comes back once the file is gone
        (m.workspace / "fill").unlink()
        (m.workspace / "host.txt").write_bytes(b"from the host\n")
        assert m.run(s, f"cat {ws}/host.txt; echo x > {ws}/cmd.txt") == (
            b"from the host\n", b"", 0)
        assert (m.workspace / "cmd.txt").read_bytes() == b"x\n"
        # the configured directory itself is the image while the daemon runs
        assert (m.ws / "host.txt").read_bytes() == b"from the host\n"
        mounts = Path("/proc/self/mountinfo").read_text()
        line = next(l for l in mounts.splitlines() if l.split()[4] == str(m.ws))
        assert "nosuid" in line.split()[5] and "nodev" in line.split()[5], line
    img = image_of(m)
    assert not is_mounted(m.ws), "the image stayed mounted after the daemon stopped"
    wait_until(lambda: not loop_devices_of(img), 10, "the loop device to detach itself")


@needs_root
def test_the_image_and_its_files_survive_a_restart_and_it_grows():
    with conf_mount(ws_config()) as m:
        with running(m):
            s = m.new_session()
            assert m.run(s, f"echo kept > {m.cmd_ws}/kept.txt; mkdir {m.cmd_ws}/d")[2] == 0
            assert sorted(os.listdir(m.workspace)) == ["d", "kept.txt"]
        # stopped: the directory underneath is empty again, the files are in the image
        assert os.listdir(m.ws) == []
        size = image_of(m).stat().st_size
        assert size == WS_MAX
        with running(m):
            s = m.new_session()
            assert m.run(s, f"cat {m.cmd_ws}/kept.txt") == (b"kept\n", b"", 0)
        # a bigger workspace_max grows the image, files kept, no lost+found shows
        m.config.write_text(ws_config("128M"))
        with running(m):
            assert image_of(m).stat().st_size == 128 * MiB
            s = m.new_session()
            assert m.run(s, f"cat {m.cmd_ws}/kept.txt") == (b"kept\n", b"", 0)
            assert sorted(os.listdir(m.workspace)) == ["d", "kept.txt"]
            out, err, code = m.run(s, f"head -c 80M /dev/zero > {m.cmd_ws}/big; echo rc=$?",
                                   timeout=60)
            assert out == b"rc=0\n", err
        # and a smaller one is refused at start, saying why
        m.config.write_text(ws_config("64M"))
        res = subprocess.run(m.command_line(), capture_output=True, timeout=30)
        assert res.returncode != 0
        assert b"never shrunk" in res.stderr, res.stderr
        assert not is_mounted(m.mnt) and not is_mounted(m.ws)


@needs_root
def test_a_new_image_is_refused_over_a_workspace_that_has_files():
    with conf_mount(ws_config()) as m:
        (m.ws / "precious.txt").write_text("mine\n")
        res = subprocess.run(m.command_line(), capture_output=True, timeout=30)
        assert res.returncode != 0
        assert b"is not empty" in res.stderr, res.stderr
        assert not image_of(m).exists() and not is_mounted(m.ws)
        assert (m.ws / "precious.txt").read_text() == "mine\n"


@needs_root
def test_the_image_of_a_killed_daemon_is_unmounted_and_reused():
    with conf_mount(ws_config()) as m:
        m.start(timeout=20)
        s = m.new_session()
        assert m.run(s, f"echo before > {m.cmd_ws}/f")[2] == 0
        m.proc.kill()
        m.proc.wait(timeout=10)
        # the watchdog cleans up after it
        wait_until(lambda: not is_mounted(m.ws), 20, "the watchdog to unmount the image")
        m.abort()
        with running(m):
            s = m.new_session()
            assert m.run(s, f"cat {m.cmd_ws}/f") == (b"before\n", b"", 0)


def watchdog_of(pid):
    """The daemon's watchdog: its child running the sbxfs binary in a session of its own."""
    exe = os.path.realpath(sbxfs_binary())
    for child in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and int(fields[3]) == int(child) and \
                    os.path.realpath(f"/proc/{child}/exe") == exe:
                return int(child)
        except (OSError, IndexError, ValueError):
            continue
    return None


def remove_cgroups_of(pid):
    """What the killed watchdog would have removed: the dead daemon's cgroups, once empty."""
    tops = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        hierarchy = controllers.split(",")[0].replace("name=", "") or "unified"
        for base in (Path("/sys/fs/cgroup") / hierarchy, Path("/sys/fs/cgroup")):
            if (base / path.lstrip("/") / f"sbxfs-{pid}").is_dir():
                tops.append(base / path.lstrip("/") / f"sbxfs-{pid}")
                break
    for top in tops:
        def empty(d):
            return not (d / "cgroup.procs").exists() or not (d / "cgroup.procs").read_text()
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            wait_until(lambda: empty(d), 10, f"{d} to be empty")
            d.rmdir()
        wait_until(lambda: empty(top), 10, f"{top} to be empty")
        top.rmdir()


@needs_root
def test_an_image_left_mounted_by_a_daemon_and_watchdog_both_killed_is_reused():
    with conf_mount(ws_config()) as m:
        m.start(timeout=20)
        s = m.new_session()
        assert m.run(s, f"echo before > {m.cmd_ws}/f")[2] == 0
        watchdog = watchdog_of(m.proc.pid)
        assert watchdog, "no watchdog found"
        os.kill(watchdog, 9)
        m.proc.kill()
        m.proc.wait(timeout=10)
        m.abort()
        assert is_mounted(m.ws), "nothing was left behind: the test tests nothing"
        remove_cgroups_of(m.proc.pid)
        with running(m):
            s = m.new_session()
            assert m.run(s, f"cat {m.cmd_ws}/f; echo after > {m.cmd_ws}/f") == (
                b"before\n", b"", 0)
            assert "detached the workspace image" in m.daemon_log()
            assert len([l for l in Path("/proc/self/mountinfo").read_text().splitlines()
                        if l.split()[4] == str(m.ws)]) == 1, "mounted twice"
        assert not is_mounted(m.ws)


# --- the spool budget --------------------------------------------------------------------------

def spool_bytes(m):
    """What the daemon's spool files hold on disk (allocated and apparent, the larger)."""
    return sum(max(st.st_size, st.st_blocks * 512) for st in spool_stats(m))


def three_mib_of(ch):
    return f"head -c 3M /dev/zero | tr '\\0' '{ch}'"


def test_the_spool_budget_drops_the_oldest_runs_output_first():
    with conf_mount("[session]\nspool_max = 8M\n") as m, running(m):
        s = m.new_session()
        letters = "abcde"
        for i, ch in enumerate(letters):
            out, err, code = m.run(s, three_mib_of(ch), timeout=60)
            assert code == 0
            # the newest output is exact
            assert out == ch.encode() * (3 * MiB), (i, len(out))
            used = spool_bytes(m)
            assert used <= SPOOL_MAX + SPOOL_SLACK, used
        # stdout and output of one run are 6 MiB: only the newest fits
        newest = status(s / "runs" / "5")
        assert newest["truncated"] == "no" and "output_dropped" not in newest, newest
        assert read_bytes(s / "runs" / "5" / "output") == b"e" * (3 * MiB)
        for n in range(1, 5):
            st = status(s / "runs" / str(n))
            assert st["output_dropped"] == "yes" and st["truncated"] == "yes", (n, st)
            assert read_bytes(s / "runs" / str(n) / "stdout") == b""
            assert st["exit"] == "0", st
        res = json.loads(read_bytes(s / "runs" / "1" / "result"))
        assert res["stdout"] == "" and res["stdoutTruncated"] is True, res
        assert res["truncated"] is True, res
        assert json.loads(read_bytes(s / "runs" / "5" / "result"))["truncated"] is False


def test_two_sessions_printing_at_once_stay_within_the_budget():
    with conf_mount("[session]\nspool_max = 8M\n") as m, running(m):
        a, b = m.new_session(), m.new_session()
        slow = "for i in 1 2 3; do head -c 1M /dev/zero | tr '\\0' {}; sleep 0.2; done"
        m.submit(a, slow.format("a"))
        m.submit(b, slow.format("b"))
        peak = 0
        while m.read(a, "status").find(b"run_state done") < 0 or \
                m.read(b, "status").find(b"run_state done") < 0:
            peak = max(peak, spool_bytes(m))
            time.sleep(0.02)
        assert peak <= SPOOL_MAX + SPOOL_SLACK, peak
        # a is the older run: it made room for b, whose output is whole
        assert m.read(b, "stdout") == b"b" * (3 * MiB)
        assert status(b).get("output_dropped") is None
        assert status(a)["output_dropped"] == "yes" and m.read(a, "stdout") == b""
        assert m.exit_status(a) == 0 and m.exit_status(b) == 0


def test_a_command_alone_past_the_budget_is_truncated_as_past_output_cap():
    with conf_mount("[session]\nspool_max = 8M\n") as m, running(m):
        s = m.new_session()
        out, err, code = m.run(s, "head -c 3M /dev/zero; head -c 20M /dev/zero | tr '\\0' z; "
                               "echo end >&2", timeout=60)
        assert code == 0
        # its stdout and output share the budget; what passed it was read and dropped
        assert 3 * MiB < len(out) <= 4 * MiB + SPOOL_SLACK, len(out)
        assert out[:3 * MiB] == b"\0" * (3 * MiB)
        st = status(s)
        assert st["truncated"] == "yes" and "output_dropped" not in st, st
        assert spool_bytes(m) <= SPOOL_MAX + SPOOL_SLACK
        # the next command drops it and is exact
        assert m.run(s, "echo next") == (b"next\n", b"", 0)
        assert status(s / "runs" / "1")["output_dropped"] == "yes"


def test_background_processes_share_the_budget_and_say_when_theirs_was_dropped():
    with conf_mount("[session]\nspool_max = 8M\n") as m, running(m):
        s = m.new_session()
        os.mkdir(s / "procs" / "bg")
        write_bytes(s / "procs" / "bg" / "cmd", three_mib_of("b") + "\n")
        assert read_bytes(s / "procs" / "bg" / "exit", timeout=60) == b"0\n"
        assert len(read_bytes(s / "procs" / "bg" / "stdout")) == 3 * MiB
        assert "output_dropped" not in status(s / "procs" / "bg")
        for ch in "cd":
            out, _, code = m.run(s, three_mib_of(ch), timeout=60)
            assert code == 0 and out == ch.encode() * (3 * MiB)
            assert spool_bytes(m) <= SPOOL_MAX + SPOOL_SLACK
        assert status(s / "procs" / "bg")["output_dropped"] == "yes"
        assert read_bytes(s / "procs" / "bg" / "stdout") == b""


# --- the log file ------------------------------------------------------------------------------

def daemon_pids(m):
    """Processes holding the state dir's lock: the daemon (and its watchdog)."""
    lock = str(m.state / "lock")
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == lock for fd in fds):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_the_log_file_rotates_at_log_max():
    """Without -f the daemon logs to STATE_DIR/sbxfs.log; past log_max it becomes sbxfs.log.1
    (one old file is kept) and a new one starts."""
    log_max = 4096
    with conf_mount(f"[sbxfs]\nlog_max = {log_max}\nlog_level = debug\n") as m:
        res = subprocess.run([a for a in m.command_line() if a != "-f"], capture_output=True,
                             timeout=30)
        assert res.returncode == 0, res.stderr
        pids = []
        try:
            wait_until(lambda: (m.sessions / "default").exists(), 10, "the daemon to mount")
            pids = daemon_pids(m)
            log, old = m.state / "sbxfs.log", m.state / "sbxfs.log.1"
            s = m.sessions / "default"
            # each command logs a debug line: more than two files' worth
            for i in range(3 * log_max // 40):
                write_bytes(s / "cmd", f"true {i}\n")
            assert m.exit_status(s) == 0
            assert old.exists(), log.read_text()[-2000:]
            assert 0 < log.stat().st_size <= log_max
            assert 0 < old.stat().st_size <= log_max
            assert sorted(p.name for p in m.state.iterdir() if "log" in p.name) == [
                "sbxfs.log", "sbxfs.log.1"]
            lines = (old.read_text() + log.read_text()).splitlines()
            assert all(line.startswith("sbxfs: ") for line in lines), lines
            numbers = [int(x) for x in re.findall(r"command (\d+) queued", "\n".join(lines))]
            # the newest lines, whole and in order, up to the last command
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
            assert numbers[-1] == 3 * log_max // 40
        finally:
            subprocess.run([str(sbxfs_binary()), "-u", str(m.mnt)], capture_output=True,
                           timeout=30)
            wait_until(lambda: not any(os.path.exists(f"/proc/{p}") for p in pids), 15,
                       "the daemon to exit")
        assert "unmounted" in log.read_text()
