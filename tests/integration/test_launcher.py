"""The launcher (the process inside the sandbox that starts every command) is out of reach of the
commands it starts: they can neither signal, ptrace, pidfd_open nor read it, nor its stdin
holder; what reaches the daemon's log from inside the sandbox is prefixed, escaped and
rate-limited; and a launcher that cannot start (chmod 000 /workspace, then its death) is
restarted with backoff, its workspace root repaired, without flooding the log."""

import ctypes
import os
import re
import signal
import subprocess
import time

import pytest

from sbxutil import (bounded, descendants, isolation_none, proc_parent, pid_alive,
                     read_bytes, wait_until, write_bytes, sh, put_script)

needs_sandbox = pytest.mark.skipif(
    isolation_none(), reason="--isolation none: no seccomp filter, no pid namespace, and "
    "commands run as the daemon's user (root may ptrace and signal anything)")
needs_bwrap = pytest.mark.skipif(
    isolation_none(), reason="--isolation none: without bwrap, the workspace root's mode does "
    "not keep the launcher from starting")


def host_launcher(m):
    """Host pids of (the launcher, its stdin holder) of mount m."""
    found = [p for p in descendants(m.proc.pid) if _is_launcher(p)]
    launcher = [p for p in found if proc_parent(p) not in found]
    holder = [p for p in found if proc_parent(p) in launcher]
    assert len(launcher) == 1 and len(holder) == 1, (found, m.daemon_log())
    return launcher[0], holder[0]


def _is_launcher(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0")[0]
    except OSError:
        return False
    return argv0.endswith(b"launcher")


def log_size(m):
    return m.stderr_log.stat().st_size


def new_log(m, since):
    with open(m.stderr_log, "rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace")


# Finds the launcher (child of bwrap's init) and its holder in the sandbox's /proc, and tries
# everything a process of the same user could do to them; prints one "what errno" per line.
ATTACK_PY = r"""
import ctypes, errno, os, resource, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_tkill, SYS_tgkill, SYS_ptrace, SYS_pidfd_send_signal = 200, 234, 101, 424
SYS_process_vm_readv, SYS_pidfd_open, SYS_pidfd_getfd, SYS_fcntl = 310, 434, 438, 72

def ppid(p):
    return int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])

procs = [int(p) for p in os.listdir("/proc") if p.isdigit()]
lpid = [p for p in procs
        if open(f"/proc/{p}/cmdline", "rb").read().startswith(b"/run/sbxfs/launcher")
        and ppid(p) == 1][0]
hpid = [p for p in procs if p != lpid and ppid(p) == lpid
        and open(f"/proc/{p}/cmdline", "rb").read().startswith(b"/run/sbxfs/launcher")][0]
print("pids", lpid, hpid)

def report(what, fn):
    try:
        r = fn()
        if isinstance(r, int) and r < 0:
            print(what, errno.errorcode[ctypes.get_errno()])
        else:
            print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])

def sc(*args):
    return libc.syscall(*[ctypes.c_long(a) for a in args])

for name, pid in (("launcher", lpid), ("holder", hpid)):
    report(f"kill {name}", lambda: os.kill(pid, signal.SIGKILL))
    report(f"killpg {name}", lambda: os.kill(-pid, signal.SIGKILL))
    report(f"tkill {name}", lambda: sc(SYS_tkill, pid, 9))
    report(f"tgkill {name}", lambda: sc(SYS_tgkill, pid, pid, 9))
    report(f"sigqueue {name}", lambda: sc(129, pid, 9, 0))
    report(f"pidfd_open {name}", lambda: os.pidfd_open(pid))
    report(f"ptrace {name}", lambda: sc(SYS_ptrace, 16, pid, 0, 0))
    buf = ctypes.create_string_buffer(64)
    iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
    report(f"process_vm_readv {name}",
           lambda: sc(SYS_process_vm_readv, pid, ctypes.addressof(iov), 1,
                      ctypes.addressof(iov), 1, 0))
    procfd = os.open(f"/proc/{pid}", os.O_DIRECTORY)
    report(f"pidfd_send_signal {name}", lambda: sc(SYS_pidfd_send_signal, procfd, 9, 0, 0))
    r, w = os.pipe()
    report(f"f_setown {name}", lambda: sc(SYS_fcntl, r, 8, pid))
    report(f"prlimit {name}", lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (1, 1)))
    report(f"setaffinity {name}", lambda: os.sched_setaffinity(pid, {0}))
    report(f"setpriority {name}", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
report("kill -1", lambda: os.kill(-1, signal.SIGKILL))
report("mem launcher", lambda: os.open(f"/proc/{lpid}/mem", os.O_RDONLY))
report("fd launcher", lambda: os.listdir(f"/proc/{lpid}/fd"))
report("fd3 launcher", lambda: os.open(f"/proc/{lpid}/fd/3", os.O_RDWR))
report("stderr launcher", lambda: os.open(f"/proc/{lpid}/fd/2", os.O_WRONLY))
print("pids", lpid, hpid, "alive", os.path.exists(f"/proc/{lpid}"), os.path.exists(f"/proc/{hpid}"))
"""


@needs_sandbox
def test_commands_cannot_signal_trace_or_read_the_launcher(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    host_l, host_h = host_launcher(m)
    out, err, code = sh(m, s, f"python3 {put_script(m, ATTACK_PY)}")
    assert code == 0, (out, err)
    got = dict(line.rsplit(" ", 1) for line in out.splitlines() if not line.startswith("pids"))
    expected = {}
    for who in ("launcher", "holder"):
        for what in ("kill", "killpg", "tkill", "tgkill", "sigqueue", "pidfd_open", "ptrace",
                     "process_vm_readv", "f_setown", "prlimit", "setaffinity", "setpriority"):
            expected[f"{what} {who}"] = "EPERM"
        # it also takes a /proc/PID directory: refused as unsupported, so callers use kill()
        expected[f"pidfd_send_signal {who}"] = "ENOSYS"
    expected.update({"kill -1": "EPERM", "mem launcher": "EACCES", "fd launcher": "EACCES",
                     "fd3 launcher": "EACCES", "stderr launcher": "EACCES"})
    assert got == expected, (out, err)
    assert out.splitlines()[0] == "pids 2 3", out
    assert out.splitlines()[-1].endswith("alive True True"), out
    assert pid_alive(host_l) and pid_alive(host_h)
    assert host_launcher(m) == (host_l, host_h)
    assert sh(m, s, "echo next") == ("next\n", "", 0)


# setpriority and ioprio_set name their targets by pid, by process group or by user. The user-wide
# forms reach every process of the sandbox's uid, so they are refused; a group form reaches only
# the group it names, and the one of init, the launcher and the holder (pgid 1) is refused as
# init's pid. Prints one "what errno" per line, then the process groups of those three.
PRIORITY_PY = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_ioprio_set = 251
IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP, IOPRIO_WHO_USER = 1, 2, 3
IDLE = 3 << 13  # IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)

def report(what, fn):
    try:
        r = fn()
        print(what, errno.errorcode[ctypes.get_errno()] if isinstance(r, int) and r < 0 else "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])

def ioprio(which, who):
    return libc.syscall(SYS_ioprio_set, which, who, IDLE)

report("setpriority user 0", lambda: os.setpriority(os.PRIO_USER, 0, 19))
report("setpriority user uid", lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19))
report("setpriority pgrp 1", lambda: os.setpriority(os.PRIO_PGRP, 1, 19))
report("ioprio_set user 0", lambda: ioprio(IOPRIO_WHO_USER, 0))
report("ioprio_set user uid", lambda: ioprio(IOPRIO_WHO_USER, os.getuid()))
report("ioprio_set pgrp 1", lambda: ioprio(IOPRIO_WHO_PGRP, 1))
report("setpriority self", lambda: os.setpriority(os.PRIO_PROCESS, 0, 5))
report("ioprio_set self", lambda: ioprio(IOPRIO_WHO_PROCESS, 0))
print("pgrps", *(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[2] for p in (1, 2, 3)))
"""


def priorities(pid):
    """(nice, ioprio) of host pid `pid`, as the host sees them."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ioprio = libc.syscall(252, 1, pid)  # ioprio_get(IOPRIO_WHO_PROCESS, pid)
    assert ioprio >= 0, os.strerror(ctypes.get_errno())
    with open(f"/proc/{pid}/stat") as f:
        nice = int(f.read().rsplit(")", 1)[1].split()[16])  # field 19
    return nice, ioprio


@needs_sandbox
def test_user_and_group_wide_priorities_cannot_reach_the_launcher(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    host_l, host_h = host_launcher(m)
    host_init = proc_parent(host_l)
    before = {p: priorities(p) for p in (host_init, host_l, host_h)}
    out, err, code = sh(m, s, f"python3 {put_script(m, PRIORITY_PY)}")
    assert code == 0, (out, err)
    got = dict(line.rsplit(" ", 1) for line in out.splitlines() if not line.startswith("pgrps"))
    assert got == {"setpriority user 0": "EPERM", "setpriority user uid": "EPERM",
                   "setpriority pgrp 1": "EPERM", "ioprio_set user 0": "EPERM",
                   "ioprio_set user uid": "EPERM", "ioprio_set pgrp 1": "EPERM",
                   "setpriority self": "ok", "ioprio_set self": "ok"}, (out, err)
    assert out.splitlines()[-1] == "pgrps 1 1 1", out
    assert {p: priorities(p) for p in before} == before


@needs_sandbox
def test_kill_9_minus_1_takes_nothing_down(fresh_mount):
    m = fresh_mount()
    a, b = m.new_session(), m.new_session()
    assert sh(m, b, "echo warm") == ("warm\n", "", 0)
    before = host_launcher(m)
    out, err, code = sh(m, a, "kill -9 -1; echo $?; sleep 0.3; echo survived")
    assert out == "1\nsurvived\n" and "Operation not permitted" in err, (out, err, code)
    assert host_launcher(m) == before
    assert sh(m, b, "echo other") == ("other\n", "", 0)
    assert "the launcher died" not in m.daemon_log()


@needs_sandbox
def test_kill_9_of_the_launcher_pid_fails_from_the_shell(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    before = host_launcher(m)
    out, err, code = sh(m, s, "kill -9 2; echo $?; kill -9 3; echo $?")
    assert out == "1\n1\n" and err.count("Operation not permitted") == 2, (out, err, code)
    assert host_launcher(m) == before


@needs_sandbox
def test_commands_cannot_reach_the_sandboxs_stderr(fresh_mount):
    """The pipe into the daemon's log is the stderr of bwrap's init and of the launcher: the
    launcher's fds are out of reach, init's cannot be taken (pidfd_open, ptrace refused), and
    the pipe itself, made by the daemon, is not the sandbox user's to open through /proc."""
    m = fresh_mount()
    s = m.new_session()
    out, err, code = sh(m, s, "python3 -c 'import os\n"
                              "for p in (\"/proc/1/fd/2\", \"/proc/2/fd/2\"):\n"
                              "  try: os.open(p, os.O_WRONLY)\n"
                              "  except OSError as e: print(p, e.errno)\n"
                              "try: os.pidfd_open(1)\n"
                              "except OSError as e: print(\"pidfd\", e.errno)'")
    assert out == "/proc/1/fd/2 13\n/proc/2/fd/2 13\npidfd 1\n", (out, err, code)


def _host_stderr_pipe(m):
    """The sandbox's stderr pipe, opened for writing from the host (as root)."""
    return os.open(f"/proc/{host_launcher(m)[0]}/fd/2", os.O_WRONLY)


@pytest.mark.skipif(os.geteuid() != 0, reason="writes into the launcher's stderr from the host")
def test_sandbox_stderr_cannot_flood_or_forge_the_log(fresh_mount):
    """Whoever reaches the pipe (a root command without isolation; the test itself here, as
    the host's root) writes 100 MB of forged daemon lines: the log grows by a bounded amount,
    every line is the sandbox's and escaped, and the drops are counted."""
    m = fresh_mount()
    s = m.new_session()
    assert sh(m, s, "echo warm") == ("warm\n", "", 0)
    start = log_size(m)
    line = b"sbxfs: the launcher died (wait status 9); restarting it \x1b[31m forged\x07\n"
    chunk = line * ((1 << 20) // len(line) + 1)
    fd = _host_stderr_pipe(m)
    t0 = time.monotonic()
    try:
        bounded(lambda: [os.write(fd, chunk) for _ in range(100)], timeout=60,
                what="writing 100 MB into the sandbox's stderr")
    finally:
        os.close(fd)
    elapsed = time.monotonic() - t0
    time.sleep(1.5)  # the drop count is reported within a second
    grown = log_size(m) - start
    text = new_log(m, start)
    assert grown < 256 * 1024, f"100 MB into the sandbox's stderr grew the log by {grown} bytes"
    forged = [x for x in text.splitlines() if "forged" in x]
    assert forged, text[:2000]
    for x in forged:
        assert x.startswith("sbxfs: sandbox: $'"), x
        assert "\x1b" not in x and "\x07" not in x, repr(x)
    assert not [x for x in text.splitlines() if x.startswith("sbxfs: the launcher died")], \
        text[:2000]
    assert re.search(r"^sbxfs: \d+ lines of the sandbox's stderr dropped", text, re.M), \
        text[-2000:]
    assert elapsed < 30, f"the daemon took {elapsed:.1f} s to drain 100 MB"
    assert m.alive()
    assert sh(m, s, "echo still") == ("still\n", "", 0)


def _wait_sessions_work(m, s, timeout):
    def works():
        try:
            out, _, code = sh(m, s, "echo back", timeout=15)
        except Exception:
            return False
        return out == "back\n" and code == 0
    return wait_until(works, timeout, "sessions to work again", interval=0.2,
                      show=m.daemon_log)


def _cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@needs_bwrap
def test_chmod_000_workspace_then_launcher_death_recovers(fresh_mount):
    m = fresh_mount()
    s = m.new_session()
    assert sh(m, s, "chmod 000 /workspace; echo $?") == ("0\n", "", 0)
    assert os.stat(m.ws).st_mode & 0o777 == 0
    start = log_size(m)
    launcher, _ = host_launcher(m)
    os.kill(launcher, signal.SIGKILL)
    t0 = time.monotonic()
    # until the daemon has seen it, the old shell may still answer
    wait_until(lambda: "the launcher died" in new_log(m, start), 10, "the launcher's death")
    _wait_sessions_work(m, s, 15)
    assert time.monotonic() - t0 < 10, "the sandbox took more than 10 s to come back"
    assert os.stat(m.ws).st_mode & 0o700 == 0o700
    text = new_log(m, start)
    assert len(text.splitlines()) < 20, text
    assert text.count("the launcher died") == 1, text
    assert "gave the sandbox's user rwx" in text, text
    write_bytes(s / "stdin", "fed\n")
    assert sh(m, s, "cat") == ("fed\n", "", 0)
    assert "sandbox down" not in read_bytes(m.mnt / "limits").decode()


@needs_bwrap
@pytest.mark.sbx_timeout(90)
def test_unrepairable_workspace_backs_off_and_says_so(fresh_mount):
    """An immutable root with mode 000 cannot be repaired: restarts back off (a few a second at
    first, then one every 5 s), the log and the limits file say why, and once the root can be
    repaired the next restart brings the sandbox back."""
    m = fresh_mount()
    s = m.new_session()
    assert sh(m, s, "chmod 000 /workspace; echo $?") == ("0\n", "", 0)
    if subprocess.run(["chattr", "+i", str(m.ws)], capture_output=True).returncode != 0:
        os.chmod(m.ws, 0o755)
        pytest.skip("chattr +i is not supported on the test's filesystem")
    try:
        start = log_size(m)
        launcher, _ = host_launcher(m)
        os.kill(launcher, signal.SIGKILL)
        time.sleep(2)  # the fast retries of the streak
        ticks = _cpu_ticks(m.proc.pid)
        time.sleep(4)
        cpu = (_cpu_ticks(m.proc.pid) - ticks) / os.sysconf("SC_CLK_TCK") / 4
        limits = read_bytes(m.mnt / "limits").decode()
        text = new_log(m, start)
        assert cpu < 0.15, f"the daemon used {cpu:.0%} of a CPU while the sandbox failed\n{text}"
        assert len(text.splitlines()) < 40, text
        assert text.count("the launcher died") == 1, text
        assert re.search(r"^sandbox down workspace root has mode 0000 .*cannot be repaired",
                         limits, re.M), limits
        assert "cannot be repaired" in text, text
    finally:
        subprocess.run(["chattr", "-i", str(m.ws)], check=True)
    _wait_sessions_work(m, s, 20)
    assert os.stat(m.ws).st_mode & 0o700 == 0o700
    assert "sandbox down" not in read_bytes(m.mnt / "limits").decode()
    assert "the launcher is up again" in m.daemon_log()


def test_launcher_killed_from_the_host_comes_back_at_once(fresh_mount):
    """A launcher that ran stably and died is restarted without delay, with one log line."""
    m = fresh_mount()
    s = m.new_session()
    assert sh(m, s, "echo warm") == ("warm\n", "", 0)
    start = log_size(m)
    os.kill(host_launcher(m)[0], signal.SIGKILL)
    t0 = time.monotonic()
    wait_until(lambda: "the launcher died" in new_log(m, start), 10, "the launcher's death")
    _wait_sessions_work(m, s, 10)
    assert time.monotonic() - t0 < 5
    text = new_log(m, start)
    assert text.count("the launcher died") == 1 and "up again" not in text, text
    assert len(text.splitlines()) < 5, text


def test_stdin_pipes_through_the_holder(sbx):
    """Each command's stdin pipe is kept open by the launcher's holder, which a shell opens by
    its /proc path: staged bytes, a streaming writer and EOF all still work."""
    s = sbx.new_session()
    write_bytes(s / "stdin", "one\ntwo\n")
    assert sh(sbx, s, "cat; echo end") == ("one\ntwo\nend\n", "", 0)
    assert sh(sbx, s, "cat; echo nothing") == ("nothing\n", "", 0)
    fd = os.open(s / "stdin", os.O_WRONLY)
    try:
        sbx.submit(s, "read a; read b; echo \"$b $a\"")
        os.write(fd, b"x\n")
        os.write(fd, b"y\n")
    finally:
        os.close(fd)
    assert sbx.read(s, "stdout") == b"y x\n"
