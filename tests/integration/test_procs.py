"""Background processes: sessions/ID/procs/NAME/ (cmd, stdout, stderr, stdin, status, exit,
signal, ctl, ports, ready) and the root's procs/ of links.

Every wait is on a marker (a workspace file, a process showing up, a line of output, the exit
file) and bounded; sleeps inside commands only stand for "a long time" and are killed by the
test or by sbxfs.
"""

import errno
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sbxutil import (status, Background, bounded, errno_of, kill_quietly, procs_matching,
                     read_bytes, run_proc, sleep_tag, uniq, wait_file_sh, wait_until,
                     write_bytes, write_errno, ctl, ctl_ok, exit_of, has_open, free_port)

# [session] kill_grace_ms default
DEFAULT_GRACE = 2.0

STATUS_KEYS = ["name", "state", "pid", "started", "ended", "exit", "signal", "timed_out",
               "starts", "timeout", "oom_killed", "leftovers", "tty"]


# --- helpers -----------------------------------------------------------------------------------


def new_proc(s, name=None):
    """mkdir <session>/procs/<name>; returns its path."""
    p = Path(s) / "procs" / (name or uniq("p"))
    bounded(os.mkdir, p, what=f"mkdir {p}")
    return p


def start(p, cmd):
    """Starts (or restarts) the process: `echo CMD > cmd`."""
    write_bytes(Path(p) / "cmd", cmd)


def send(p, sig):
    """One write() of `sig` to the process's signal file; its errno."""
    return write_errno(Path(p) / "signal", sig, flags=os.O_WRONLY)


def wait_line(path, text, timeout=15):
    """`grep -m1 -F TEXT FILE`: returns once the line is in the (streaming) file."""
    res = run_proc(["grep", "-m1", "-F", text, str(path)], timeout=timeout)
    assert res.returncode == 0, f"grep {text!r} {path}: status {res.returncode}, {res.stderr!r}"
    return res.stdout


def wait_procs(tags, timeout=10):
    return wait_until(lambda: all(procs_matching(t) for t in tags), timeout,
                      f"{' '.join(tags)} to start",
                      show=lambda: "running: " + " ".join(t for t in tags if procs_matching(t)))


def assert_procs_gone(tags, timeout=5, why="the kill"):
    wait_until(lambda: not any(procs_matching(t) for t in tags), timeout,
               f"every process to be gone after {why}",
               show=lambda: "still alive: " + " ".join(
                   f"{t} {procs_matching(t)}" for t in tags if procs_matching(t)))


def kill_tags(tags):
    for t in tags:
        kill_quietly(procs_matching(t))


def ws_path(sbx, name):
    """Absolute path of a workspace file as the sandbox's commands see it."""
    return f"{sbx.cmd_ws}/{name}"


def fetch_cmd(port, path=""):
    """A foreground command (no curl in the sandbox) that prints the HTTP status and body."""
    script = ("import urllib.request as u, sys\n"
              f"r = u.urlopen('http://127.0.0.1:{port}/{path}', timeout=10)\n"
              "sys.stdout.write(str(r.status) + '\\n' + r.read().decode())\n")
    return f"python3 -c {shlex.quote(script)}"


def server_cmd(port):
    return f"python3 -m http.server {port} --bind 127.0.0.1"


# --- names and the directory -------------------------------------------------------------------


def test_mkdir_makes_an_idle_process(sbx):
    s = sbx.new_session()
    name = uniq("idle")
    p = new_proc(s, name)
    assert sorted(bounded(os.listdir, p)) == sorted(
        ["cmd", "stdout", "stderr", "output", "stdin", "status", "exit", "signal", "ctl",
         "ports", "ready", "tty", "metrics"])
    assert name in bounded(os.listdir, s / "procs")
    st = status(p)
    assert list(st) == STATUS_KEYS, st
    assert st["name"] == name and st["state"] == "idle", st
    assert (st["pid"], st["started"], st["ended"], st["exit"]) == ("0", "-", "-", "-"), st
    assert (st["starts"], st["timeout"], st["signal"]) == ("0", "0", "0"), st
    assert read_bytes(p / "stdout") == b"" and read_bytes(p / "stderr") == b""
    assert read_bytes(p / "ports") == b""
    assert send(p, "TERM") == errno.ESRCH
    assert ctl(p, "kill", at_close=True) == errno.ESRCH


@pytest.mark.parametrize("name", ["bad name", "x" * 65, "semi;colon", "star*", "qu'ote"])
def test_bad_process_name_is_einval(sbx, name):
    s = sbx.new_session()
    assert errno_of(os.mkdir, s / "procs" / name) == errno.EINVAL
    assert name not in bounded(os.listdir, s / "procs")


def test_longest_name_and_eexist(sbx):
    s = sbx.new_session()
    name = "A-z_0.9" + "n" * 57
    assert len(name) == 64
    p = new_proc(s, name)
    assert errno_of(os.mkdir, p) == errno.EEXIST
    assert status(p)["name"] == name


def test_unknown_process_is_enoent(sbx):
    s = sbx.new_session()
    assert errno_of(os.open, s / "procs" / "nosuch" / "cmd", os.O_WRONLY) == errno.ENOENT
    assert errno_of(os.open, s / "procs" / "nosuch" / "status", os.O_RDONLY) == errno.ENOENT
    assert errno_of(os.rmdir, s / "procs" / "nosuch") == errno.ENOENT
    assert errno_of(os.mkdir, sbx.sessions / uniq("gone") / "procs" / "x") == errno.ENOENT


# --- running to the end ------------------------------------------------------------------------


def test_process_that_prints_and_exits(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    t0 = time.time()
    start(p, "echo out-line; echo err-line >&2; printf 'no newline'")
    assert exit_of(p) == 0
    assert read_bytes(p / "stdout") == b"out-line\nno newline"
    assert read_bytes(p / "stderr") == b"err-line\n"
    assert os.stat(p / "stdout").st_size == len(b"out-line\nno newline")
    assert read_bytes(p / "cmd") == b"echo out-line; echo err-line >&2; printf 'no newline'"
    st = status(p)
    assert st["state"] == "completed" and st["exit"] == "0" and st["signal"] == "0", st
    assert st["starts"] == "1" and st["timed_out"] == "no", st
    assert re.fullmatch(r"[1-9][0-9]*", st["pid"]), st
    started, ended = float(st["started"]), float(st["ended"])
    assert t0 - 5 < started <= ended < time.time() + 5, st


def test_pid_is_known_when_the_start_returns(sbx):
    """A client reads status right after writing cmd, as the Node and Python clients do for
    Process.pid: 100 starts (each ended before the next), and never `pid 0` beside `state
    running`; the close of cmd returns once the launcher has given the pid, so it is there
    at once (`state starting` with pid 0 would stand only for a launcher that takes more than
    two seconds)."""
    s = sbx.new_session()
    p = new_proc(s)
    for i in range(100):
        start(p, "sleep 1000")
        st = status(p)
        assert st["state"] in ("starting", "running"), (i, st)
        assert (st["pid"] == "0") == (st["state"] == "starting"), (i, st)
        assert st["state"] == "running", (i, st)
        assert ctl(p, "kill KILL", at_close=True) == 0
        assert exit_of(p) == 137


def test_output_of_a_process_that_ends_at_once_is_all_there(sbx):
    """No empty or partial logs: read right after the start and again after the exit."""
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "head -c 300000 /dev/zero | tr '\\0' a; echo tail-end; head -c 70000 /dev/zero"
             " | tr '\\0' e >&2")
    out = read_bytes(p / "stdout")
    assert out == b"a" * 300000 + b"tail-end\n"
    assert exit_of(p) == 0
    assert read_bytes(p / "stdout") == out
    assert read_bytes(p / "stderr") == b"e" * 70000
    assert os.stat(p / "stderr").st_size == 70000
    # and many quick starts in a row, each read as soon as the file is written
    for i in range(25):
        start(p, f"echo run-{i}; echo err-{i} >&2")
        assert read_bytes(p / "stdout") == f"run-{i}\n".encode(), f"start {i + 2}"
        assert read_bytes(p / "stderr") == f"err-{i}\n".encode(), f"start {i + 2}"
        assert exit_of(p) == 0
    assert status(p)["starts"] == "26"


@pytest.mark.parametrize("code", [1, 3, 127, 130])
def test_failing_process(sbx, code):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, f"echo failing >&2; exit {code}")
    assert exit_of(p) == code
    assert read_bytes(p / "stderr") == b"failing\n"
    st = status(p)
    # an exit status above 128 that no signal caused is still a failure, not a kill
    assert st["state"] == "failed" and st["exit"] == str(code) and st["signal"] == "0", st


def test_unknown_command_fails_with_127(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "no-such-command-xyz")
    assert exit_of(p) == 127
    assert b"no-such-command-xyz" in read_bytes(p / "stderr")
    assert status(p)["state"] == "failed"


def test_exit_blocks_until_the_process_ends(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    started, go = uniq("started"), uniq("go")
    try:
        start(p, f"touch {ws_path(sbx, started)}; {wait_file_sh(ws_path(sbx, go))}; exit 4")
        sbx.wait_ws_file(started)
        reader = Background(read_bytes, p / "exit", what="cat exit")
        assert not reader.wait(0.3), "exit returned while the process runs"
        st = status(p)
        assert st["state"] == "running" and st["exit"] == "-" and st["ended"] == "-", st
    finally:
        sbx.touch(go)
    assert reader.result(15) == b"4\n"


def test_cmd_write_while_running_is_ebusy_then_restart(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    go = uniq("go")
    try:
        start(p, f"echo first; {wait_file_sh(ws_path(sbx, go))}")
        assert wait_line(p / "stdout", "first") == b"first\n"
        assert write_errno(p / "cmd", "echo second\n") == errno.EBUSY
        st = status(p)
        assert st["state"] == "running" and st["starts"] == "1", st
        assert read_bytes(p / "cmd") == f"echo first; {wait_file_sh(ws_path(sbx, go))}".encode()
    finally:
        sbx.touch(go)
    assert exit_of(p) == 0
    start(p, "echo second; echo again >&2")
    assert exit_of(p) == 0
    assert read_bytes(p / "stdout") == b"second\n"
    assert read_bytes(p / "stderr") == b"again\n"
    st = status(p)
    assert st["starts"] == "2" and st["state"] == "completed", st


def test_an_open_output_keeps_reading_its_own_start(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "echo one")
    assert exit_of(p) == 0
    fd = bounded(os.open, p / "stdout", os.O_RDONLY)
    try:
        start(p, "echo two")
        assert exit_of(p) == 0
        assert bounded(os.read, fd, 100) == b"one\n"
    finally:
        os.close(fd)
    assert read_bytes(p / "stdout") == b"two\n"


# --- streaming output --------------------------------------------------------------------------


def test_grep_m1_waits_for_a_log_line(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    go1, go2 = uniq("go"), uniq("go")
    marker = uniq("READY")
    grep = None
    try:
        start(p, f"echo starting; {wait_file_sh(ws_path(sbx, go1))}; echo {marker}; "
                 f"{wait_file_sh(ws_path(sbx, go2))}; echo after")
        assert wait_line(p / "stdout", "starting") == b"starting\n"
        grep = subprocess.Popen(["grep", "-m1", marker, str(p / "stdout")],
                                stdout=subprocess.PIPE, start_new_session=True)
        wait_until(lambda: has_open(grep.pid, p / "stdout") or grep.poll() is not None, 10,
                   "grep to open stdout")
        with pytest.raises(subprocess.TimeoutExpired):
            grep.wait(0.3)  # it reads, and waits for more
        sbx.touch(go1)
        out, _ = grep.communicate(timeout=15)
        assert (grep.returncode, out) == (0, f"{marker}\n".encode())
        assert status(p)["state"] == "running"
    finally:
        sbx.touch(go1)
        sbx.touch(go2)
        if grep and grep.poll() is None:
            os.killpg(grep.pid, signal.SIGKILL)
            grep.wait(10)
    assert read_bytes(p / "stdout") == f"starting\n{marker}\nafter\n".encode()
    assert exit_of(p) == 0


def test_open_of_an_empty_running_output_waits_for_its_first_byte(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    go1, go2 = uniq("go"), uniq("go")
    started = uniq("started")
    opener = None
    try:
        start(p, f"touch {ws_path(sbx, started)}; {wait_file_sh(ws_path(sbx, go1))}; "
                 f"echo first; {wait_file_sh(ws_path(sbx, go2))}; echo second")
        sbx.wait_ws_file(started)
        # O_NONBLOCK: the open returns at once, and a read has nothing yet
        nb = bounded(os.open, p / "stdout", os.O_RDONLY | os.O_NONBLOCK, timeout=5)
        try:
            assert errno_of(os.read, nb, 100, timeout=5) == errno.EAGAIN
            assert os.fstat(nb).st_size == 0
        finally:
            os.close(nb)
        opener = Background(os.open, p / "stdout", os.O_RDONLY, what="open stdout")
        assert not opener.wait(0.3), "open of an empty running output returned at once"
        sbx.touch(go1)
        fd = opener.result(15)
        opener = None  # the fd is ours now
        try:
            assert bounded(os.read, fd, 100) == b"first\n"
            reader = Background(os.read, fd, 100, what="read at the end")
            assert not reader.wait(0.3), "a read at the end returned while it runs"
            sbx.touch(go2)
            assert reader.result(15) == b"second\n"
            assert bounded(os.read, fd, 100) == b""
        finally:
            os.close(fd)
    finally:
        sbx.touch(go1)
        sbx.touch(go2)
        if opener is not None and opener.wait(15):  # the body failed while it was opening
            try:
                os.close(opener.result(0))
            except OSError:
                pass
    assert exit_of(p) == 0


# --- kills, signals, timeouts ------------------------------------------------------------------


def test_kill_of_a_bash_wrapper_leaves_neither(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"sleep {tag}; echo x")
        # the wrapper bash (its command line holds the whole script) and the sleep
        wait_until(lambda: len(procs_matching(f"sleep {tag}")) >= 2, 10,
                   "the bash wrapper and its sleep",
                   show=lambda: f"found {procs_matching(f'sleep {tag}')}")
        assert status(p)["state"] == "running"
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        assert_procs_gone([f"sleep {tag}"])
        st = status(p)
        assert st["state"] == "killed" and st["signal"] == str(int(signal.SIGTERM)), st
        assert st["exit"] == "143" and st["timed_out"] == "no", st
        assert read_bytes(p / "stdout") == b""
        assert ctl(p, "kill", at_close=True) == errno.ESRCH
    finally:
        kill_tags([f"sleep {tag}"])


def test_kill_reaches_a_deep_tree_with_setsid_in_the_middle(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    t2, t3, t4, t5, t6 = (sleep_tag() for _ in range(5))
    q = shlex.quote
    # level 1: the process's bash; 2: bash; 3: setsid bash (new session); 4: bash with a sleep
    # and a double-forked orphan
    level4 = f"(sleep {t5} &); sleep {t6} & sleep {t4}; echo never4"
    level3 = f"sleep {t3} & bash -c {q(level4)}; echo never3"
    level2 = f"sleep {t2} & setsid bash -c {q(level3)}; echo never2"
    tags = [f"sleep {t}" for t in (t2, t3, t4, t5, t6)]
    try:
        start(p, f"bash -c {q(level2)}; echo never1")
        wait_procs(tags)
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        assert_procs_gone(tags)
        assert status(p)["state"] == "killed"
        assert b"never" not in read_bytes(p / "stdout")
    finally:
        kill_tags(tags)


def test_kill_of_a_process_that_traps_term_escalates_to_kill(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"trap '' TERM; echo trapped; sleep {tag}; echo x")
        assert wait_line(p / "stdout", "trapped") == b"trapped\n"
        wait_procs([f"sleep {tag}"])
        t0 = time.monotonic()
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=DEFAULT_GRACE + 15) == 128 + signal.SIGKILL
        elapsed = time.monotonic() - t0
        assert DEFAULT_GRACE * 0.9 <= elapsed < DEFAULT_GRACE + 8, elapsed
        assert_procs_gone([f"sleep {tag}"])
        st = status(p)
        assert st["state"] == "killed" and st["signal"] == str(int(signal.SIGKILL)), st
        assert st["exit"] == "137", st
    finally:
        kill_tags([f"sleep {tag}"])


def test_ctl_kill_with_a_signal(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"trap '' TERM; sleep {tag}; echo x")
        wait_procs([f"sleep {tag}"])
        t0 = time.monotonic()
        ctl_ok(p, "kill KILL")
        assert exit_of(p, timeout=15) == 137
        assert time.monotonic() - t0 < DEFAULT_GRACE * 0.9, "KILL waited for the grace"
        assert status(p)["signal"] == "9"
    finally:
        kill_tags([f"sleep {tag}"])


@pytest.mark.parametrize("sig,num", [("INT", 2), ("SIGINT", 2), ("TERM", 15), ("15\n", 15),
                                     ("9", 9), ("HUP", 1), ("SIGUSR1", 10)])
def test_signal_file(sbx, sig, num):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"sleep {tag}; echo x")
        wait_procs([f"sleep {tag}"])
        assert send(p, sig) == 0
        assert exit_of(p, timeout=15) == 128 + num
        assert_procs_gone([f"sleep {tag}"], why=f"signal {sig!r}")
        st = status(p)
        assert st["state"] == "killed" and st["signal"] == str(num), st
        assert read_bytes(p / "stdout") == b""
        assert send(p, sig) == errno.ESRCH
    finally:
        kill_tags([f"sleep {tag}"])


def test_signal_that_is_handled_does_not_end_it(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    go = uniq("go")
    try:
        start(p, f"trap 'echo got-usr1' USR1; echo armed; "
                 f"while [ ! -e {ws_path(sbx, go)} ]; do sleep 0.05; done; echo done")
        assert wait_line(p / "stdout", "armed") == b"armed\n"
        assert send(p, "USR1") == 0
        assert wait_line(p / "stdout", "got-usr1") == b"got-usr1\n"
        assert status(p)["state"] == "running"
    finally:
        sbx.touch(go)
    assert exit_of(p) == 0
    assert status(p)["state"] == "completed"


@pytest.mark.parametrize("sig", ["NOSUCH", "SIG", "999", "-1", "", "KILL KILL"])
def test_bad_signal_is_einval(sbx, sig):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"sleep {tag}")
        wait_procs([f"sleep {tag}"])
        if sig:
            assert send(p, sig) == errno.EINVAL
        else:
            assert send(p, "\n") == errno.EINVAL
        assert status(p)["state"] == "running"
    finally:
        kill_tags([f"sleep {tag}"])


@pytest.mark.parametrize("line", ["frobnicate", "kill NOSUCH", "timeout", "timeout abc",
                                  "timeout -5", "kill 9 9", "restart"])
def test_bad_ctl_line_is_einval(sbx, line):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"sleep {tag}")
        wait_procs([f"sleep {tag}"])
        assert ctl(p, line + "\n") == errno.EINVAL
        assert status(p)["state"] == "running"
    finally:
        kill_tags([f"sleep {tag}"])


def test_ctl_timeout_before_the_start(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        ctl_ok(p, "timeout 300")
        assert status(p)["timeout"] == "300"
        t0 = time.monotonic()
        start(p, f"sleep {tag}; echo x")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        elapsed = time.monotonic() - t0
        assert 0.25 <= elapsed < 10, elapsed
        assert_procs_gone([f"sleep {tag}"], why="the timeout")
        st = status(p)
        assert st["timed_out"] == "yes" and st["state"] == "killed", st
        assert read_bytes(p / "stdout") == b""
    finally:
        kill_tags([f"sleep {tag}"])


def test_ctl_timeout_of_a_running_process(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"sleep {tag}")
        wait_procs([f"sleep {tag}"])
        ctl_ok(p, "timeout 200")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        assert status(p)["timed_out"] == "yes"
        assert_procs_gone([f"sleep {tag}"], why="the timeout")
        # the limit stays for the next start; timeout 0 removes it
        ctl_ok(p, "timeout 0")
        start(p, "sleep 0.5; echo slow-but-fine")
        assert exit_of(p, timeout=15) == 0
        assert status(p)["timed_out"] == "no"
    finally:
        kill_tags([f"sleep {tag}"])


def test_timeout_of_a_process_that_traps_term(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        ctl_ok(p, "timeout 200")
        start(p, f"trap '' TERM; sleep {tag}")
        assert exit_of(p, timeout=DEFAULT_GRACE + 15) == 137
        assert status(p)["timed_out"] == "yes"
        assert_procs_gone([f"sleep {tag}"], why="the timeout and the grace")
    finally:
        kill_tags([f"sleep {tag}"])


# --- rmdir -------------------------------------------------------------------------------------


def test_rmdir_of_a_running_process_ends_it(sbx):
    s = sbx.new_session()
    name = uniq("r")
    p = new_proc(s, name)
    t1, t2 = sleep_tag(), sleep_tag()
    tags = [f"sleep {t1}", f"sleep {t2}"]
    try:
        start(p, f"sleep {t1} & sleep {t2}; echo x")
        wait_procs(tags)
        bounded(os.rmdir, p)
        assert_procs_gone(tags, why="rmdir")
        assert name not in bounded(os.listdir, s / "procs")
        assert f"{s.name}:{name}" not in bounded(os.listdir, sbx.mnt / "procs")
        assert errno_of(os.stat, p / "status") == errno.ENOENT
        # the name can be taken again, by a fresh process
        p = new_proc(s, name)
        st = status(p)
        assert st["state"] == "idle" and st["starts"] == "0", st
        start(p, "echo reborn")
        assert exit_of(p) == 0 and read_bytes(p / "stdout") == b"reborn\n"
    finally:
        kill_tags(tags)


def test_rmdir_of_an_ended_process_forgets_it(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "echo bye")
    assert exit_of(p) == 0
    bounded(os.rmdir, p)
    assert p.name not in bounded(os.listdir, s / "procs")
    assert errno_of(os.rmdir, p) == errno.ENOENT


def test_rmdir_of_the_session_ends_its_processes(sbx):
    s = sbx.new_session()
    a, b = new_proc(s, "a"), new_proc(s, "b")
    ta, tb = sleep_tag(), sleep_tag()
    tags = [f"sleep {ta}", f"sleep {tb}"]
    try:
        start(a, f"sleep {ta}; echo x")
        start(b, f"(setsid sleep {tb} &); exec sleep {tb}")
        wait_procs(tags)
        links = bounded(os.listdir, sbx.mnt / "procs")
        assert f"{s.name}:a" in links and f"{s.name}:b" in links, links
        bounded(os.rmdir, s)
        assert_procs_gone(tags, why="rmdir of the session")
        links = bounded(os.listdir, sbx.mnt / "procs")
        assert f"{s.name}:a" not in links and f"{s.name}:b" not in links, links
    finally:
        kill_tags(tags)


# --- beside the foreground ---------------------------------------------------------------------


def test_background_process_does_not_block_foreground_commands(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"echo bg-started; sleep {tag}")
        wait_procs([f"sleep {tag}"])
        times = []
        for i in range(8):
            t0 = time.monotonic()
            assert sbx.run(s, f"echo fg-{i}", timeout=10) == (f"fg-{i}\n".encode(), b"", 0)
            times.append(time.monotonic() - t0)
        assert max(times) < 3, times
        assert status(p)["state"] == "running"
        assert procs_matching(f"sleep {tag}")
        # the foreground's output stays out of the background's log
        assert bounded(os.stat, p / "stdout").st_size == len(b"bg-started\n")
    finally:
        kill_tags([f"sleep {tag}"])


def test_background_process_starts_while_a_foreground_command_runs(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    started, go = uniq("started"), uniq("go")
    try:
        sbx.submit(s, f"touch {started}; {wait_file_sh(go)}; echo fg-done")
        sbx.wait_ws_file(started)
        start(p, "echo bg-ran")
        assert exit_of(p, timeout=10) == 0
        assert read_bytes(p / "stdout") == b"bg-ran\n"
        st = bounded(read_bytes, s / "status", timeout=5)
        assert b"state running\n" in st, st
    finally:
        sbx.touch(go)
    assert sbx.read(s, "stdout") == b"fg-done\n"
    assert sbx.exit_status(s) == 0


def test_session_timeout_does_not_apply_to_background_processes(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    started, go = uniq("started"), uniq("go")
    tag = sleep_tag()
    try:
        assert write_errno(s / "timeout", "300\n") == 0
        start(p, f"touch {ws_path(sbx, started)}; {wait_file_sh(ws_path(sbx, go))}; "
                 "echo survived")
        sbx.wait_ws_file(started)
        # a foreground command of the session times out after 300 ms: the background
        # process, older than that, must still run
        assert sbx.run(s, f"sleep {tag}", timeout=15)[2] == 124
        st = status(p)
        assert st["state"] == "running" and st["timeout"] == "0", st
    finally:
        sbx.touch(go)
        kill_tags([f"sleep {tag}"])
    assert exit_of(p) == 0
    assert read_bytes(p / "stdout") == b"survived\n"
    assert status(p)["timed_out"] == "no"


def test_foreground_timeouts_and_kills_leave_background_processes(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    bg, fg1, fg2, fg3 = sleep_tag(), sleep_tag(), sleep_tag(), sleep_tag()
    try:
        start(p, f"sleep {bg}; echo bg-done")
        wait_procs([f"sleep {bg}"])
        # session timeout file
        assert write_errno(s / "timeout", "300\n") == 0
        assert sbx.run(s, f"sleep {fg1}", timeout=15)[2] == 124
        assert write_errno(s / "timeout", "0\n") == 0
        assert status(p)["state"] == "running" and procs_matching(f"sleep {bg}")
        # ctl timeout
        assert write_errno(s / "ctl", "timeout 300\n", flags=os.O_WRONLY) == 0
        assert sbx.run(s, f"sleep {fg2}", timeout=15)[2] == 124
        assert status(p)["state"] == "running" and procs_matching(f"sleep {bg}")
        # ctl kill (TERM and KILL)
        sbx.submit(s, f"sleep {fg3}")
        wait_procs([f"sleep {fg3}"])
        assert write_errno(s / "ctl", "kill KILL\n", flags=os.O_WRONLY) == 0
        assert sbx.exit_status(s, timeout=15) == 137
        assert status(p)["state"] == "running" and procs_matching(f"sleep {bg}")
        assert sbx.run(s, "echo still-fine") == (b"still-fine\n", b"", 0)
        assert status(p)["state"] == "running" and procs_matching(f"sleep {bg}")
        # a fresh shell for the session leaves them too
        old_shell = status(s)["shell_pid"]
        assert write_errno(s / "ctl", "restart\n", flags=os.O_WRONLY) == 0
        wait_until(lambda: status(s)["shell_pid"] not in (old_shell, "0"), 15,
                   "the new shell", show=lambda: status(s))
        assert sbx.run(s, "echo new-shell") == (b"new-shell\n", b"", 0)
        assert status(p)["state"] == "running" and procs_matching(f"sleep {bg}")
    finally:
        kill_tags([f"sleep {t}" for t in (bg, fg1, fg2, fg3)])


def test_env_and_cwd_of_the_session_at_start_time(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    d = uniq("dir")
    go = uniq("go")
    try:
        assert sbx.run(s, f"export PVAR=one; mkdir {d}; cd {d}") == (b"", b"", 0)
        start(p, f"echo \"$PVAR $PWD\"; {wait_file_sh(ws_path(sbx, go))}; "
                 "echo \"$PVAR $PWD $(pwd)\"")
        assert wait_line(p / "stdout", "one") == f"one {sbx.cmd_ws}/{d}\n".encode()
        # change the session's env and cwd while it runs: the process keeps its own
        assert sbx.run(s, "export PVAR=two; cd ..") == (b"", b"", 0)
        write_bytes(s / "env", "OTHER=x\n")
        sbx.touch(go)
        assert exit_of(p) == 0
        assert read_bytes(p / "stdout") == (f"one {sbx.cmd_ws}/{d}\n"
                                            f"one {sbx.cmd_ws}/{d} {sbx.cmd_ws}/{d}\n").encode()
        # a new start takes the session's env and cwd of that moment
        start(p, "echo \"$PVAR $OTHER $PWD\"")
        assert exit_of(p) == 0
        assert read_bytes(p / "stdout") == f"two x {sbx.cmd_ws}\n".encode()
    finally:
        sbx.touch(go)


def test_canary_of_the_daemon_does_not_reach_a_process(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "env")
    assert exit_of(p) == 0
    out = read_bytes(p / "stdout")
    assert sbx.canary.encode() not in out
    assert b"\nPATH=" in b"\n" + out


# --- stdin -------------------------------------------------------------------------------------


def test_stdin_staged_before_the_start(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    write_bytes(p / "stdin", "staged-1\n", flags=os.O_WRONLY)
    write_bytes(p / "stdin", b"staged-2\0\xff\n", flags=os.O_WRONLY)
    start(p, "cat; echo eof")
    assert exit_of(p) == 0
    assert read_bytes(p / "stdout") == b"staged-1\nstaged-2\0\xff\neof\n"


def test_stdin_without_anything_is_at_eof(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    start(p, "cat; echo eof")
    assert exit_of(p, timeout=15) == 0
    assert read_bytes(p / "stdout") == b"eof\n"


def test_stdin_with_a_held_open_writer(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    fd = bounded(os.open, p / "stdin", os.O_WRONLY)
    closed = False
    try:
        start(p, "cat; echo cat-ended")
        assert bounded(os.write, fd, b"line1\n") == 6
        assert wait_line(p / "stdout", "line1") == b"line1\n"
        assert status(p)["state"] == "running", "cat ended while stdin was held open"
        assert bounded(os.write, fd, b"line2\n") == 6
        assert wait_line(p / "stdout", "line2") == b"line2\n"
        assert status(p)["state"] == "running"
        os.close(fd)
        closed = True
        assert exit_of(p, timeout=15) == 0
        assert read_bytes(p / "stdout") == b"line1\nline2\ncat-ended\n"
    finally:
        if not closed:
            os.close(fd)
        if status(p)["state"] == "running":
            ctl(p, "kill KILL", at_close=True)


# --- ports and ready ---------------------------------------------------------------------------


def test_ready_ports_and_a_client_in_another_session(sbx):
    srv = sbx.new_session()
    cli = sbx.new_session()
    p = new_proc(srv, "web")
    page = uniq("page") + ".txt"
    body = uniq("hello-from-the-server")
    (sbx.ws / page).write_text(body)
    port = free_port()
    try:
        reader = Background(read_bytes, p / "ready", what="cat ready")
        start(p, server_cmd(port))
        assert reader.result(30) == f"{port}\n".encode()
        assert read_bytes(p / "ports") == f"{port}\n".encode()
        assert read_bytes(p / "ready", timeout=5) == f"{port}\n".encode()
        out, err, code = sbx.run(cli, fetch_cmd(port, page), timeout=30)
        assert (out, code) == (f"200\n{body}".encode(), 0), err
        assert status(p)["state"] == "running"
        assert wait_line(p / "stderr", f"GET /{page}").startswith(b"127.0.0.1")
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        assert status(p)["state"] == "killed"
        assert read_bytes(p / "ports") == b""
    finally:
        if status(p)["state"] == "running":
            ctl(p, "kill KILL", at_close=True)


def test_ready_sees_a_port_of_a_child(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    port = free_port()
    try:
        start(p, f"echo wrapper; {server_cmd(port)} & wait; echo never")
        assert read_bytes(p / "ready", timeout=30) == f"{port}\n".encode()
        assert read_bytes(p / "ports") == f"{port}\n".encode()
        out, err, code = sbx.run(s, fetch_cmd(port), timeout=30)
        assert code == 0 and out.startswith(b"200\n"), (out, err)
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM
        assert b"never" not in read_bytes(p / "stdout")
    finally:
        if status(p)["state"] == "running":
            ctl(p, "kill KILL", at_close=True)


def test_ports_lists_every_listening_port(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    p1, p2 = free_port(), free_port()
    while p2 == p1:
        p2 = free_port()
    try:
        start(p, f"{server_cmd(p1)} & {server_cmd(p2)} & wait")
        want = "".join(f"{n}\n" for n in sorted((p1, p2))).encode()
        wait_until(lambda: read_bytes(p / "ports", timeout=5) == want, 30,
                   f"ports {p1} and {p2}", show=lambda: read_bytes(p / "ports", timeout=5))
    finally:
        if status(p)["state"] == "running":
            ctl(p, "kill KILL", at_close=True)
    assert exit_of(p, timeout=15) == 137


def test_ready_is_eof_for_a_process_that_ends_without_listening(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    started, go = uniq("started"), uniq("go")
    try:
        start(p, f"touch {ws_path(sbx, started)}; {wait_file_sh(ws_path(sbx, go))}; echo bye")
        sbx.wait_ws_file(started)
        reader = Background(read_bytes, p / "ready", what="cat ready")
        assert not reader.wait(0.3), "ready returned while the process runs without a port"
        sbx.touch(go)
        assert reader.result(15) == b""
    finally:
        sbx.touch(go)
    assert exit_of(p) == 0
    # and at once for one that has already ended
    assert read_bytes(p / "ready", timeout=5) == b""
    start(p, "exit 2")
    assert exit_of(p) == 2
    assert read_bytes(p / "ready", timeout=5) == b""


# --- the root's procs/ -------------------------------------------------------------------------


def test_root_procs_links_processes_of_two_sessions(sbx):
    a = sbx.new_session()
    b = sbx.new_session(uniq("dotted.session"))
    pa, pb, pc = new_proc(a, "web"), new_proc(b, "db"), new_proc(b, "x.y")
    start(pa, "echo in-a")
    assert exit_of(pa) == 0
    root = sbx.mnt / "procs"
    names = bounded(os.listdir, root)
    for sess, proc in ((a, pa), (b, pb), (b, pc)):
        link = f"{sess.name}:{proc.name}"
        assert link in names, names
        assert bounded(os.readlink, root / link) == f"../sessions/{sess.name}/procs/{proc.name}"
        assert bounded(os.path.isdir, root / link), link
        assert bounded(os.path.islink, root / link), link
    assert status(root / f"{a.name}:web")["name"] == "web"
    assert read_bytes(root / f"{a.name}:web" / "stdout") == b"in-a\n"
    assert status(root / f"{b.name}:x.y")["name"] == "x.y"
    for nosuch in (f"{a.name}:nosuch", f"{a.name}.web", "nosuch:web", f"{a.name}:web:x", ":web",
                   f"{a.name}:"):
        assert errno_of(os.lstat, root / nosuch) == errno.ENOENT, nosuch
    bounded(os.rmdir, pb)
    assert f"{b.name}:db" not in bounded(os.listdir, root)
    assert errno_of(os.lstat, root / f"{b.name}:db") == errno.ENOENT


def test_root_procs_names_are_unique(sbx):
    """Session B.b's process c and session B's process b.c: with a dot between session and
    process both would be B.b.c; each has its own name, resolving to its own process."""
    base = uniq("amb")
    s1 = sbx.new_session(base)
    s2 = sbx.new_session(base + ".b")
    p1, p2 = new_proc(s1, "b.c"), new_proc(s2, "c")
    start(p1, "echo one")
    start(p2, "echo two")
    assert exit_of(p1) == 0 and exit_of(p2) == 0
    root = sbx.mnt / "procs"
    names = [n for n in bounded(os.listdir, root) if n.startswith(base)]
    assert sorted(names) == sorted([f"{base}:b.c", f"{base}.b:c"]), names
    for link, sess, proc, out in ((f"{base}:b.c", s1, "b.c", b"one\n"),
                                  (f"{base}.b:c", s2, "c", b"two\n")):
        assert bounded(os.readlink, root / link) == f"../sessions/{sess.name}/procs/{proc}"
        assert status(root / link)["name"] == proc
        assert read_bytes(root / link / "stdout") == out
        assert (bounded(os.stat, root / link).st_ino
                == bounded(os.stat, sess / "procs" / proc).st_ino)


# --- known bugs (see the reasons; strict: they fail loudly once fixed) -------------------------


def test_kill_reaches_a_child_that_ignores_term_after_its_parent_died(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    inner = f"trap '' TERM; echo inner; sleep {tag}"
    try:
        start(p, f"bash -c {shlex.quote(inner)}; echo x")
        assert wait_line(p / "stdout", "inner") == b"inner\n"
        wait_procs([f"sleep {tag}"])
        ctl_ok(p, "kill")
        assert exit_of(p, timeout=15) == 128 + signal.SIGTERM  # the wrapper dies of TERM
        assert_procs_gone([f"sleep {tag}"], timeout=DEFAULT_GRACE + 5,
                          why="kill and its grace (the child ignores TERM)")
    finally:
        kill_tags([f"sleep {tag}"])


def test_ctl_timeout_during_the_grace_keeps_the_kill(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag = sleep_tag()
    try:
        start(p, f"trap '' TERM; echo trapped; sleep {tag}")
        assert wait_line(p / "stdout", "trapped") == b"trapped\n"
        ctl_ok(p, "kill")
        ctl_ok(p, "timeout 0")
        assert exit_of(p, timeout=DEFAULT_GRACE + 5) == 137
    finally:
        kill_tags([f"sleep {tag}"])


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_process_that_closes_its_output_does_not_busy_the_daemon(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    tag, closed = sleep_tag(), uniq("closed")
    try:
        start(p, f"exec >/dev/null 2>&1; touch {ws_path(sbx, closed)}; sleep {tag}")
        sbx.wait_ws_file(closed)
        wait_procs([f"sleep {tag}"])
        before, t0 = _cpu_seconds(sbx.proc.pid), time.monotonic()
        time.sleep(1.0)
        used = _cpu_seconds(sbx.proc.pid) - before
        wall = time.monotonic() - t0
        assert used < 0.3 * wall, f"the idle daemon used {used:.2f} s of CPU in {wall:.2f} s"
    finally:
        ctl(p, "kill KILL")
        kill_tags([f"sleep {tag}"])


def test_ready_of_a_never_started_process_ends_with_rmdir(sbx):
    s = sbx.new_session()
    p = new_proc(s)
    cat = subprocess.Popen(["cat", str(p / "ready")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_until(lambda: has_open(cat.pid, p / "ready"), 10, "cat to open ready")
        bounded(os.rmdir, p)
        try:
            cat.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("cat ready still blocked 5 s after rmdir of the process")
    finally:
        if cat.poll() is None:
            os.killpg(cat.pid, signal.SIGKILL)
            cat.wait(10)
