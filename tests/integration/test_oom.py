"""Memory hogs: a session's hog is OOM-killed fast inside the session's own memory group, the
rest of its command with it, its shell and the other sessions keep answering, and the status
files report the kill.

The mount has memory_max = 1G and the default memory_reserve (256M), so each session's own
limit is 768M; every hog here is bounded by that limit (the machine has far more).
"""

import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from sbxutil import (status, ConfMount, bounded, isolation_none, procs_matching, read_bytes,
                     sleep_tag, uniq, wait_until, write_bytes, write_errno, sh, limits)

MEMORY_MAX = 1 << 30
SESSION_MAX = MEMORY_MAX - (256 << 20)
CONFIG = """[sandbox]
memory_max = 1G
tmp_size = 128M
shm_size = 64M
"""
# A hog that allocates (and touches: bytearray zeroes it) 16 MiB at a time until it is killed.
HOG = "python3 -c 'b = []\nwhile True: b.append(bytearray(16 << 20))'"
# The target of the issue is 10 s at 1G; here (an idle machine) it takes about 0.5 s.
HOG_DEADLINE = 10


@pytest.fixture(scope="module")
def oom():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-oom-"), CONFIG)
    try:
        m.start(timeout=10)
        lim = limits(m)
        if "memory_max" not in lim:
            pytest.skip(f"no memory cgroup for the sandbox (limits: {lim}): nothing to limit")
        yield m
    finally:
        m.discard()


class Prober:
    """Runs `echo` in a session over and over in a thread, timing each answer."""

    def __init__(self, m, s):
        self.m, self.s, self.times, self.stop = m, s, [], threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        try:
            while not self.stop.is_set():
                t = time.monotonic()
                out = self.m.run(self.s, "echo alive", timeout=60)
                self.times.append(time.monotonic() - t)
                assert out == (b"alive\n", b"", 0), out
                time.sleep(0.05)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self):
        self.stop.set()
        self.thread.join(90)
        assert not self.thread.is_alive(), "the probing session hung"
        if self.error:
            raise self.error
        return self.times


def test_limits_show_the_sessions_own_limit(oom):
    lim = limits(oom)
    assert int(lim["memory_max"]) == MEMORY_MAX, lim
    assert int(lim["session_memory_max"]) == SESSION_MAX, lim


def test_hog_is_killed_fast_and_its_shell_lives(oom):
    m = oom
    hog, other = m.new_session(), m.new_session()
    assert sh(m, hog, "echo warm") == ("warm\n", "", 0)
    st = status(hog)
    assert st["oom_kills"] == "0" and st["oom_killed"] == "no", st
    shell = st["shell_pid"]
    kills_before = int(limits(m)["oom_kills"])
    probe = Prober(m, other)
    wait_until(lambda: probe.times, 10, "the other session's first echo")
    t = time.monotonic()
    out, err, code = sh(m, hog, HOG, timeout=120)
    took = time.monotonic() - t
    times = probe.finish()
    assert took < HOG_DEADLINE, f"the hog took {took:.1f}s to be killed"
    assert (out, code) == ("", 137) and "Killed" in err, (out, err, code)
    st = status(hog)
    assert st["oom_killed"] == "yes" and st["oom_kills"] == "1", st
    assert st["killed"] == "no" and st["signal"] == "0", st
    assert st["restarts"] == "0" and st["shell_pid"] == shell, st
    assert sh(m, hog, "echo next; /bin/true && echo forked") == ("next\nforked\n", "", 0)
    st = status(hog)
    assert st["oom_killed"] == "no" and st["oom_kills"] == "1", st
    # the other session answered all along, and quickly (loose: the machine is shared)
    assert max(times) < 3, f"echo in the other session took up to {max(times):.2f}s"
    assert status(other)["oom_kills"] == "0"
    lim = limits(m)
    assert int(lim["oom_kills"]) == kills_before + 1, lim
    assert int(lim["memory_current"]) < SESSION_MAX, lim


def test_runs_keep_their_own_oom_status(oom):
    m = oom
    s = m.new_session()
    assert sh(m, s, HOG, timeout=120)[2] == 137
    n = int(status(s)["command"])
    assert sh(m, s, "echo after") == ("after\n", "", 0)
    assert status(Path(s) / "runs" / str(n))["oom_killed"] == "yes"
    assert status(Path(s) / "runs" / str(n + 1))["oom_killed"] == "no"


@pytest.mark.parametrize("script", [
    HOG + " || echo \"the script goes on\"",
    # a pool that respawns its killed worker would stay at the limit for ever
    "while :; do " + HOG + "; echo respawn; done",
    "sleep TAG & " + HOG + "; wait; echo 'the script goes on'",
], ids=["handled", "respawned", "with-a-job"])
def test_the_whole_command_ends(oom, script):
    """The OOM killer ends one process; sbxfs then ends the rest of the command, as a kill
    would: it reads 137 whatever its script would have done, and nothing of it is left. The
    script may take a step or two in the few ms between the two kills."""
    m = oom
    s = m.new_session()
    tag = sleep_tag()
    t = time.monotonic()
    out, err, code = sh(m, s, script.replace("TAG", tag), timeout=120)
    assert time.monotonic() - t < HOG_DEADLINE
    assert code == 137, (out, err, code)
    assert out in ("", "the script goes on\n") or set(out.split()) == {"respawn"}, out
    assert out.count("respawn") < 4, out
    st = status(s)
    assert st["oom_killed"] == "yes" and st["oom_kills"] == "1", st
    assert st["killed"] == "no" and st["restarts"] == "0", st
    assert not procs_matching(f"sleep {tag}"), "the command's job outlived it"
    time.sleep(1)
    assert status(s)["oom_kills"] == "1", "something of the command went on hogging"
    assert sh(m, s, "echo next") == ("next\n", "", 0)


def test_the_kill_stays_in_the_offending_session(oom):
    """Session B holds 180M (within the 256M that A's own limit leaves); session A runs eight
    workers of 120M. Past A's own limit (768M), the kernel kills one of A's workers, never
    B's holder, which a kill at the sandbox's limit (1G) would pick as the biggest process."""
    m = oom
    a, b = m.new_session(), m.new_session()
    flag = uniq("held")
    holder = Path(b) / "procs" / "holder"
    bounded(os.mkdir, holder)
    write_bytes(holder / "cmd", "exec python3 -c 'import time\nb = bytearray(180 << 20)\n"
                                f"open(\"{m.cmd_ws}/{flag}\", \"w\").close()\ntime.sleep(600)'")
    try:
        wait_until(lambda: (m.ws / flag).exists(), 30, "the holder to hold its 180M",
                   show=lambda: status(holder))
        out, err, code = sh(m, a, "for i in 1 2 3 4 5 6 7 8; do python3 -c 'import time\n"
                                  "b = bytearray(120 << 20)\ntime.sleep(2)' & done; wait; "
                                  "echo done", timeout=120)
        assert (out, code) == ("", 137), (out, err, code)
        st = status(a)
        assert st["oom_killed"] == "yes" and int(st["oom_kills"]) >= 1, st
        st = status(holder)
        assert st["state"] == "running" and st["oom_killed"] == "no", st
        assert status(b)["oom_kills"] == "0"
    finally:
        if status(holder)["state"] == "running":
            assert write_errno(holder / "ctl", "kill KILL\n", flags=os.O_WRONLY) == 0
        wait_until(lambda: status(holder)["state"] != "running", 10, "the holder to end")


def test_a_shell_that_is_the_hog_is_replaced(oom):
    """A builtin that grows the shell itself: the OOM killer can only take the shell. The
    command reads 137 with oom_killed yes, and the next one gets a fresh shell with the env
    and cwd of the last command that completed."""
    m = oom
    s = m.new_session()
    assert sh(m, s, "export KEEP=kept; cd /tmp") == ("", "", 0)
    out, err, code = sh(m, s, 'printf -v big "%01000000000d" 0; echo survived', timeout=120)
    assert code == 137 and "survived" not in out, (out, err, code)
    st = status(s)
    assert st["oom_killed"] == "yes" and st["oom_kills"] == "1", st
    assert sh(m, s, "echo $KEEP; pwd") == ("kept\n/tmp\n", "", 0)
    assert status(s)["restarts"] == "1"


def test_background_hog_is_reported(oom):
    m = oom
    s = m.new_session()
    assert sh(m, s, "echo fg") == ("fg\n", "", 0)
    p = Path(s) / "procs" / "hog"
    bounded(os.mkdir, p)
    write_bytes(p / "cmd", HOG)
    t = time.monotonic()
    assert int(read_bytes(p / "exit", timeout=60)) == 137
    assert time.monotonic() - t < HOG_DEADLINE
    st = status(p)
    assert (st["state"], st["signal"], st["exit"], st["oom_killed"]) == \
        ("killed", "9", "137", "yes"), st
    st = status(s)
    assert st["oom_kills"] == "1", "the session counts its background processes' kills"
    assert st["oom_killed"] == "no", "its foreground command was not touched"
    assert sh(m, s, "echo fine") == ("fine\n", "", 0)
    write_bytes(p / "cmd", "echo again")
    assert int(read_bytes(p / "exit", timeout=30)) == 0
    assert status(p)["oom_killed"] == "no", "a new start has its own report"


@pytest.mark.skipif(isolation_none(), reason="--isolation none: /tmp and /dev/shm are the "
                    "host's, not the sandbox's sized tmpfs")
def test_full_tmp_takes_no_shell(oom):
    """/tmp + /dev/shm full fit in a session's limit: ENOSPC, no OOM kill."""
    m = oom
    s = m.new_session()
    out, err, code = sh(m, s, "head -c 1G /dev/zero > /tmp/big; head -c 1G /dev/zero > "
                              "/dev/shm/big; rm -f /tmp/big /dev/shm/big; echo alive",
                        timeout=60)
    assert out == "alive\n" and err.count("No space left on device") == 2, (out, err)
    st = status(s)
    assert st["oom_kills"] == "0" and st["restarts"] == "0", st
