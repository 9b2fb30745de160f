"""Containment: per-session fairness, kills that always win, nothing outlives the daemon.

A fork bomb in one session stays at that session's pids limit ([sandbox] session_pids_max)
while another session answers at once; `ctl kill`/`killall` of a bomb left in the background
empty the session's group but for its shell; a SIGKILL'd daemon leaves no process of its
cgroups behind; a background process's leftovers die with it and are counted in its status.
"""

import errno
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import (ConfMount, bounded, errname, kill_quietly, pid_alive, procs_matching,
                    read_bytes, sleep_tag, status, uniq, wait_until, write_bytes, write_errno,
                    started, stopped_cleanly, sh, ctl, cgroup_tree_pids)

CG_ROOT = "/sys/fs/cgroup"
PIDS_MAX = 512
SESSION_PIDS = 256
CONFIG = f"""[sandbox]
pids_max = {PIDS_MAX}
session_pids_max = {SESSION_PIDS}
memory_max = 1G
tmp_size = 64M
shm_size = 16M

[session]
kill_grace_ms = 500
"""
BOMB = "f(){ f|f& }; f"


# --- helpers -----------------------------------------------------------------------------------


def _start(config=CONFIG):
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-cont-"), config)
    return started(m)


@pytest.fixture(scope="module")
def small():
    m = _start()
    try:
        yield m
    finally:
        stopped_cleanly(m)


@pytest.fixture
def own_mount():
    """A mount of the test's own (killed by it); cleaned up whatever happened."""
    made = []

    def make():
        made.append(_start())
        return made[-1]

    yield make
    for m in made:
        m.discard()


def sandbox_groups(m):
    """{controller: the sandbox's group directory} from the daemon's /proc/PID/cgroup
    (freezer, pids, cpu with v1; "" for v2)."""
    found = {}
    with open(f"/proc/{m.proc.pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            path = "" if path == "/" else path
            for ctrl in ctrls.split(","):
                if ctrl in ("freezer", "pids", "cpu"):
                    d = f"{CG_ROOT}/{ctrl}{path}/sbxfs-{m.proc.pid}"
                elif ctrl == "":
                    d = f"{CG_ROOT}{path}/sbxfs-{m.proc.pid}"
                    if not os.path.exists(f"{CG_ROOT}/cgroup.controllers"):
                        d = f"{CG_ROOT}/unified{path}/sbxfs-{m.proc.pid}"
                else:
                    continue
                if os.path.isdir(d):
                    found[ctrl] = d
    return found


def holder(m):
    """The group directory that holds the processes (v1 freezer, or v2)."""
    groups = sandbox_groups(m)
    if "freezer" in groups:
        return groups["freezer"]
    if "" in groups:
        return groups[""]
    pytest.skip("no usable cgroup on this machine: nothing to contain a fork bomb")


def session_counts(top):
    """{session group name: processes in it and below it}."""
    return {name: len(cgroup_tree_pids(os.path.join(top, name)))
            for name in os.listdir(top) if name.startswith("s")
            and os.path.isdir(os.path.join(top, name))}


def pids_current(m):
    for line in read_bytes(m.mnt / "limits", timeout=5).decode().splitlines():
        key, _, value = line.partition(" ")
        if key == "pids_current":
            return int(value)
    pytest.skip("limits shows no pids_current: the pids controller is not usable here")


def start_bomb(m, s):
    """Starts the bomb in the background of session s and waits until it fills the session's
    budget; returns the number of the sandbox's processes then."""
    out, _, code = sh(m, s, BOMB)  # returns at once; its stderr may say `fork: retry`
    assert (out, code) == ("", 0)
    wait_until(lambda: pids_current(m) >= SESSION_PIDS * 0.9, 20,
               "the fork bomb to fill the session's pids budget",
               show=lambda: f"pids_current {pids_current(m)}")
    return pids_current(m)


def neighbour_latency(m, other, seconds=3.0):
    """Times of `echo alive` in session `other` for `seconds`."""
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        assert sh(m, other, "echo alive", timeout=20) == ("alive\n", "", 0)
        times.append(time.monotonic() - t0)
    return times


def wait_only_shells(top, timeout, what):
    wait_until(lambda: all(n <= 1 for n in session_counts(top).values()), timeout, what,
               show=lambda: f"processes per session group: {session_counts(top)}")


# --- fairness ----------------------------------------------------------------------------------


def test_session_groups_get_equal_weight_and_their_own_pids_budget(small):
    m = small
    s = m.new_session()
    assert sh(m, s, "echo ok") == ("ok\n", "", 0)
    groups = sandbox_groups(m)
    pids_dir = groups.get("pids", groups.get(""))
    if not pids_dir or not os.path.exists(os.path.join(pids_dir, "pids.max")):
        pytest.skip("no pids controller for the sandbox on this machine")
    limits = read_bytes(m.mnt / "limits", timeout=5).decode()
    assert f"\nsession_pids_max {SESSION_PIDS}\n" in limits, limits
    sessions = [n for n in os.listdir(pids_dir) if n.startswith("s")]
    assert sessions, os.listdir(pids_dir)
    for name in sessions:
        with open(os.path.join(pids_dir, name, "pids.max")) as f:
            assert f.read().strip() == str(SESSION_PIDS), name
    cpu_dir, weight_file = (groups["cpu"], "cpu.shares") if "cpu" in groups else \
        (groups.get(""), "cpu.weight")
    if cpu_dir and os.path.exists(os.path.join(cpu_dir, sessions[0], weight_file)):
        weights = set()
        for name in sessions:
            with open(os.path.join(cpu_dir, name, weight_file)) as f:
                weights.add(f.read().strip())
        assert len(weights) == 1, weights


@pytest.mark.sbx_timeout(150)
@pytest.mark.parametrize("verb", ["killall", "kill"])
def test_background_bomb_neighbour_answers_and_kill_empties_it(small, verb):
    m = small
    top = holder(m)
    bomb, other = m.new_session(), m.new_session()
    assert sh(m, other, "echo warm") == ("warm\n", "", 0)
    try:
        start_bomb(m, bomb)
        times = neighbour_latency(m, other)
        peak = pids_current(m)
        print(f"\nneighbour `echo` during a bomb: n={len(times)} "
              f"median={statistics.median(times) * 1000:.0f} ms "
              f"max={max(times) * 1000:.0f} ms; sandbox pids {peak}")
        assert max(times) < 1.0, f"another session's echo took {max(times):.2f} s"
        assert peak <= SESSION_PIDS + 16, f"{peak} processes: above the session's budget"
        # the launcher can still start a shell, and that shell can fork
        fresh = m.new_session()
        assert sh(m, fresh, "/bin/echo fresh", timeout=10) == ("fresh\n", "", 0)
        bounded(os.rmdir, fresh)
        # the bomb runs in the background: no command, yet kill and killall both reach it
        t0 = time.monotonic()
        err = ctl(bomb, verb, at_close=True)
        assert err == 0, f"ctl {verb} of a background bomb: {errname(err)}"
        wait_only_shells(top, 10, f"ctl {verb} to leave nothing but the session's shell")
        print(f"ctl {verb} emptied the bomb's group in {time.monotonic() - t0:.2f} s")
        assert ctl(bomb, "kill", at_close=True) == errno.ESRCH, \
            "nothing left: kill should say ESRCH"
        assert sh(m, bomb, "/bin/echo next") == ("next\n", "", 0)
    finally:
        ctl(bomb, "killall KILL", at_close=True)
        bounded(os.rmdir, bomb)


@pytest.mark.sbx_timeout(120)
def test_bomb_as_the_running_command_killed_and_timed_out(small):
    m = small
    top = holder(m)
    s = m.new_session()
    tag = sleep_tag()
    running_bomb = f"sleep {tag} & {BOMB}; wait"  # runs until killed: `wait` is on the sleep
    try:
        m.submit(s, running_bomb)
        wait_until(lambda: pids_current(m) >= SESSION_PIDS * 0.9, 20, "the bomb to fill up")
        assert ctl(s, "kill KILL", at_close=True) == 0
        assert m.exit_status(s, timeout=20) == 128 + signal.SIGKILL
        wait_only_shells(top, 10, "the killed bomb to be gone")
        # and a timeout of one
        assert write_errno(Path(s) / "ctl", "timeout 1500\n", flags=os.O_WRONLY) == 0
        m.submit(s, running_bomb)
        assert m.exit_status(s, timeout=30) == 124
        wait_only_shells(top, 10, "the timed-out bomb to be gone")
        assert sh(m, s, "/bin/echo after") == ("after\n", "", 0)
        assert procs_matching(f"sleep {tag}") == []
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))
        ctl(s, "killall KILL", at_close=True)
        bounded(os.rmdir, s)


@pytest.mark.sbx_timeout(90)
def test_term_kill_of_a_command_stuck_behind_a_bomb_reaches_the_bomb_too(small):
    """The command ends at once on TERM; the bomb's bashes defer it while they retry a fork
    and fork again: the grace's KILL must still come after the command is gone."""
    m = small
    top = holder(m)
    s = m.new_session()
    try:
        start_bomb(m, s)
        m.submit(s, "while :; do /bin/true; done")  # its forks wait on the bomb
        time.sleep(1)
        assert ctl(s, "kill", at_close=True) == 0
        assert m.exit_status(s, timeout=20) == 128 + signal.SIGTERM
        wait_only_shells(top, 10, "the bomb to be gone after the kill's grace")
        assert sh(m, s, "/bin/echo next")[0] == "next\n"
    finally:
        ctl(s, "killall KILL", at_close=True)
        bounded(os.rmdir, s)


def test_the_next_command_waits_out_the_grace_and_is_not_killed_by_it(small):
    m = small
    top = holder(m)
    s = m.new_session()
    tag = sleep_tag()
    try:
        m.submit(s, f"bash -c 'trap \"\" TERM; sleep {tag}' & sleep {tag}")
        # two sleeps running: the background one only after its TERM is ignored (the bash
        # -c whose script names the sleep would match the tag before its trap is set)
        wait_until(lambda: len(procs_matching(f"sleep {tag}", comm="sleep")) == 2, 10,
                   "both sleeps")
        # timed from the kill, where the grace begins (reading exit may take long under load)
        t0 = time.monotonic()
        assert ctl(s, "kill", at_close=True) == 0
        assert m.exit_status(s, timeout=10) == 128 + signal.SIGTERM
        # queued at once: it runs after the grace's KILL of the TERM-proof leftover, not into it
        assert sh(m, s, "sleep 0.8; echo survived") == ("survived\n", "", 0)
        took = time.monotonic() - t0
        assert took >= 0.5 + 0.8, f"the next command did not wait for the grace ({took:.2f} s)"
        assert procs_matching(f"sleep {tag}") == []
        wait_only_shells(top, 5, "nothing but the shell")
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))
        bounded(os.rmdir, s)


@pytest.mark.sbx_timeout(90)
@pytest.mark.parametrize("how", ["rmdir", "restart"])
def test_rmdir_and_restart_of_a_bombed_session_leave_nothing(small, how):
    m = small
    top = holder(m)
    s = m.new_session()
    try:
        start_bomb(m, s)
        before = set(os.listdir(top))
        t0 = time.monotonic()
        if how == "rmdir":
            bounded(os.rmdir, s)
            wait_until(lambda: set(os.listdir(top)) < before, 5,
                       "the session's group to be removed")
        else:
            assert ctl(s, "restart", at_close=True) == 0
            assert sh(m, s, "/bin/echo fresh", timeout=20) == ("fresh\n", "", 0)
            wait_only_shells(top, 5, "nothing but the new shell")
        print(f"\n{how} of a bombed session: done in {time.monotonic() - t0:.2f} s")
        wait_until(lambda: pids_current(m) < 16, 5, "the sandbox's processes to drop")
    finally:
        if os.path.isdir(s):
            ctl(s, "killall KILL", at_close=True)
            bounded(os.rmdir, s)


@pytest.mark.sbx_timeout(90)
def test_a_cpu_hog_does_not_starve_a_neighbour(small):
    m = small
    hog, other = m.new_session(), m.new_session()
    try:
        # more busy loops than CPUs, all in one session's group
        assert sh(m, hog, "for i in 1 2 3 4 5 6; do (while :; do :; done) & done")[2] == 0
        time.sleep(0.5)
        times = neighbour_latency(m, other, seconds=2.0)
        print(f"\nneighbour `echo` beside 6 busy loops: median "
              f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
        assert max(times) < 1.0, f"another session's echo took {max(times):.2f} s"
        assert sh(m, other, "/bin/echo forked") == ("forked\n", "", 0)
    finally:
        ctl(hog, "killall KILL", at_close=True)
        bounded(os.rmdir, hog)


def test_kill_and_timeout_of_a_forking_loop_leave_nothing(small):
    m = small
    top = holder(m)
    s = m.new_session()
    tag = sleep_tag()
    loop = f"while :; do sleep {tag} & sleep 0.01; done"
    try:
        m.submit(s, loop)
        wait_until(lambda: len(procs_matching(f"sleep {tag}")) >= 5, 10, "the loop's sleeps")
        assert ctl(s, "kill", at_close=True) == 0
        assert m.exit_status(s, timeout=20) == 128 + signal.SIGTERM
        wait_only_shells(top, 5, "the loop and its sleeps to be gone after kill")
        assert procs_matching(f"sleep {tag}") == []
        assert write_errno(Path(s) / "ctl", "timeout 800\n", flags=os.O_WRONLY) == 0
        m.submit(s, loop)
        assert m.exit_status(s, timeout=20) == 124
        wait_only_shells(top, 5, "the loop and its sleeps to be gone after the timeout")
        assert procs_matching(f"sleep {tag}") == []
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))
        bounded(os.rmdir, s)


# --- leftovers of background processes ---------------------------------------------------------


def test_leftovers_of_a_background_process_die_with_it_and_are_counted(small):
    m = small
    s = m.new_session()
    tag = sleep_tag()
    p = Path(s) / "procs" / uniq("x")
    bounded(os.mkdir, p)
    try:
        assert status(p)["leftovers"] == "0"
        write_bytes(p / "cmd", f"sleep {tag} & sleep {tag} & exit 3")
        assert read_bytes(p / "exit", timeout=20) == b"3\n"
        st = status(p)
        assert (st["state"], st["leftovers"]) == ("failed", "2"), st
        wait_until(lambda: procs_matching(f"sleep {tag}") == [], 2,
                   "the leftover sleeps to be gone")
        # a clean exit leaves nothing to count, and a new start resets the count
        write_bytes(p / "cmd", "exit 0")
        assert read_bytes(p / "exit", timeout=20) == b"0\n"
        assert status(p)["leftovers"] == "0"
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))
        bounded(os.rmdir, s)


def test_a_background_process_counts_against_its_session(small):
    m = small
    top = holder(m)
    s, other = m.new_session(), m.new_session()
    p = Path(s) / "procs" / "bomb"
    bounded(os.mkdir, p)
    try:
        write_bytes(p / "cmd", f"sleep 1000 & {BOMB}; wait")
        wait_until(lambda: pids_current(m) >= SESSION_PIDS * 0.9, 20, "the bomb to fill up")
        time.sleep(0.5)
        assert pids_current(m) <= SESSION_PIDS + 16
        assert sh(m, other, "/bin/echo forked", timeout=10) == ("forked\n", "", 0)
        # its own session's shell answers too: the driver needs no fork
        assert sh(m, s, "echo own", timeout=5) == ("own\n", "", 0)
        assert write_errno(p / "ctl", "kill KILL\n", flags=os.O_WRONLY, at_close=True) == 0
        assert read_bytes(p / "exit", timeout=20) == b"137\n"
        wait_only_shells(top, 5, "the background bomb to be gone")
    finally:
        bounded(os.rmdir, s)


# --- the daemon's death ------------------------------------------------------------------------


@pytest.mark.sbx_timeout(120)
@pytest.mark.parametrize("term_first", [False, True], ids=["kill", "term-then-kill"])
def test_nothing_survives_a_sigkilled_daemon_with_a_bomb(own_mount, term_first):
    m = own_mount()
    top = holder(m)
    s = m.new_session()
    tag = sleep_tag()
    try:
        m.submit(s, f"sleep {tag} & {BOMB}; wait")
        wait_until(lambda: pids_current(m) >= SESSION_PIDS * 0.9, 20, "the bomb to fill up")
        seen = cgroup_tree_pids(top)
        assert len(seen) > SESSION_PIDS // 2
        t0 = time.monotonic()
        if term_first:  # killed again while it stops: its watchdog is still armed
            os.kill(m.proc.pid, signal.SIGTERM)
            time.sleep(0.02)
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait(timeout=10)

        def gone():
            nonlocal seen
            seen |= cgroup_tree_pids(top) if os.path.isdir(top) else set()
            return not any(pid_alive(p) for p in seen)
        wait_until(gone, 10, "every process of the sandbox's cgroups to be gone",
                   interval=0.05, show=lambda: f"{sum(pid_alive(p) for p in seen)} alive")
        took = time.monotonic() - t0
        print(f"\nafter SIGKILL of the daemon, {len(seen)} processes gone in {took:.2f} s")
        assert took < 2.0, f"the sandbox took {took:.2f} s to be emptied"
        assert procs_matching(f"sleep {tag}") == []
        wait_until(lambda: not os.path.exists(top), 10, "the sandbox's cgroup to be removed")
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))


def freeze_group(d):
    """Freezes one group as a daemon killed in the middle of a kill would have left it."""
    for name, value in (("freezer.state", "FROZEN"), ("cgroup.freeze", "1")):
        if os.path.exists(os.path.join(d, name)):
            with open(os.path.join(d, name), "w") as f:
                f.write(value)
            return
    pytest.skip("no freezer for the session's group")


@pytest.mark.sbx_timeout(60)
def test_a_group_left_frozen_by_the_dead_daemon_is_emptied_too(own_mount):
    m = own_mount()
    top = holder(m)
    s = m.new_session()
    tag = sleep_tag()
    try:
        assert sh(m, s, f"sleep {tag} & echo started") == ("started\n", "", 0)
        groups = [g for g, n in session_counts(top).items() if n > 1]
        assert len(groups) == 1, session_counts(top)
        freeze_group(os.path.join(top, groups[0]))
        seen = cgroup_tree_pids(top)
        t0 = time.monotonic()
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait(timeout=10)
        wait_until(lambda: not any(pid_alive(p) for p in seen), 10,
                   "the frozen session's processes to be gone")
        took = time.monotonic() - t0
        print(f"\na frozen group emptied {took:.2f} s after the daemon's SIGKILL")
        assert took < 2.0
        assert procs_matching(f"sleep {tag}") == []
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))
