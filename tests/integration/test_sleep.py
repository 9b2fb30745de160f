"""[sandbox] sleep_after (src/sandbox/idle.c) on a mount of its own: idle that long, the daemon
stops itself as an unmount would, saving what outlives it, and leaves STATE_DIR/slept; the next
start removes it and brings the sessions back. What runs, an open file and keep_alive keep it
awake (the fleet's tests wake it by a use). A stop by signal unmounts whatever path the mount
was given."""

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from sbxutil import (ConfMount, extra_args, is_mounted, parse_status, read_bytes, sbxfs_binary,
                     started, stopped_cleanly, wait_until)


def stop_unless_asleep(m):
    """A daemon still up is stopped and checked; one that slept is only cleaned up after."""
    if m.alive():
        stopped_cleanly(m, "sleep's sbxfs")
    else:
        m.abort()
        m.cleanup_tmp()


def test_an_idle_daemon_stops_itself_and_the_next_start_brings_the_sessions_back():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-sleep-"), "[sandbox]\nsleep_after = 1\n"),
                timeout=30)
    try:
        out, err, code = m.run(m.sessions / "default", "export MINE=slept-through")
        assert code == 0, err
        assert m.proc.wait(timeout=20) == 0, m.daemon_log()
        assert not is_mounted(m.mnt) and not is_mounted(m.workspace)
        assert (m.state / "slept").read_text().strip().isdigit()
        assert "idle for 1 s: sleeping" in m.daemon_log()
        m.config.write_text("")  # the next daemon stays up for the test's own stop
        m.start(timeout=30)
        assert not (m.state / "slept").exists()
        out, err, code = m.run(m.sessions / "default", 'echo "$MINE"')
        assert (out, code) == (b"slept-through\n", 0), err
        st = parse_status(read_bytes(m.sessions / "default" / "status"))
        assert st["restored"] != "no"
    finally:
        stop_unless_asleep(m)


def test_keep_alive_and_a_running_command_keep_it_awake():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-sleep-"), "[sandbox]\nsleep_after = 1\n"),
                timeout=30)
    try:
        (m.state / "keep_alive").touch()
        time.sleep(2.5)
        assert m.alive(), m.daemon_log()
        (m.state / "keep_alive").unlink()
        m.submit(m.sessions / "default", "sleep 3")
        time.sleep(2.5)
        assert m.alive(), m.daemon_log()
        assert m.proc.wait(timeout=20) == 0, m.daemon_log()
    finally:
        stop_unless_asleep(m)


def test_a_stop_by_signal_unmounts_a_mount_given_by_a_relative_path(tmp_path):
    for d in ("ws", "state", "mnt"):
        (tmp_path / d).mkdir()
    subprocess.run([str(sbxfs_binary()), "--workspace", "ws", "--state-dir", "state",
                    *extra_args(), "mnt"], cwd=tmp_path, check=True, timeout=60,
                   stdin=subprocess.DEVNULL)
    pid = int((tmp_path / "state" / "sbxfs.pid").read_text())
    assert is_mounted(tmp_path / "mnt")
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or
               Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z", 20,
               "the daemon to end")
    left = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if str(tmp_path / "mnt") in line.split()[4]]
    assert left == [], left
