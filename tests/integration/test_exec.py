"""Commands that never hang a session: timeouts, ctl (kill, timeout, restart), stdin, status,
run history, following output, output caps and the daemon's memory.

Every wait is on a marker (a workspace file, a process showing up, a line of output) and
bounded; sleeps inside commands only stand for "a long time" and are killed by the test.
"""

import errno
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from sbxutil import (status, ConfMount, Background, alive_inside, bounded, errname, kill_quietly,
                    procs_matching, read_bytes, read_pipe_until, run_proc, sleep_tag, uniq,
                    wait_file_sh, wait_until, write_bytes, write_errno, stopped_cleanly, started, ctl,
                    ctl_ok, spool_stats, nonempty_spools)

# [session] kill_grace_ms default
DEFAULT_GRACE = 2.0

RUN_KEYS = ["command", "run_state", "pid", "started", "duration", "exit", "timed_out", "killed",
            "signal", "truncated", "command_timeout", "oom_killed"]
SESSION_KEYS = ["state", "queued", "shell_pid", "restarts", "restored", "timeout", "oom_kills"]


# --- helpers -----------------------------------------------------------------------------------


def set_timeout(s, ms):
    err = write_errno(Path(s) / "timeout", f"{ms}\n")
    assert err == 0, f"timeout {ms}: {errname(err)}"


def wait_procs(tags, timeout=10):
    """Waits until a `sleep <tag>` runs for every tag."""
    return wait_until(lambda: all(procs_matching(f"sleep {t}") for t in tags), timeout,
                      f"sleep {' '.join(tags)} to start",
                      show=lambda: "running: " + " ".join(
                          t for t in tags if procs_matching(f"sleep {t}")))


def assert_procs_gone(tags, timeout=5, why="the command ended"):
    wait_until(lambda: not any(procs_matching(f"sleep {t}") for t in tags), timeout,
               f"every sleep to be gone after {why}",
               show=lambda: "still alive: " + " ".join(
                   f"sleep {t} {procs_matching(f'sleep {t}')}" for t in tags
                   if procs_matching(f"sleep {t}")))


def kill_tags(tags):
    for t in tags:
        kill_quietly(procs_matching(f"sleep {t}"))


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def cmd_ws(m):
    """The workspace directory as the session's commands see it."""
    return getattr(m, "cmd_ws", None) or m.ws_real


# --- a mount with its own config ---------------------------------------------------------------


CONF_CAP = 1_000_000
CONF_GRACE_MS = 300
CONF_HISTORY = 5
CONF_TIMEOUT_MS = 1500
CONF_TEXT = f"""[session]
output_cap = {CONF_CAP}
kill_grace_ms = {CONF_GRACE_MS}
history = {CONF_HISTORY}
timeout_ms = {CONF_TIMEOUT_MS}
"""


@pytest.fixture(scope="module")
def conf_sbx():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-conf-"), CONF_TEXT)
    started(m)
    try:
        yield m
    finally:
        stopped_cleanly(m, "config sbxfs")


@pytest.fixture
def conf(conf_sbx):
    conf_sbx.check_alive("before this test; it died during an earlier test")
    yield conf_sbx
    conf_sbx.check_alive("during this test")


# --- status ------------------------------------------------------------------------------------


def test_status_of_a_new_session(sbx):
    s = sbx.new_session()
    st = status(s)
    assert list(st)[:len(SESSION_KEYS)] == SESSION_KEYS, st
    assert st["state"] == "idle" and st["queued"] == "0"
    assert st["restarts"] == "0" and st["timeout"] == "0" and st["restored"] == "no"
    assert re.fullmatch(r"[0-9]+", st["shell_pid"]), st
    assert read_bytes(s / "timeout") == b"0\n"
    assert bounded(os.listdir, s / "runs") == []


def test_status_while_running_and_after(sbx):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; (exit 6)")
        sbx.wait_ws_file(started)
        st = status(s)
        assert st["state"] == "running" and st["queued"] == "0", st
        assert st["command"] == "1" and st["run_state"] == "running", st
        assert st["exit"] == "-", st
        assert st["pid"] == st["shell_pid"], st
        assert re.fullmatch(r"[0-9]+\.[0-9]{3}", st["started"]), st
        assert abs(float(st["started"]) - time.time()) < 60, st
        assert float(st["duration"]) >= 0, st
        assert st["timed_out"] == "no" and st["killed"] == "no", st
        assert st["truncated"] == "no" and st["command_timeout"] == "0", st
    finally:
        sbx.touch(go)
    assert sbx.exit_status(s) == 6
    st = status(s)
    assert st["state"] == "idle" and st["queued"] == "0", st
    assert st["command"] == "1" and st["run_state"] == "done", st
    assert st["exit"] == "6", st
    assert re.fullmatch(r"[0-9]+\.[0-9]+", st["duration"]), st
    assert st["timed_out"] == "no" and st["killed"] == "no" and st["signal"] == "0", st
    assert list(st) == SESSION_KEYS + RUN_KEYS, st


def test_status_counts_queued_commands(sbx):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; echo one")
        sbx.wait_ws_file(started)
        sbx.submit(s, "echo two")
        sbx.submit(s, "echo three")
        st = status(s)
        assert st["state"] == "queued 2" and st["queued"] == "2", st
        assert st["command"] == "3" and st["run_state"] == "queued", st
        assert st["started"] == "-" and st["exit"] == "-", st
        assert status(s / "runs" / "1")["run_state"] == "running"
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"three\n"
    assert sbx.exit_status(s) == 0
    st = status(s)
    assert st["state"] == "idle" and st["queued"] == "0", st
    assert sbx.read(s / "runs" / "1", "stdout") == b"one\n"
    assert sbx.read(s / "runs" / "2", "stdout") == b"two\n"


# --- timeouts ----------------------------------------------------------------------------------


def test_session_timeout(sbx):
    s = sbx.new_session()
    set_timeout(s, 400)
    assert read_bytes(s / "timeout") == b"400\n"
    assert status(s)["timeout"] == "400"
    tag = sleep_tag()
    try:
        t0 = time.monotonic()
        out, _, code = sbx.run(s, f"echo before; sleep {tag}; echo after", timeout=20)
        elapsed = time.monotonic() - t0
        assert (out, code) == (b"before\n", 124)
        assert 0.3 < elapsed < 10, elapsed
        st = status(s)
        assert st["timed_out"] == "yes" and st["exit"] == "124", st
        assert st["command_timeout"] == "400", st
        assert status(s / "runs" / "1")["timed_out"] == "yes"
        assert read_bytes(s / "runs" / "1" / "exit") == b"124\n"
        assert_procs_gone([tag])
        # the session default applies to every command, and quick ones are unaffected
        assert sbx.run(s, "echo quick") == (b"quick\n", b"", 0)
        assert status(s)["timed_out"] == "no"
        assert sbx.run(s, f"sleep {tag}", timeout=20)[2] == 124
        # 0 turns it off
        set_timeout(s, 0)
        assert sbx.run(s, "sleep 0.6; echo slow") == (b"slow\n", b"", 0)
    finally:
        kill_tags([tag])


def test_ctl_timeout_applies_to_the_next_command_only(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        ctl_ok(s, "timeout 300\n")
        assert status(s)["timeout"] == "0", "ctl timeout changed the session default"
        out, _, code = sbx.run(s, f"sleep {tag}; echo after", timeout=20)
        assert (out, code) == (b"", 124)
        st = status(s)
        assert st["timed_out"] == "yes" and st["command_timeout"] == "300", st
        # the one after has no timeout again
        assert sbx.run(s, "sleep 0.6; echo untimed") == (b"untimed\n", b"", 0)
        st = status(s)
        assert st["timed_out"] == "no" and st["command_timeout"] == "0", st
    finally:
        kill_tags([tag])


def test_ctl_timeout_overrides_the_session_timeout(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        set_timeout(s, 300)
        ctl_ok(s, "timeout 20000")  # longer than the session's, for one command
        assert sbx.run(s, "sleep 0.8; echo longer") == (b"longer\n", b"", 0)
        assert status(s)["command_timeout"] == "20000"
        # then the session's applies again
        assert sbx.run(s, f"sleep {tag}", timeout=20)[2] == 124
        assert status(s)["command_timeout"] == "300"
        # and a shorter one
        set_timeout(s, 20000)
        ctl_ok(s, "timeout 300")
        assert sbx.run(s, f"sleep {tag}", timeout=20)[2] == 124
        assert status(s)["command_timeout"] == "300"
        assert sbx.run(s, "sleep 0.8; echo session-again") == (b"session-again\n", b"", 0)
        assert status(s)["command_timeout"] == "20000"
    finally:
        kill_tags([tag])


def test_ctl_timeout_zero_means_no_timeout_for_the_next_command(sbx):
    s = sbx.new_session()
    set_timeout(s, 300)
    ctl_ok(s, "timeout 0")
    assert sbx.run(s, "sleep 0.8; echo untimed") == (b"untimed\n", b"", 0)
    assert status(s)["timed_out"] == "no"


def test_timeout_kills_background_and_setsid_jobs(sbx):
    s = sbx.new_session()
    a, b, c = sleep_tag(), sleep_tag(), sleep_tag()
    try:
        ctl_ok(s, "timeout 3000")
        sbx.submit(s, f"sleep {a} & setsid sleep {b} & sleep {c}")
        wait_procs([a, b, c])
        assert sbx.exit_status(s, timeout=20) == 124
        assert_procs_gone([a, b, c], why="the timeout")
        assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    finally:
        kill_tags([a, b, c])


def test_timeout_kills_nohup_and_double_forked_children(sbx):
    s = sbx.new_session()
    a, b, c, d = sleep_tag(), sleep_tag(), sleep_tag(), sleep_tag()
    try:
        ctl_ok(s, "timeout 3000")
        sbx.submit(s, f"nohup sleep {a} >/dev/null 2>&1 &\n"
                      f"( setsid sleep {b} >/dev/null 2>&1 & )\n"
                      f"( ( sleep {c} >/dev/null 2>&1 & ) & )\n"
                      f"sleep {d}\n")
        wait_procs([a, b, c, d])
        assert sbx.exit_status(s, timeout=20) == 124
        assert_procs_gone([a, b, c, d], why="the timeout")
        assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    finally:
        kill_tags([a, b, c, d])


def test_after_a_timeout_the_shell_keeps_its_cd_and_functions(sbx):
    s = sbx.new_session()
    d, marker, tag = uniq("tdir"), uniq("never"), sleep_tag()
    try:
        ctl_ok(s, "timeout 500")
        sbx.submit(s, f"mkdir {d}; cd {d}; fn_before() {{ echo fn-ok; }}; TV=kept\n"
                      f"sleep {tag}; touch ../{marker}\n"
                      f"touch ../{marker}.2\n")
        assert sbx.exit_status(s, timeout=20) == 124
        out, err, code = sbx.run(s, 'pwd -P; fn_before; echo "$TV"')
        assert (out, code) == (f"{cmd_ws(sbx)}/{d}\nfn-ok\nkept\n".encode(), 0), err
        # the rest of the killed script never ran
        assert not (sbx.ws / marker).exists()
        assert not (sbx.ws / d / marker).exists()
        assert not (sbx.ws / f"{marker}.2").exists()
        assert status(s)["restarts"] == "0"
    finally:
        kill_tags([tag])


def test_timeout_of_a_builtin_busy_loop(sbx):
    s = sbx.new_session()
    d = uniq("busy")
    assert sbx.run(s, f"mkdir {d}; cd {d}; export BUSYVAR=before")[2] == 0
    old_shell = int(status(s)["shell_pid"])
    probe = sbx.new_session()
    assert alive_inside(sbx, probe, old_shell)
    ctl_ok(s, "timeout 500")
    t0 = time.monotonic()
    sbx.submit(s, "while :; do :; done")
    assert status(s)["run_state"] in ("queued", "running")  # status never blocks
    assert sbx.exit_status(s, timeout=30) == 124
    assert time.monotonic() - t0 < 15
    assert status(s)["timed_out"] == "yes"
    out, err, code = sbx.run(s, 'echo "$BUSYVAR"; pwd -P', timeout=30)
    assert (out, err, code) == (f"before\n{cmd_ws(sbx)}/{d}\n".encode(), b"", 0)
    new_shell = int(status(s)["shell_pid"])
    if new_shell != old_shell:
        wait_until(lambda: not alive_inside(sbx, probe, old_shell), 5,
                   f"the stuck shell {old_shell} to die")


def test_timeout_ends_a_command_that_ignores_term(sbx):
    s = sbx.new_session()
    a, b = sleep_tag(), sleep_tag()
    try:
        ctl_ok(s, "timeout 2000")
        sbx.submit(s, f"trap '' TERM INT HUP; setsid bash -c \"trap '' TERM INT HUP; "
                      f"sleep {a}\" & sleep {b}")
        wait_procs([a, b])
        assert sbx.exit_status(s, timeout=30) == 124
        assert_procs_gone([a, b], why="the timeout")
        assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    finally:
        kill_tags([a, b])


def test_timeout_of_a_command_printing_all_the_time(sbx):
    s = sbx.new_session()
    ctl_ok(s, "timeout 500")
    sbx.submit(s, "yes")
    assert sbx.exit_status(s, timeout=30) == 124
    size = os.stat(s / "stdout").st_size
    assert size > 0
    assert len(sbx.read(s, "stdout", timeout=60)) == size
    assert sbx.run(s, "echo next") == (b"next\n", b"", 0)


def test_timeout_counts_from_the_start_not_from_queueing(sbx):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    set_timeout(s, 800)
    try:
        ctl_ok(s, "timeout 0")  # the first one may wait as long as it likes
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; echo first")
        sbx.wait_ws_file(started)
        sbx.submit(s, "sleep 0.5; echo second")  # queued for more than 800 ms
        wait_until(lambda: float(status(s / "runs" / "1")["duration"]) > 1.0, 10,
                   "the first command to have run for 1 s", interval=0.1)
        assert status(s)["state"] == "queued 1"
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"second\n"
    assert sbx.exit_status(s) == 0
    assert read_bytes(s / "runs" / "1" / "stdout") == b"first\n"
    st = status(s)
    assert st["timed_out"] == "no" and st["command_timeout"] == "800", st


def test_ctl_timeout_while_a_command_runs_is_for_the_next_one(sbx):
    s = sbx.new_session()
    started, go, tag = uniq("started"), uniq("go"), sleep_tag()
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; sleep 0.8; echo first")
        sbx.wait_ws_file(started)
        ctl_ok(s, "timeout 300")
        sbx.touch(go)
        assert sbx.read(s, "stdout") == b"first\n"
        assert sbx.exit_status(s) == 0
        assert status(s)["command_timeout"] == "0"
        assert sbx.run(s, f"sleep {tag}", timeout=20)[2] == 124
        assert status(s)["command_timeout"] == "300"
    finally:
        sbx.touch(go)
        kill_tags([tag])


def test_timeout_in_a_config_is_the_default_of_new_sessions(conf):
    s = conf.new_session()
    assert read_bytes(s / "timeout") == f"{CONF_TIMEOUT_MS}\n".encode()
    assert status(s)["timeout"] == str(CONF_TIMEOUT_MS)
    tag = sleep_tag()
    try:
        assert conf.run(s, f"sleep {tag}", timeout=20)[2] == 124
        assert status(s)["command_timeout"] == str(CONF_TIMEOUT_MS)
    finally:
        kill_tags([tag])


# --- timeout file ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc\n", "-1\n", "1.5\n", "12abc\n", "0x10\n", "1e3\n",
                                   " \n", "5 5\n"])
def test_bad_timeout_value_is_einval(sbx, value):
    s = sbx.new_session()
    set_timeout(s, 1234)
    err = write_errno(s / "timeout", value)
    assert err == errno.EINVAL, f"write({value!r}) to timeout: {errname(err)}"
    assert read_bytes(s / "timeout") == b"1234\n"


@pytest.mark.parametrize("value,expect", [("250\n", b"250\n"), ("250", b"250\n"),
                                          ("0\n", b"0\n")])
def test_good_timeout_values(sbx, value, expect):
    s = sbx.new_session()
    assert write_errno(s / "timeout", value) == 0
    assert read_bytes(s / "timeout") == expect


# --- ctl: kill ---------------------------------------------------------------------------------


@pytest.mark.parametrize("line,signum", [
    ("kill INT", 2), ("kill SIGINT", 2), ("kill 2", 2), ("kill HUP", 1),
    ("kill SIGUSR1", 10), ("kill KILL", 9), ("kill 9", 9), ("kill SIGKILL\n", 9)])
def test_ctl_kill_with_a_signal(sbx, line, signum):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        sbx.submit(s, f"sleep {tag}; echo after")
        wait_procs([tag])
        ctl_ok(s, line)
        assert sbx.exit_status(s, timeout=15) == 128 + signum
        assert sbx.read(s, "stdout") == b""
        st = status(s)
        assert st["killed"] == "yes" and st["signal"] == str(signum), st
        assert st["timed_out"] == "no", st
        assert_procs_gone([tag], why=line)
        assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    finally:
        kill_tags([tag])


def test_ctl_kill_default_is_term(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        sbx.submit(s, f"sleep {tag}")
        wait_procs([tag])
        t0 = time.monotonic()
        ctl_ok(s, "kill\n")
        assert sbx.exit_status(s, timeout=15) == 128 + signal.SIGTERM
        assert time.monotonic() - t0 < DEFAULT_GRACE * 0.9, "TERM was not enough?"
        assert status(s)["signal"] == str(int(signal.SIGTERM))
    finally:
        kill_tags([tag])


def test_ctl_kill_escalates_to_kill_after_the_grace_period(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        sbx.submit(s, f"trap '' TERM; echo trapped; sleep {tag}")
        wait_procs([tag])
        t0 = time.monotonic()
        ctl_ok(s, "kill")
        assert sbx.exit_status(s, timeout=20) == 128 + signal.SIGTERM
        elapsed = time.monotonic() - t0
        assert DEFAULT_GRACE * 0.9 <= elapsed < DEFAULT_GRACE + 8, elapsed
        assert_procs_gone([tag], why="kill")
        st = status(s)
        assert st["killed"] == "yes" and st["signal"] == str(int(signal.SIGTERM)), st
        assert sbx.run(s, "echo next") == (b"next\n", b"", 0)
    finally:
        kill_tags([tag])


def test_kill_grace_from_the_config(conf):
    s = conf.new_session()
    tag = sleep_tag()
    try:
        conf.submit(s, f"trap '' TERM; sleep {tag}")
        wait_procs([tag])
        t0 = time.monotonic()
        ctl_ok(s, "kill TERM")
        assert conf.exit_status(s, timeout=20) == 128 + signal.SIGTERM
        elapsed = time.monotonic() - t0
        assert CONF_GRACE_MS / 1000 * 0.9 <= elapsed < DEFAULT_GRACE * 0.9, elapsed
    finally:
        kill_tags([tag])


def test_ctl_kill_kills_the_whole_tree(sbx):
    s = sbx.new_session()
    a, b, c = sleep_tag(), sleep_tag(), sleep_tag()
    try:
        sbx.submit(s, f"sleep {a} & ( setsid sleep {b} & ); sleep {c}")
        wait_procs([a, b, c])
        ctl_ok(s, "kill 9")
        assert sbx.exit_status(s, timeout=15) == 137
        assert_procs_gone([a, b, c], why="kill 9")
    finally:
        kill_tags([a, b, c])


def test_ctl_kill_lets_the_queue_go_on(sbx):
    s = sbx.new_session()
    tag = sleep_tag()
    try:
        sbx.submit(s, f"sleep {tag}")
        wait_procs([tag])
        sbx.submit(s, "echo queued-ran")
        ctl_ok(s, "kill INT")
        assert read_bytes(s / "runs" / "1" / "exit", timeout=15) == b"130\n"
        assert sbx.read(s, "stdout") == b"queued-ran\n"
        assert sbx.exit_status(s) == 0
    finally:
        kill_tags([tag])


def test_ctl_kill_when_idle_is_esrch(sbx):
    s = sbx.new_session()
    assert ctl(s, "kill\n", at_close=True) == errno.ESRCH
    sbx.run(s, "true")
    assert ctl(s, "kill INT\n", at_close=True) == errno.ESRCH
    assert sbx.run(s, "echo fine") == (b"fine\n", b"", 0)


@pytest.mark.parametrize("line", ["frobnicate\n", "kill NOSUCHSIG\n", "timeout abc\n",
                                  "timeout\n", "restart now\n", "timeout -5\n",
                                  "kill 9 9\n", "kill 999\n", "kill SIG\n", "KILL\n"])
def test_bad_ctl_line_is_einval(sbx, line):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; echo survived")
        sbx.wait_ws_file(started)
        err = ctl(s, line)
        assert err == errno.EINVAL, f"ctl {line!r}: {errname(err)}"
        st = status(s)
        assert st["state"] == "running" and st["restarts"] == "0", st
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"survived\n"
    assert sbx.exit_status(s) == 0
    assert status(s)["command_timeout"] == "0"


# --- commands that end the shell ---------------------------------------------------------------


def test_exit_in_a_command_restarts_the_shell_with_env_and_cwd(sbx):
    s = sbx.new_session()
    d = uniq("exitdir")
    assert sbx.run(s, f"mkdir {d}; cd {d}; export EXITVAR=set-before; gone() {{ :; }}")[2] == 0
    before = status(s)
    probe = sbx.new_session()
    assert alive_inside(sbx, probe, before["shell_pid"])
    assert sbx.run(s, "echo bye; exit 3") == (b"bye\n", b"", 3)
    out, err, code = sbx.run(s, 'echo "$EXITVAR"; pwd -P; type gone >/dev/null 2>&1 || echo nofn')
    assert (out, err, code) == (f"set-before\n{cmd_ws(sbx)}/{d}\nnofn\n".encode(), b"", 0)
    after = status(s)
    assert int(after["restarts"]) == int(before["restarts"]) + 1, (before, after)
    assert after["shell_pid"] != before["shell_pid"]
    assert after["pid"] == after["shell_pid"], after
    assert status(s / "runs" / "2")["pid"] == before["shell_pid"]
    wait_until(lambda: not alive_inside(sbx, probe, before["shell_pid"]), 5,
               "the old shell to be gone")


def test_exec_true_ends_with_0_and_the_next_command_works(sbx):
    s = sbx.new_session()
    sbx.run(s, "export EXECVAR=x")
    assert sbx.run(s, "exec true") == (b"", b"", 0)
    assert sbx.run(s, 'echo "next $EXECVAR"') == (b"next x\n", b"", 0)
    assert status(s)["restarts"] == "1"


def test_kill_9_of_the_shell_gives_137(sbx):
    s = sbx.new_session()
    sbx.run(s, "export K9VAR=y")
    assert sbx.run(s, "kill -9 $$")[2] == 137
    assert sbx.run(s, 'echo "next $K9VAR"') == (b"next y\n", b"", 0)
    assert status(s)["restarts"] == "1"


def test_ctl_restart_keeps_env_and_cwd(sbx):
    s = sbx.new_session()
    d = uniq("rdir")
    assert sbx.run(s, f"mkdir {d}; cd {d}; export RESTVAR=kept")[2] == 0
    before = status(s)
    probe = sbx.new_session()
    assert alive_inside(sbx, probe, before["shell_pid"])
    ctl_ok(s, "restart\n")
    wait_until(lambda: status(s)["restarts"] == str(int(before["restarts"]) + 1), 10,
               "restarts to go up", show=lambda: status(s))
    out, err, code = sbx.run(s, 'echo "$RESTVAR"; pwd -P')
    assert (out, err, code) == (f"kept\n{cmd_ws(sbx)}/{d}\n".encode(), b"", 0)
    after = status(s)
    assert after["shell_pid"] != before["shell_pid"]
    wait_until(lambda: not alive_inside(sbx, probe, before["shell_pid"]), 5,
               "the old shell to be gone")


# --- stdin -------------------------------------------------------------------------------------


def test_stdin_staged_bytes_go_to_the_next_command(sbx):
    s = sbx.new_session()
    write_bytes(s / "stdin", "hi\n")
    assert sbx.run(s, "cat", timeout=15) == (b"hi\n", b"", 0)
    # consumed: the one after sees nothing
    assert sbx.run(s, "cat; echo end", timeout=15) == (b"end\n", b"", 0)


def test_stdin_staged_in_several_writes(sbx):
    s = sbx.new_session()
    write_bytes(s / "stdin", "one\n", flags=os.O_WRONLY)
    write_bytes(s / "stdin", b"two\0\xff\n", flags=os.O_WRONLY)
    assert sbx.run(s, "cat", timeout=15) == (b"one\ntwo\0\xff\n", b"", 0)
    write_bytes(s / "stdin", "x\ny\n", flags=os.O_WRONLY)
    assert sbx.run(s, "wc -l", timeout=15)[0].strip() == b"2"


def test_stdin_without_writer_is_at_eof_at_once(sbx):
    s = sbx.new_session()
    t0 = time.monotonic()
    assert sbx.run(s, 'cat; read x; echo "rc=$?"', timeout=10) == (b"rc=1\n", b"", 0)
    assert time.monotonic() - t0 < 5


def test_stdin_held_open_writer_streams(sbx):
    s = sbx.new_session()
    fd = bounded(os.open, s / "stdin", os.O_WRONLY)
    closed = False
    try:
        sbx.submit(s, "cat")
        assert bounded(os.write, fd, b"a\n") == 2
        wait_until(lambda: os.stat(s / "stdout").st_size >= 2, 10, "cat to echo 'a'")
        res = run_proc(["grep", "-m1", "^a$", str(s / "stdout")], timeout=15)
        assert (res.returncode, res.stdout) == (0, b"a\n")
        assert status(s)["state"] == "running", "cat ended while stdin was held open"
        assert bounded(os.write, fd, b"b\n") == 2
        bounded(os.close, fd)
        closed = True
        assert sbx.exit_status(s, timeout=15) == 0
        assert sbx.read(s, "stdout") == b"a\nb\n"
    finally:
        if not closed:
            os.close(fd)


def test_stdin_held_open_writer_and_a_command_that_ignores_it(sbx):
    s = sbx.new_session()
    fd = bounded(os.open, s / "stdin", os.O_WRONLY)
    try:
        assert sbx.run(s, "echo ignores-stdin", timeout=15) == (b"ignores-stdin\n", b"", 0)
    finally:
        bounded(os.close, fd)
    assert sbx.run(s, "echo next", timeout=15) == (b"next\n", b"", 0)


def test_stdin_held_open_reader_killed_then_writes_go_to_the_next_command(sbx):
    s = sbx.new_session()
    fd = bounded(os.open, s / "stdin", os.O_WRONLY)
    closed = False
    try:
        sbx.submit(s, "cat")
        assert bounded(os.write, fd, b"one\n") == 4
        wait_until(lambda: os.stat(s / "stdout").st_size >= 4, 10, "cat to echo 'one'")
        ctl_ok(s, "kill INT")
        assert sbx.exit_status(s, timeout=15) == 130
        assert sbx.read(s, "stdout") == b"one\n"
        assert bounded(os.write, fd, b"later\n") == 6
        bounded(os.close, fd)
        closed = True
        assert sbx.run(s, "cat", timeout=15) == (b"later\n", b"", 0)
    finally:
        if not closed:
            os.close(fd)


def test_stdin_held_open_reader_times_out(sbx):
    s = sbx.new_session()
    fd = bounded(os.open, s / "stdin", os.O_WRONLY)
    try:
        ctl_ok(s, "timeout 500")
        sbx.submit(s, "cat")
        assert bounded(os.write, fd, b"x\n") == 2
        assert sbx.exit_status(s, timeout=20) == 124
        assert sbx.read(s, "stdout") == b"x\n"
    finally:
        bounded(os.close, fd)
    assert sbx.run(s, "echo next", timeout=15) == (b"next\n", b"", 0)


def test_stdin_staged_input_near_the_staging_limit(sbx):
    s = sbx.new_session()
    data = os.urandom(900_000)
    write_bytes(s / "stdin", data, timeout=60)
    out, err, code = sbx.run(s, "sha256sum | cut -d' ' -f1", timeout=60)
    assert (out, err, code) == (hashlib.sha256(data).hexdigest().encode() + b"\n", b"", 0)


def test_stdin_streams_megabytes_to_a_running_command(sbx):
    # More than the daemon stages (1 MiB): the writer waits for the command to read.
    s = sbx.new_session()
    data = os.urandom(5_000_000)
    fd = bounded(os.open, s / "stdin", os.O_WRONLY)
    try:
        sbx.submit(s, "sha256sum | cut -d' ' -f1")

        def feed():
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]

        bounded(feed, timeout=60, what="writing 5 MB to stdin")
    finally:
        bounded(os.close, fd)
    assert sbx.read(s, "stdout", timeout=60) == hashlib.sha256(data).hexdigest().encode() + b"\n"
    assert sbx.exit_status(s) == 0


def test_stdin_written_after_start_without_writer_goes_to_the_next_command(sbx):
    s = sbx.new_session()
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; cat; echo first-done")
        sbx.wait_ws_file(started)
        write_bytes(s / "stdin", "late\n", flags=os.O_WRONLY)
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"first-done\n"
    assert sbx.exit_status(s) == 0
    assert sbx.run(s, "cat", timeout=15) == (b"late\n", b"", 0)


# --- run history -------------------------------------------------------------------------------


def test_runs_directories_hold_each_command(sbx):
    s = sbx.new_session()
    sbx.run(s, "echo out1; echo err1 >&2; (exit 1)")
    sbx.run(s, "echo out2")
    sbx.run(s, "printf out3; (exit 3)")
    assert sorted(bounded(os.listdir, s / "runs"), key=int) == ["1", "2", "3"]
    assert sorted(bounded(os.listdir, s / "runs" / "1")) == \
        ["cmd", "exit", "output", "result", "status", "stderr", "stdout"]
    expect = {1: (b"echo out1; echo err1 >&2; (exit 1)", b"out1\n", b"err1\n", b"1\n"),
              2: (b"echo out2", b"out2\n", b"", b"0\n"),
              3: (b"printf out3; (exit 3)", b"out3", b"", b"3\n")}
    for n, (cmd, out, err, code) in expect.items():
        r = s / "runs" / str(n)
        assert read_bytes(r / "cmd") == cmd, n
        assert read_bytes(r / "stdout") == out, n
        assert read_bytes(r / "stderr") == err, n
        assert read_bytes(r / "exit") == code, n
        st = status(r)
        assert list(st) == RUN_KEYS, st
        assert st["command"] == str(n) and st["exit"] == code.decode().strip(), st
    # the session's own files are the latest run's
    assert sbx.read(s, "stdout") == b"out3"
    assert sbx.read(s, "cmd") == b"printf out3; (exit 3)"
    assert sbx.exit_status(s) == 3
    assert bounded(os.path.exists, s / "runs" / "4") is False


@pytest.mark.sbx_timeout(240)
def test_history_keeps_the_last_100_runs_and_their_spools(sbx):
    s = sbx.new_session()
    before = nonempty_spools(sbx)  # spools are unnamed: counted through the daemon's fds
    sizes_before = Counter(st.st_size for st in spool_stats(sbx) if st.st_size)
    token = uniq("first-run").encode() + b"\n"
    assert sbx.run(s, "echo " + token.decode().strip()) == (token, b"", 0)
    script = ('cd "$1" || exit 99\n'
              'for i in $(seq 2 200); do echo "echo run$i; (exit $((i % 7)))" > cmd; '
              'cat exit >/dev/null; done\n')
    res = run_proc(["bash", "-c", script, "x", str(s)], timeout=180)
    assert res.returncode == 0, res.stderr
    names = sorted(bounded(os.listdir, s / "runs"), key=int)
    assert names == [str(i) for i in range(101, 201)]
    res = run_proc(["ls", str(s / "runs")], timeout=20)
    assert sorted(res.stdout.split(), key=int) == [str(i).encode() for i in range(101, 201)]
    assert sbx.read(s / "runs" / "150", "stdout") == b"run150\n"
    assert sbx.read(s / "runs" / "150", "exit") == f"{150 % 7}\n".encode()
    assert sbx.read(s / "runs" / "101", "cmd") == f"echo run101; (exit {101 % 7})\n".encode()
    assert not bounded(os.path.exists, s / "runs" / "100")
    assert not bounded(os.path.exists, s / "runs" / "1")
    assert sbx.read(s, "stdout") == b"run200\n"
    # the 100 runs kept hold their stdout spools (stderr is empty, and output, fed by stdout
    # alone, reads stdout's file); the runs that left gave theirs up (emptied, or closed)
    sizes = Counter(st.st_size for st in spool_stats(sbx) if st.st_size)
    assert sizes - sizes_before == Counter({len("run150\n"): 100})
    assert nonempty_spools(sbx) == before + 100
    bounded(os.rmdir, s, timeout=15)
    wait_until(lambda: nonempty_spools(sbx) == before, 5, "the spool files to go with rmdir",
               show=lambda: nonempty_spools(sbx))


def test_history_size_from_the_config(conf):
    s = conf.new_session()
    before = nonempty_spools(conf)
    for i in range(1, 9):
        assert conf.run(s, f"echo h{i}")[2] == 0
    names = sorted(bounded(os.listdir, s / "runs"), key=int)
    assert names == [str(i) for i in range(9 - CONF_HISTORY, 9)]
    assert conf.read(s / "runs" / "8", "stdout") == b"h8\n"
    # the stdout of each run kept holds "hN\n"; the older runs' spools are gone
    assert nonempty_spools(conf) == before + CONF_HISTORY


# --- following output --------------------------------------------------------------------------


def _stop_tail(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    p.stdout.close()


SYS_OPENAT = 257  # x86_64


def _in_syscall(pid, nr):
    """True while process pid is blocked in system call nr."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[0] == str(nr)
    except (OSError, IndexError):
        return False


def _follow_with_tail_f(sbx, s, tag, tail_first):
    """Follows three lines of a command with `tail -f stdout` (GNU tail: last lines up to the
    size at open, then it polls size and mtime every second on FUSE)."""
    tail = None
    try:
        if tail_first:
            sbx.submit(s, f"{wait_file_sh(tag + '.go0')}; echo L1; {wait_file_sh(tag + '.go1')}; "
                          f"echo L2; {wait_file_sh(tag + '.go2')}; echo L3")
        else:
            sbx.submit(s, f"echo L1; {wait_file_sh(tag + '.go1')}; echo L2; "
                          f"{wait_file_sh(tag + '.go2')}; echo L3")
            wait_until(lambda: os.stat(s / "stdout").st_size == 3, 10, "L1 in stdout")
        tail = subprocess.Popen(["timeout", "30", "tail", "-f", str(s / "stdout")],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if tail_first:
            # tail is opening the (still empty) stdout before the command prints anything:
            # the open waits for the first byte (an empty file would make tail read it like a
            # pipe, to EOF, and show nothing until the command ends).
            wait_until(lambda: any(_in_syscall(p, SYS_OPENAT) for p in
                                   procs_matching("tail -f " + str(s))),
                       10, "tail to be opening stdout")
            sbx.touch(tag + ".go0")
        assert read_pipe_until(tail.stdout, b"L1\n", 10) == b"L1\n"
        m1 = os.stat(s / "stdout").st_mtime_ns
        sbx.touch(tag + ".go1")
        assert read_pipe_until(tail.stdout, b"L2\n", 10) == b"L2\n"
        st = os.stat(s / "stdout")
        assert st.st_size == 6 and st.st_mtime_ns > m1, (st, m1)
        assert status(s)["run_state"] == "running"
        sbx.touch(tag + ".go2")
        assert read_pipe_until(tail.stdout, b"L3\n", 10) == b"L3\n"
    finally:
        for i in range(3):
            sbx.touch(f"{tag}.go{i}")
        if tail is not None:
            _stop_tail(tail)
    assert sbx.exit_status(s) == 0


def test_tail_f_attached_after_the_first_output_follows(sbx):
    s = sbx.new_session()
    _follow_with_tail_f(sbx, s, uniq("tail"), tail_first=False)


def test_tail_f_started_before_any_output_follows(sbx):
    # The usual `echo cmd > cmd; tail -f stdout`: tail opens stdout while it is still empty.
    s = sbx.new_session()
    _follow_with_tail_f(sbx, s, uniq("tail"), tail_first=True)


def test_tail_c_reattaches_at_an_offset(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "printf 0123456789")[2] == 0
    res = run_proc(["tail", "-c", "+4", str(s / "stdout")], timeout=15)
    assert (res.returncode, res.stdout) == (0, b"3456789")
    go = uniq("go")
    sbx.submit(s, f"echo AAAA; {wait_file_sh(go)}; echo BBBB")
    # From an offset, tail reads to EOF, and reads block at the end while the command runs:
    # it follows the command like cat. stdbuf -o0 stands for a terminal (tail's stdout is a
    # pipe here, which stdio would buffer until the command ends).
    tail = subprocess.Popen(["timeout", "20", "stdbuf", "-o0", "tail", "-c", "+3",
                             str(s / "stdout")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert read_pipe_until(tail.stdout, b"AA\n", 10) == b"AA\n"
        sbx.touch(go)
        assert read_pipe_until(tail.stdout, b"BBBB\n", 10) == b"BBBB\n"
        assert tail.wait(timeout=10) == 0, "tail did not end with the command"
    finally:
        sbx.touch(go)
        _stop_tail(tail)


SYS_READ = 0  # x86_64


def test_tail_n_shows_the_lines_so_far_and_cat_into_tail_the_last(sbx):
    # GNU tail -n seeks to the end, reads back and exits, never reading to EOF: it shows the
    # lines written so far. tail -f starts with the very same calls and has to show L1 now,
    # so the seek to the end does not wait for the command (docs/sessions.md).
    s = sbx.new_session()
    go = uniq("go")
    last = None
    try:
        sbx.submit(s, f"echo L1; {wait_file_sh(go)}; echo L2")
        wait_until(lambda: os.stat(s / "stdout").st_size == 3, 10, "L1 in stdout")
        res = run_proc(["tail", "-n", "1", str(s / "stdout")], timeout=15)
        assert (res.returncode, res.stdout) == (0, b"L1\n")
        assert status(s)["run_state"] == "running"
        # The documented way to the last line of the finished output: cat reads to EOF.
        last = subprocess.Popen(["sh", "-c", f"cat {s}/stdout | tail -n 1"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        wait_until(lambda: any(_in_syscall(p, SYS_READ) for p in
                               procs_matching(f"cat {s}/stdout")),
                   10, "cat to wait for more output")
        sbx.touch(go)
        assert read_pipe_until(last.stdout, b"\n", 10) == b"L2\n"
        assert last.wait(timeout=10) == 0
    finally:
        sbx.touch(go)
        if last is not None:
            _stop_tail(last)
    assert sbx.exit_status(s) == 0


def test_grep_m1_returns_while_the_command_runs(sbx):
    s = sbx.new_session()
    go = uniq("go")
    try:
        sbx.submit(s, f"echo starting; echo READY; {wait_file_sh(go)}; echo after")
        res = run_proc(["grep", "-m1", "READY", str(s / "stdout")], timeout=15)
        assert (res.returncode, res.stdout) == (0, b"READY\n")
        assert status(s)["run_state"] == "running"
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"starting\nREADY\nafter\n"


# --- output caps and memory --------------------------------------------------------------------


def test_output_cap_keeps_the_head_and_does_not_block(conf):
    s = conf.new_session()
    out, err, code = conf.run(
        s, "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2500000 /dev/zero | tr '\\0' e >&2; "
           "echo tail-end; echo done >&2", timeout=60)
    assert code == 0
    assert out == b"a" * CONF_CAP
    assert err == b"e" * CONF_CAP
    st = status(s)
    assert st["truncated"] == "yes" and st["killed"] == "no", st
    assert os.stat(s / "stdout").st_size == CONF_CAP
    assert status(s / "runs" / "1")["truncated"] == "yes"
    # under the cap: not truncated
    assert conf.run(s, "head -c 999999 /dev/zero | wc -c") == (b"999999\n", b"", 0)
    assert status(s)["truncated"] == "no"


@pytest.mark.sbx_timeout(600)
def test_two_gib_output_keeps_the_daemon_small(sbx):
    limit_kib = 64 * 1024
    pid = sbx.proc.pid
    s = sbx.new_session()
    sbx.submit(s, "head -c 2G /dev/zero; echo done >&2")
    exit_reader = Background(read_bytes, s / "exit", timeout=500, what="read exit")
    peak = vm_rss_kib(pid)
    while not exit_reader.wait(0.1):
        peak = max(peak, vm_rss_kib(pid))
        assert peak < limit_kib, f"daemon VmRSS {peak} KiB while the command prints"
    assert exit_reader.result(5) == b"0\n"
    peak = max(peak, vm_rss_kib(pid))
    st = status(s)
    assert st["truncated"] == "yes", st
    assert os.stat(s / "stdout").st_size == 1 << 30
    assert sbx.read(s, "stderr") == b"done\n"
    # reading it all back does not grow the daemon either
    fd = bounded(os.open, s / "stdout", os.O_RDONLY)
    try:
        def drain():
            total = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return total
                total += len(chunk)
        reader = Background(drain, what="read 1 GiB of stdout")
        while not reader.wait(0.1):
            peak = max(peak, vm_rss_kib(pid))
        assert reader.result(5) == 1 << 30
    finally:
        os.close(fd)
    peak = max(peak, vm_rss_kib(pid))
    assert peak < limit_kib, f"daemon VmRSS peaked at {peak} KiB"
    bounded(os.rmdir, s, timeout=30)
    wait_until(lambda: not [st for st in spool_stats(sbx) if st.st_size >= 1 << 30], 10,
               "the 1 GiB spool to be removed")


# --- rmdir with a queue ------------------------------------------------------------------------


def test_rmdir_drops_queued_commands(sbx):
    s = sbx.new_session()
    tag, f1, f2 = sleep_tag(), uniq("q1"), uniq("q2")
    try:
        sbx.submit(s, f"sleep {tag}")
        wait_procs([tag])
        sbx.submit(s, f"touch {f1}")
        sbx.submit(s, f"touch {f2}")
        assert status(s)["state"] == "queued 2"
        readers = [Background(read_bytes, s / "runs" / str(n) / "exit", what=f"runs/{n}/exit")
                   for n in (1, 2, 3)]
        latest = Background(read_bytes, s / "exit", what="exit")
        assert not latest.wait(0.3)
        bounded(os.rmdir, s, timeout=15)
        assert [r.result(10) for r in readers] == [b"137\n", b"137\n", b"137\n"]
        assert latest.result(10) == b"137\n"
        assert_procs_gone([tag], why="rmdir")
        assert not (sbx.ws / f1).exists() and not (sbx.ws / f2).exists()
    finally:
        kill_tags([tag])
