"""Exact answers: a command's stderr reads as `bash -c` would print it, with no notice of the
driver's own kills; `ctl killall` and `kill` of what commands left behind; `procs/ctl` in a
session and at the root.

Every wait is bounded; sleeps stand for "a long time" and are killed by the test.
"""

import errno
import os
import re
import shlex
from pathlib import Path

import pytest

from sbxutil import (status, errname, isolation_none, kill_quietly, procs_matching, read_bytes,
                     sleep_tag, wait_until, write_errno)


def ctl(path, line, at_close=False):
    """One write() of `line` to a ctl file; returns its errno (0 on success). With at_close,
    the close's errno after a write that succeeded (lines apply at close, a last line without
    its newline is checked there)."""
    return write_errno(Path(path), line, flags=os.O_WRONLY, at_close=at_close)


def ctl_ok(path, line):
    err = ctl(path, line)
    assert err == 0, f"{path} {line!r}: {errname(err)}"


def running(tag):
    return bool(procs_matching(f"sleep {tag}"))


def wait_running(*tags):
    wait_until(lambda: all(running(t) for t in tags), 10, f"sleep {tags} to start")


def wait_gone(*tags, timeout=5):
    wait_until(lambda: not any(running(t) for t in tags), timeout, f"sleep {tags} to end")


@pytest.fixture
def tags():
    made = []

    def make():
        made.append(sleep_tag())
        return made[-1]

    yield make
    for t in made:
        kill_quietly(procs_matching(f"sleep {t}"))


# --- stderr as bash -c prints it ------------------------------------------------------------

ERRORS = [
    "nosuchcmd",
    "true; nosuchcmd",
    "true\n\nnosuchcmd arg",
    "cd /nonexistent-dir",
    "false | nosuch; echo out",
    "f() { nosuch; }; f",
    "if true; then\n  nosuch\nfi",
    "echo $(nosuch-in-subst)",
    "return 3",
    "local x=1",
]


@pytest.mark.parametrize("cmd", ERRORS)
def test_stderr_of_a_failing_command_is_what_bash_c_prints(sbx, cmd):
    s = sbx.new_session()
    ours = sbx.run(s, cmd)
    theirs = sbx.run(s, "bash -c " + shlex.quote(cmd))
    assert ours == theirs
    assert b"/dev/fd" not in ours[1]


def test_syntax_error_names_eval_where_bash_c_says_dash_c(sbx):
    # The one documented difference: the parser names eval, not -c.
    s = sbx.new_session()
    out, err, code = sbx.run(s, "echo ${x")
    theirs = sbx.run(s, "bash -c 'echo ${x'")
    assert code == theirs[2] == 2
    assert err == theirs[1].replace(b"bash: -c: ", b"bash: eval: ")


@pytest.mark.parametrize("cmd,err", [
    ("sleep 10", b""),
    ("sleep 10; echo after", b""),
    ("echo before >&2; sleep 10; echo after >&2", b"before\n"),
    ("for i in 1 2 3; do sleep 10; done; echo after", b""),
    ("while :; do sleep 10; done; echo after", b""),
    ("f() { while sleep 10; do :; done; }; f; echo after", b""),
    ("sleep 10 | cat; echo after", b""),
])
def test_a_timed_out_command_gets_no_kill_notice(sbx, cmd, err):
    s = sbx.new_session()
    ctl_ok(s / "ctl", "timeout 200")
    assert sbx.run(s, cmd) == (b"", err, 124)
    assert status(s)["restarts"] == "0"
    # what a bash -c killed the same way leaves on its stderr (a file, away from the notice
    # that the shell running `timeout` prints about it)
    theirs = sbx.run(s, "f=$(mktemp); timeout -s KILL 0.2 bash -c " + shlex.quote(cmd) +
                     ' 2>"$f" >/dev/null; cat "$f"; rm -f "$f"')
    assert theirs[0] == err
    assert sbx.run(s, "echo next") == (b"next\n", b"", 0)


@pytest.mark.parametrize("sig,code", [("TERM", 143), ("KILL", 137), ("HUP", 129)])
def test_a_killed_command_gets_no_kill_notice(sbx, tags, sig, code):
    s = sbx.new_session()
    t = tags()
    sbx.submit(s, f"sleep {t}; echo after")
    wait_running(t)
    ctl_ok(s / "ctl", f"kill {sig}")
    assert (sbx.read(s, "stdout"), sbx.read(s, "stderr"), sbx.exit_status(s)) == \
        (b"", b"", code)
    assert sbx.run(s, "echo next") == (b"next\n", b"", 0)


def test_a_notice_of_the_commands_own_doing_stays(sbx):
    # A job the command itself killed is reported as bash -c reports it (but for the pid). It
    # dies while `wait` waits for it: for a job that died before, bash itself (bash -c too)
    # at times prints no notice (3 of 300 under load).
    s = sbx.new_session()
    cmd = "sleep 30 & (sleep 0.3; kill -9 $!) & wait; echo done"
    ours = sbx.run(s, cmd)
    theirs = sbx.run(s, "bash -c " + shlex.quote(cmd))
    def unpid(r):
        return (r[0], re.sub(rb"line 1: +[0-9]+ ", b"line 1: PID ", r[1]), r[2])
    assert unpid(ours) == unpid(theirs)
    assert re.fullmatch(rb"bash: line 1: PID Killed +sleep 30\n", unpid(ours)[1]), ours


def test_the_shell_keeps_dying_of_a_signal_sent_to_itself(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "kill -TERM $$")[2] == 143
    assert sbx.run(s, "echo back") == (b"back\n", b"", 0)


# --- killall and kill of leftovers ----------------------------------------------------------

def test_killall_ends_background_jobs_and_double_forks_not_the_shell(sbx, tags):
    s = sbx.new_session()
    a, b = tags(), tags()
    assert sbx.run(s, f"sleep {a} & (setsid sleep {b} &)")[2] == 0
    wait_running(a, b)
    shell = status(s)["shell_pid"]
    ctl_ok(s / "ctl", "killall")
    wait_gone(a, b)
    assert status(s)["shell_pid"] == shell
    assert sbx.run(s, "echo alive") == (b"alive\n", b"", 0)


def test_killall_with_a_command_running_ends_it_and_the_leftovers(sbx, tags):
    s = sbx.new_session()
    a, b = tags(), tags()
    sbx.run(s, f"(setsid sleep {a} &)")
    sbx.submit(s, f"sleep {b}")
    wait_running(a, b)
    ctl_ok(s / "ctl", "killall KILL")
    assert sbx.exit_status(s) == 137
    wait_gone(a, b)
    assert sbx.run(s, "echo alive") == (b"alive\n", b"", 0)


def test_killall_with_nothing_to_end_succeeds(sbx):
    s = sbx.new_session()
    ctl_ok(s / "ctl", "killall")
    ctl_ok(s / "ctl", "killall INT\n")
    assert ctl(s / "ctl", "killall NOSUCH", at_close=True) == errno.EINVAL
    assert ctl(s / "ctl", "killall 9 9", at_close=True) == errno.EINVAL


def test_kill_with_only_leftovers_ends_them(sbx, tags):
    s = sbx.new_session()
    a = tags()
    sbx.run(s, f"(setsid sleep {a} &)")
    wait_running(a)
    ctl_ok(s / "ctl", "kill")
    wait_gone(a)
    assert ctl(s / "ctl", "kill", at_close=True) == errno.ESRCH
    assert sbx.run(s, "echo alive") == (b"alive\n", b"", 0)


def test_kill_of_leftovers_that_ignore_term_kills_them_after_the_grace(sbx, tags):
    s = sbx.new_session()
    a = tags()
    sbx.run(s, f"(trap '' TERM; exec sleep {a}) > /dev/null 2>&1 &")
    wait_running(a)
    ctl_ok(s / "ctl", "kill")
    wait_gone(a, timeout=10)


def shell_and_leftover_at_its_pid(sbx, tags, sessions=20, tries=5):
    """A session, and a leftover `sleep` of it whose host pid is the session's shell's pid in
    the sandbox (the host's next pid is set through ns_last_pid, less the forks the shell makes
    before the command's own; a busy host may take it first, and a pid the host uses is no use:
    tried again, with new shells). (session, shell, tag)."""
    s = sbx.new_session()
    # pids inside pass 300, the lowest the host hands out once it wrapped
    assert sbx.run(s, "for i in $(seq 320); do /bin/true; done")[2] == 0
    skipped = 0
    for _ in range(sessions):
        s = sbx.new_session()
        assert sbx.run(s, "true")[2] == 0
        shell = int(status(s)["shell_pid"])
        for _ in range(tries if not os.path.exists(f"/proc/{shell}") else 0):
            t = tags()
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(shell - 1 - skipped))
            assert sbx.run(s, f"(sleep {t} &)")[2] == 0
            pids = wait_until(lambda: procs_matching(f"sleep {t}", comm="sleep"), 10, "sleep")
            if pids == [shell]:
                return s, shell, t
            kill_quietly(pids)
            if len(pids) == 1 and 0 < pids[0] - shell + skipped < 8:
                skipped = pids[0] - shell + skipped  # the forks a command makes before it
    pytest.skip(f"the host never gave a leftover its shell's pid ({sessions} shells)")


@pytest.mark.skipif(os.geteuid() != 0, reason="sets the host's next pid (ns_last_pid)")
@pytest.mark.parametrize("verb", ["kill KILL", "killall KILL", "kill"])
def test_a_leftover_whose_host_pid_is_the_shells_pid_inside_is_no_shell(sbx, tags, verb):
    """The shell a kill spares is known by its pid in the sandbox: a leftover that has that
    number as its host pid is killed like any other, and the shell lives on."""
    if isolation_none():
        pytest.skip("one pid namespace: no host pid can be another process's pid inside")
    s, shell, t = shell_and_leftover_at_its_pid(sbx, tags)
    ctl_ok(s / "ctl", verb)
    wait_gone(t, timeout=10)
    assert status(s)["shell_pid"] == str(shell)
    assert status(s)["restarts"] == "0"
    assert sbx.run(s, "echo alive") == (b"alive\n", b"", 0)


def test_killall_spares_background_processes(sbx, tags):
    s = sbx.new_session()
    a, b = tags(), tags()
    (s / "procs" / "keep").mkdir()
    (s / "procs" / "keep" / "cmd").write_text(f"sleep {a}")
    sbx.run(s, f"sleep {b} &")
    wait_running(a, b)
    ctl_ok(s / "ctl", "killall KILL")
    wait_gone(b)
    assert running(a)
    assert status(s / "procs" / "keep")["state"] == "running"


# --- procs/ctl --------------------------------------------------------------------------------

def start_proc(s, name, cmd):
    (s / "procs" / name).mkdir()
    (s / "procs" / name / "cmd").write_text(cmd)


def test_session_procs_ctl_ends_that_sessions_background_processes(sbx, tags):
    s, other = sbx.new_session(), sbx.new_session()
    a, b, c, fg = tags(), tags(), tags(), tags()
    start_proc(s, "a", f"sleep {a}")
    start_proc(s, "b", f"(setsid sleep {b} &); exec sleep {b}")
    start_proc(other, "c", f"sleep {c}")
    sbx.submit(s, f"sleep {fg}")
    wait_running(a, b, c, fg)
    assert "ctl" in os.listdir(s / "procs")
    ctl_ok(s / "procs" / "ctl", "kill KILL\n")
    wait_gone(a, b)
    for name in "ab":
        assert read_bytes(s / "procs" / name / "exit") == b"137\n"
        assert status(s / "procs" / name)["state"] == "killed"
    assert running(c) and running(fg)
    assert status(other / "procs" / "c")["state"] == "running"
    assert status(s)["state"] == "running"


def test_root_procs_ctl_ends_every_background_process(sbx, tags):
    s1, s2 = sbx.new_session(), sbx.new_session()
    a, b = tags(), tags()
    start_proc(s1, "a", f"sleep {a}")
    start_proc(s2, "b", f"trap '' TERM; sleep {b}")
    wait_running(a, b)
    assert "ctl" in os.listdir(sbx.mnt / "procs")
    assert os.stat(sbx.mnt / "procs" / "ctl").st_mode & 0o777 == 0o200
    ctl_ok(sbx.mnt / "procs" / "ctl", "kill")
    assert read_bytes(s1 / "procs" / "a" / "exit") == b"143\n"
    wait_gone(a, b, timeout=10)  # b ignores TERM: KILL after the grace
    assert status(s1 / "procs" / "a")["state"] == "killed"
    assert status(s2 / "procs" / "b")["state"] == "killed"
    assert sbx.run(s1, "echo shell") == (b"shell\n", b"", 0)


def test_procs_ctl_with_nothing_running_succeeds(sbx):
    s = sbx.new_session()
    ctl_ok(s / "procs" / "ctl", "kill")
    ctl_ok(sbx.mnt / "procs" / "ctl", "kill TERM\n")


def test_procs_ctl_is_a_file_not_a_process_name(sbx):
    s = sbx.new_session()
    with pytest.raises(FileExistsError):
        os.mkdir(s / "procs" / "ctl")
    with pytest.raises(NotADirectoryError):
        os.rmdir(s / "procs" / "ctl")
    assert os.stat(s / "procs" / "ctl").st_mode & 0o777 == 0o200


@pytest.mark.parametrize("line", ["kill NOSUCH", "kill 9 9", "killall", "restart", "timeout 5",
                                  "kill\0", "\xff\xfe kill", "kill " + "9" * 200, "x" * 5000])
def test_procs_ctl_refuses_anything_but_kill(sbx, tags, line):
    s = sbx.new_session()
    a = tags()
    start_proc(s, "a", f"sleep {a}")
    wait_running(a)
    pids = procs_matching(f"sleep {a}")
    data = line.encode("utf-8", "surrogateescape")
    for path in (s / "procs" / "ctl", sbx.mnt / "procs" / "ctl"):
        # a line is checked when its newline arrives, a last one without it at close
        assert ctl(path, data + b"\n") == errno.EINVAL
        assert ctl(path, data, at_close=True) == errno.EINVAL
    assert running(a), how_it_ended(sbx, s / "procs" / "a", pids)


def how_it_ended(sbx, proc, pids):
    """What the daemon reports of a process that was not expected to end, once it saw the end:
    its signal says who ended it (printed whole: pytest cuts a long assertion message)."""
    try:
        wait_until(lambda: status(proc)["state"] != "running", 5, "the end to be reported")
    except pytest.fail.Exception as e:  # still running to the daemon: worth reporting too
        print(f"{proc}: {e}")
    print(f"host pids {pids}")
    print(read_bytes(proc / "status").decode(errors="replace"))
    print(sbx.daemon_log(limit=100000))
    return f"{proc}: {status(proc)}"


def test_procs_ctl_takes_a_huge_write_without_harm(sbx):
    s = sbx.new_session()
    err = ctl(s / "procs" / "ctl", b"\n" * (1 << 20))
    assert err == 0
    assert ctl(s / "procs" / "ctl", b"kill\n" + b"A" * (1 << 20)) == errno.EINVAL


# --- the sandbox-wide env -------------------------------------------------------------------

def root_env_write(sbx, text):
    return write_errno(sbx.mnt / "env", text)


def root_env(sbx):
    return read_bytes(sbx.mnt / "env").decode()


@pytest.fixture
def clean_root_env(sbx):
    yield
    names = [line.split("=", 1)[0] for line in root_env(sbx).splitlines()]
    if names:
        assert root_env_write(sbx, "".join(f"-{n}\n" for n in names)) == 0


def test_root_env_reaches_new_and_existing_sessions(sbx, clean_root_env):
    old = sbx.new_session()
    assert "env" in os.listdir(sbx.mnt)
    assert root_env_write(sbx, "RK_A=one\nRK_B=two words\n") == 0
    assert root_env(sbx) == "RK_A=one\nRK_B=two words\n"
    assert os.stat(sbx.mnt / "env").st_size == len(root_env(sbx))
    new = sbx.new_session()
    for s in (old, new):
        assert sbx.run(s, 'echo "$RK_A|$RK_B"') == (b"one|two words\n", b"", 0)
        assert sbx.read_env(s)["RK_B"] == "two words"


def test_a_sessions_own_value_wins(sbx, clean_root_env):
    s, other = sbx.new_session(), sbx.new_session()
    assert write_errno(s / "env", "RK_C=mine\n") == 0
    assert root_env_write(sbx, "RK_C=root\n") == 0
    assert sbx.run(s, "echo $RK_C") == (b"mine\n", b"", 0)
    assert sbx.run(other, "echo $RK_C") == (b"root\n", b"", 0)
    # a session's own unset is its own too
    assert write_errno(other / "env", "-RK_C\n") == 0
    assert root_env_write(sbx, "RK_C=again\n") == 0
    assert sbx.run(other, "echo ${RK_C-unset}") == (b"unset\n", b"", 0)
    assert sbx.run(s, "echo $RK_C") == (b"mine\n", b"", 0)


def test_root_env_unset(sbx, clean_root_env):
    s = sbx.new_session()
    assert root_env_write(sbx, "RK_D=1\nRK_E=2\n") == 0
    assert sbx.run(s, "echo $RK_D$RK_E") == (b"12\n", b"", 0)
    assert root_env_write(sbx, "-RK_D\n") == 0
    assert root_env(sbx) == "RK_E=2\n"
    assert sbx.run(s, "echo ${RK_D-unset} $RK_E") == (b"unset 2\n", b"", 0)
    assert sbx.run(sbx.new_session(), "echo ${RK_D-unset}") == (b"unset\n", b"", 0)


def test_root_env_waits_for_the_running_command(sbx, tags, clean_root_env):
    s = sbx.new_session()
    t = tags()
    sbx.submit(s, f"sleep {t}; echo \"[$RK_F]\"")
    wait_running(t)
    assert root_env_write(sbx, "RK_F=later\n") == 0
    kill_quietly(procs_matching(f"sleep {t}"))
    assert sbx.read(s, "stdout") == b"[]\n"
    assert sbx.run(s, "echo $RK_F") == (b"later\n", b"", 0)


@pytest.mark.parametrize("text", ["RK_OK=1\n1BAD=x\n", "RK_OK=1\n=x\n", "RK_OK=1\nno equals\n",
                                  "RK_OK=1\n-\n", "RK_OK=1\nA B=1\n",
                                  b"RK_OK=1\nX=\x00\n", b"RK_OK=1\n\xff\xfe=1\n"])
def test_a_bad_root_env_line_is_einval_and_applies_nothing(sbx, clean_root_env, text):
    s = sbx.new_session()
    assert root_env_write(sbx, text) == errno.EINVAL
    assert root_env(sbx) == ""
    assert sbx.run(s, "echo ${RK_OK-unset}") == (b"unset\n", b"", 0)


def test_root_env_takes_hostile_values_and_refuses_huge_writes(sbx, clean_root_env):
    s = sbx.new_session()
    # a value with quotes, $, backticks and semicolons reaches commands as is
    value = "a'b\"c $(touch /tmp/pwned) `id`; rm -rf x \\"
    assert root_env_write(sbx, f"RK_H={value}\n") == 0
    assert sbx.run(s, 'printf %s "$RK_H"') == (value.encode(), b"", 0)
    assert not os.path.exists("/tmp/pwned")
    # past 1 MiB a write fails with EFBIG, and nothing of the open is applied
    fd = os.open(sbx.mnt / "env", os.O_WRONLY)
    try:
        os.write(fd, b"RK_SMALL=1\nRK_BIG=")
        with pytest.raises(OSError) as e:
            for _ in range(3):
                os.write(fd, b"x" * (1 << 19))
        assert e.value.errno == errno.EFBIG
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    assert "RK_" not in root_env(sbx).replace("RK_H=", "")
    assert sbx.run(s, "echo ok") == (b"ok\n", b"", 0)


def test_set_u_stays_the_commands_and_kills_still_unwind(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "set -u; declare -x DECLARED_ONLY") == (b"", b"", 0)
    assert sbx.run(s, "echo $-")[0].strip().count(b"u") == 1
    ctl_ok(s / "ctl", "timeout 200")
    assert sbx.run(s, "f() { while :; do sleep 10; done; }; f; echo after") == (b"", b"", 124)
    assert status(s)["restarts"] == "0"
    assert sbx.run(s, "echo $-")[0].strip().count(b"u") == 1
    assert sbx.run(s, "set +u; echo ${nosuchvar-fine}") == (b"fine\n", b"", 0)
