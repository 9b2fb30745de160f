"""The bwrap sandbox under attack: every test is one attack from inside (or against) the
sandbox, with the outcome it must have.

The sandbox (isolation = bwrap, the default): commands run as the unprivileged `sbxfs` user in
bubblewrap (user/pid/ipc/uts/cgroup/net namespaces, read-only /usr and /etc, private /proc,
/dev, /tmp and /dev/shm, the workspace at /workspace), under a seccomp filter and cgroup limits,
and a watchdog cleans up if the daemon is SIGKILLed.  None of that exists with
`--isolation none`, so the whole module is skipped then.

Every blocking call is bounded (sbxutil.bounded and friends); waits are on markers or polled
with a deadline.  Scripts that run inside the sandbox are written into the workspace from the
host and run as `python3 /workspace/NAME` (Debian's python3 is /usr/bin/python3 inside too).
"""

import errno
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from sbxutil import (status, ConfMount, SbxMount, bounded, descendants, errname, errno_of, is_mounted,
                    isolation_none, kill_quietly, pid_alive, proc_comm, proc_parent,
                    procs_matching, read_bytes, sleep_tag, uniq, wait_until, write_errno, started,
                    stopped_cleanly, sh, put_script, limits, ctl_ok, cgroup_tree_pids)

if isolation_none():
    pytest.skip("these tests attack the bwrap sandbox; SBXFS_EXTRA_ARGS says --isolation none",
                allow_module_level=True)

CG_ROOT = "/sys/fs/cgroup"

# The syscall probes use x86_64 numbers and machine code.
x86_64_only = pytest.mark.skipif(platform.machine() != "x86_64",
                                 reason="syscall numbers and machine code of x86_64")

# The limits of the `tight` mount.
TIGHT_PIDS = 200
# session_pids_max = max: the bomb test fills the sandbox's own limit, not a session's
# (test_containment.py covers those).
TIGHT_CONFIG = f"""[sandbox]
pids_max = {TIGHT_PIDS}
session_pids_max = max
memory_max = 256M
tmp_size = 64M
shm_size = 16M
"""


# --- helpers -----------------------------------------------------------------------------------


def _start_conf(config_text, prefix):
    m = ConfMount(tempfile.mkdtemp(prefix=prefix), config_text)
    return started(m)


@pytest.fixture
def conf_mount():
    """Factory of private mounts with their own config file: conf_mount(text)."""
    mounts = []

    def make(text):
        m = _start_conf(text, "sbxfs-it-iso-")
        mounts.append(m)
        return m

    yield make
    for m in mounts:
        m.discard()


@pytest.fixture(scope="module")
def tight_mount():
    m = _start_conf(TIGHT_CONFIG, "sbxfs-it-tight-")
    try:
        yield m
    finally:
        stopped_cleanly(m, "tight sbxfs")


@pytest.fixture
def tight(tight_mount):
    tight_mount.check_alive("before this test; it died during an earlier test")
    yield tight_mount
    tight_mount.check_alive("during this test")


def sandbox_cgroups(daemon_pid):
    """Every directory named sbxfs-<daemon_pid> under any controller of /sys/fs/cgroup."""
    name = f"sbxfs-{daemon_pid}"
    found = []
    for top in sorted(os.listdir(CG_ROOT)):
        for dirpath, dirnames, _ in os.walk(os.path.join(CG_ROOT, top)):
            if name in dirnames:
                found.append(os.path.join(dirpath, name))
                dirnames.remove(name)
    return found


def cgroup_pids(dirs):
    """Pids in cgroup.procs of the given cgroups and all groups below them."""
    return set().union(*(cgroup_tree_pids(d) for d in dirs))


def sandbox_uid_gid(m, s):
    out, err, code = sh(m, s, "id -u; id -g")
    assert code == 0, err
    uid, gid = (int(x) for x in out.split())
    return uid, gid


class HostServer:
    """A TCP server on the host's 127.0.0.1 that sends `secret` to whoever connects."""

    def __init__(self):
        self.secret = uniq("host-secret").encode()
        self.accepted = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            try:
                conn.sendall(self.secret + b"\n")
            except OSError:
                pass
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def host_server():
    srv = HostServer()
    yield srv
    srv.close()


CONNECT_PY = r"""
import json, socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
s = socket.socket()
s.settimeout(5)
try:
    s.connect((host, port))
    data = s.recv(200).decode(errors="replace")
    res = {"ok": True, "data": data}
except OSError as e:
    res = {"ok": False, "errno": e.errno, "error": str(e)}
res["seconds"] = time.monotonic() - t0
print(json.dumps(res))
"""


# --- the file system view ----------------------------------------------------------------------


def test_host_directories_are_invisible(sbx):
    s = sbx.new_session()
    daemon = sbx.proc.pid
    hidden = ["/root", "/var", "/sys", "/mnt", "/opt", "/srv", "/boot",
              "/var/lib/sbxfs", str(sbx.state), str(sbx.state / "spool"), str(sbx.tmp),
              str(sbx.ws), str(sbx.mnt), f"/run/sbxfs-{daemon}", "/sys/fs/cgroup",
              "/dev/vda", "/dev/sda", "/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/fuse",
              "/dev/port"]
    script = "".join(f"if ls -d {p!r} >/dev/null 2>&1; then echo VISIBLE {p!r}; fi\n"
                     for p in hidden)
    out, err, code = sh(sbx, s, script + "echo checked")
    assert out == "checked\n", f"host paths visible inside the sandbox:\n{out}{err}"
    # ls of them fails with ENOENT, like for a path that does not exist
    out, err, code = sh(sbx, s, f"ls /root {sbx.state}")
    assert code != 0 and out == ""
    for p in ("/root", str(sbx.state)):
        assert f"cannot access '{p}': No such file or directory" in err, err
    # /home is the sandbox's own: its user's home and nothing of the host's
    out, err, code = sh(sbx, s, "ls -A /home")
    assert (code, out) == (0, "sbxfs\n"), (out, err)
    # the root holds only what the sandbox mounts
    out, _, code = sh(sbx, s, "ls -A /")
    assert code == 0
    allowed = {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc", "run",
               "sbin", "tmp", "usr", "workspace"}
    assert set(out.split()) <= allowed, f"unexpected entries in the sandbox's /: {out.split()}"
    # /run holds only the launcher; no host sockets (dbus, ...) and no staging dir
    out, _, _ = sh(sbx, s, "find /run -mindepth 1 | sort")
    assert out.split() == ["/run/sbxfs", "/run/sbxfs/launcher"], out


def test_etc_shadow_is_unreadable(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "id -u; cat /etc/shadow")
    assert out.strip() != "0", "commands run as root"
    assert code == 1 and "cat: /etc/shadow: Permission denied" in err, (out, err, code)
    out, err, code = sh(sbx, s, "head -c 20 /etc/shadow /etc/gshadow 2>&1 | grep -c root")
    assert out.strip() == "0", f"shadow contents readable: {out!r}"


READONLY_PY = r"""
import errno, json, os, sys
res = {}
for d in sys.argv[1:]:
    path = os.path.join(d, "sbxfs-ro-probe")
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
        os.unlink(path)
        res[d] = 0
    except OSError as e:
        res[d] = e.errno
print(json.dumps(res))
"""


def test_system_directories_are_read_only(sbx):
    s = sbx.new_session()
    dirs = ["/usr", "/usr/bin", "/usr/lib", "/etc", "/", "/run", "/run/sbxfs", "/bin"]
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, READONLY_PY)} {' '.join(dirs)}")
    assert code == 0, err
    res = json.loads(out)
    wrong = {d: errname(e) for d, e in res.items() if e != errno.EROFS}
    assert not wrong, f"create in these dirs did not fail with EROFS: {wrong}"
    out, err, code = sh(sbx, s, "touch /usr/x /etc/x /x; mkdir /newdir; rm -f /usr/bin/env; "
                                "ln -s x /usr/lnk; echo done")
    for what in ("'/usr/x'", "'/etc/x'", "'/x'"):
        assert f"touch: cannot touch {what}: Read-only file system" in err, err
    lines = err.splitlines()
    assert len(lines) == 6 and all(line.endswith(": Read-only file system") for line in lines), \
        f"touch, mkdir, rm and ln did not all fail with EROFS:\n{err}"
    assert [line.split(":")[0] for line in lines] == ["touch"] * 3 + ["mkdir", "rm", "ln"], err
    assert out == "done\n"
    assert os.path.exists("/usr/bin/env"), "the sandbox removed the host's /usr/bin/env"
    assert not os.path.exists("/usr/x") and not os.path.lexists("/usr/lnk")
    # the workspace and /tmp stay writable
    out, err, code = sh(sbx, s, "touch /workspace/w /tmp/t && echo writable")
    assert (out, code) == ("writable\n", 0), err


def test_ps_shows_only_sandbox_processes(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "ps -eo pid=,user=,comm=,args=")
    assert code == 0, err
    rows = [line.split(None, 3) for line in out.splitlines()]
    assert len(rows) <= 30, f"{len(rows)} processes visible:\n{out}"
    comms = {r[2] for r in rows}
    assert comms <= {"bwrap", "launcher", "bash", "ps", "sleep"}, out
    assert rows[0][0] == "1" and rows[0][2] == "bwrap", f"pid 1 is not bwrap:\n{out}"
    for r in rows:
        assert r[1] != "root", f"a root process is visible: {r}"
        args = r[3] if len(r) > 3 else ""
        for leak in ("pytest", "sbxfs -f", str(sbx.mnt), "sbxfs-launcher", "systemd"):
            assert leak not in args, f"host process visible: {r}"
    # and /proc has nothing of the host either: the pids of this test and of the daemon are
    # absent, or (numbers are per namespace) some sandbox process's
    out, _, _ = sh(sbx, s, "".join(f"[ -e /proc/{p} ] && tr '\\0' ' ' < /proc/{p}/cmdline; "
                                   for p in (os.getpid(), sbx.proc.pid)) + "echo; cat /proc/1/comm")
    assert out.splitlines()[-1] == "bwrap", out
    assert "pytest" not in out and "sbxfs -f" not in out, out


def test_kill_all_from_inside_spares_host_processes(fresh_mount):
    m = fresh_mount()
    a, b = m.new_session(), m.new_session()
    uid, gid = sandbox_uid_gid(m, a)
    assert sh(m, b, "echo warm") == ("warm\n", "", 0)
    tag_root, tag_user = sleep_tag(), sleep_tag()
    root_canary = subprocess.Popen(["sleep", tag_root], start_new_session=True)
    user_canary = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "sleep", tag_user],
        start_new_session=True)
    try:
        wait_until(lambda: procs_matching(f"sleep {tag_user}") and pid_alive(root_canary.pid),
                   10, "the host canaries to start")
        # kill -1 is refused (it would reach the launcher); every pid the sandbox shows,
        # one by one, is what it can do instead: the launcher and its holder refuse too
        out, err, code = sh(m, a, "kill -9 -1; echo $?; for p in $(ls /proc | grep -E '^[0-9]+$'); "
                                  "do [ $p != $$ ] && kill -9 $p 2>/dev/null; done; echo done")
        assert (out, code) == ("1\ndone\n", 0), (out, err, code)
        assert "Operation not permitted" in err, err
        time.sleep(1)  # a late kill would land now
        assert pid_alive(root_canary.pid), "kill -9 -1 in the sandbox killed a host root process"
        assert procs_matching(f"sleep {tag_user}"), \
            f"kill -9 -1 in the sandbox killed a host process of the sandbox uid {uid}"
        assert m.alive()
        assert sh(m, a, "echo next") == ("next\n", "", 0)
        assert sh(m, b, "echo other") == ("other\n", "", 0)
    finally:
        kill_quietly([root_canary.pid, user_canary.pid])
        kill_quietly(procs_matching(f"sleep {tag_user}"))
        root_canary.wait(5)
        user_canary.wait(5)


# --- network -----------------------------------------------------------------------------------


def test_no_route_out(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "ip -o route; ip -o -6 route; echo ---; ip -o link")
    routes, links = out.split("---\n")
    assert "default" not in routes and routes.strip() == "", f"routes: {routes!r}"
    assert [line.split()[1] for line in links.splitlines()] == ["lo:"], links
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, CONNECT_PY)} 1.1.1.1 80")
    res = json.loads(out)
    assert not res["ok"], f"connected to 1.1.1.1: {res}"
    assert res["errno"] == errno.ENETUNREACH and res["seconds"] < 2, res
    out, err, code = sh(sbx, s, "timeout 5 bash -c 'echo > /dev/tcp/1.1.1.1/53'; echo rc=$?")
    assert out == "rc=1\n" and "Network is unreachable" in err, (out, err)


def test_host_loopback_services_are_unreachable(sbx, host_server):
    s = sbx.new_session()
    port = host_server.port
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, CONNECT_PY)} 127.0.0.1 {port}")
    res = json.loads(out)
    assert not res["ok"] and res["errno"] == errno.ECONNREFUSED, res
    out, err, code = sh(sbx, s, f"timeout 5 cat < /dev/tcp/127.0.0.1/{port}; echo rc=$?")
    assert host_server.secret.decode() not in out
    assert out.endswith("rc=1\n") and "Connection refused" in err, (out, err)
    assert host_server.accepted == 0, "the host server accepted a connection from the sandbox"


ABSTRACT_PY = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + sys.argv[1])
    print("connected")
except OSError as e:
    print(e.errno)
"""


def connect_abstract(m, s):
    """Listens on a host abstract unix socket; what the sandbox's connect() to it says."""
    name = uniq("sbxfs-abstract")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0" + name)
    srv.listen(4)
    try:
        out, err, code = sh(m, s, f"python3 {put_script(m, ABSTRACT_PY)} {name}")
        assert code == 0, err
        return out.strip()
    finally:
        srv.close()


def test_host_abstract_unix_sockets_are_unreachable(sbx):
    s = sbx.new_session()
    assert connect_abstract(sbx, s) == str(errno.ECONNREFUSED)


def test_network_host_reaches_host_loopback(conf_mount, host_server):
    m = conf_mount("[sandbox]\nnetwork = host\n")
    s = m.new_session()
    out, err, code = sh(m, s, f"python3 {put_script(m, CONNECT_PY)} 127.0.0.1 "
                              f"{host_server.port}")
    res = json.loads(out)
    assert res["ok"] and res["data"].strip() == host_server.secret.decode(), (res, err)
    out, err, code = sh(m, s, f"timeout 5 cat < /dev/tcp/127.0.0.1/{host_server.port}")
    assert (out.strip(), code) == (host_server.secret.decode(), 0), err
    # the host's network namespace has its abstract unix sockets too
    assert connect_abstract(m, s) == "connected"
    # still a sandbox otherwise
    out, _, _ = sh(m, s, "id -u; ls -d /root 2>&1")
    assert out.split("\n")[0] != "0" and "No such file or directory" in out


# --- resource limits ---------------------------------------------------------------------------


def test_fork_bomb_stays_at_pids_max(tight):
    m = tight
    bomb, other = m.new_session(), m.new_session()
    assert sh(m, other, "echo warm") == ("warm\n", "", 0)
    assert int(limits(m)["pids_max"]) == TIGHT_PIDS
    tag = sleep_tag()
    try:
        ctl_ok(bomb, "timeout 5000")
        # `wait` keeps the command running (on the sleep) while the bomb spreads, so the
        # timeout ends it and everything it started
        m.submit(bomb, f"sleep {tag} & :(){{ :|:& }};:; wait")
        wait_until(lambda: int(limits(m)["pids_current"]) >= TIGHT_PIDS * 0.9, 10,
                   "the fork bomb to fill the pids limit", show=lambda: limits(m))
        end = time.monotonic() + 2
        peak = 0
        while time.monotonic() < end:
            peak = max(peak, int(limits(m)["pids_current"]))
            assert sh(m, other, "echo alive", timeout=10) == ("alive\n", "", 0), \
                "another session stopped answering a builtin during the fork bomb"
            assert "sessions" in bounded(os.listdir, m.mnt, timeout=5, what="ls of the mount")
            bounded(os.listdir, m.workspace, timeout=5, what="ls of the workspace")
        assert peak <= TIGHT_PIDS, f"pids_current {peak} above pids_max {TIGHT_PIDS}"
        assert m.exit_status(bomb, timeout=30) == 124
        assert status(bomb)["timed_out"] == "yes"
        wait_until(lambda: int(limits(m)["pids_current"]) < 20, 15,
                   "the fork bomb's processes to be gone after the timeout",
                   show=lambda: limits(m))
        assert sh(m, bomb, "/bin/echo next") == ("next\n", "", 0)
        assert sh(m, other, "ls / >/dev/null && echo forked") == ("forked\n", "", 0)
    finally:
        kill_quietly(procs_matching(f"sleep {tag}"))


def test_memory_hog_is_oom_killed_alone(tight):
    m = tight
    hog, other = m.new_session(), m.new_session()
    assert sh(m, other, "echo warm") == ("warm\n", "", 0)
    assert sh(m, hog, "echo warm") == ("warm\n", "", 0)
    lim = limits(m)
    mem_max = int(lim["memory_max"])
    assert mem_max == 256 << 20, lim
    oom_before = int(lim["oom_kills"])
    other_shell = status(other)["shell_pid"]
    size = 2 * mem_max
    out, err, code = sh(m, hog, "python3 -c 'b = bytearray(%d)\n"
                                "for i in range(0, len(b), 4096): b[i] = 1\n"
                                "print(\"survived\")'" % size, timeout=60)
    assert "survived" not in out, "a process touched 2x memory_max and survived"
    assert code == 137, (out, err, code)
    assert "Killed" in err, err
    # the shell of the hog's session and the other session are untouched
    assert status(hog)["restarts"] == "0", status(hog)
    assert sh(m, hog, "echo next; /bin/true && echo forked") == ("next\nforked\n", "", 0)
    assert status(other)["shell_pid"] == other_shell
    assert sh(m, other, "echo other") == ("other\n", "", 0)
    assert m.alive()
    lim = limits(m)
    assert int(lim["memory_current"]) < mem_max
    assert int(lim["oom_kills"]) > oom_before, \
        f"limits says oom_kills {lim['oom_kills']} (was {oom_before}) after an OOM kill"


@pytest.mark.parametrize("where,size", [("/tmp", 64 << 20), ("/dev/shm", 16 << 20)])
def test_filling_tmpfs_gives_enospc(tight, where, size):
    m = tight
    s = m.new_session()
    out, err, code = sh(m, s, f"df -B1 --output=size {where} | tail -1; "
                              f"head -c 2G /dev/zero > {where}/big; echo rc=$?; "
                              f"stat -c %s {where}/big; rm -f {where}/big; "
                              f"echo alive", timeout=60)
    lines = out.split()
    assert int(lines[0]) == size, f"{where} is {lines[0]} bytes, not {size}"
    assert "No space left on device" in err, err
    assert lines[1] == "rc=1" and int(lines[2]) <= size and lines[3] == "alive", out
    assert code == 0
    assert status(s)["restarts"] == "0"
    assert sh(m, s, "echo next") == ("next\n", "", 0)


# --- the seccomp filter ------------------------------------------------------------------------


def test_unshare_and_mount_commands_fail(sbx):
    s = sbx.new_session()
    for cmd in ("unshare -U true", "unshare -m true", "unshare -r true", "unshare -n true",
                "unshare -p -f true"):
        out, err, code = sh(sbx, s, cmd)
        assert code != 0 and "Operation not permitted" in err, (cmd, out, err, code)
    # mount(8) refuses a non-root caller itself ("must be superuser"); the syscall is below
    out, err, code = sh(sbx, s, "mount -t tmpfs x /tmp; echo rc=$?; "
                                "grep -c ' /tmp ' /proc/self/mounts")
    assert out.split() == ["rc=32", "1"], (out, err)
    out, err, code = sh(sbx, s, "python3 -c 'import ctypes, os\n"
                                "libc = ctypes.CDLL(None, use_errno=True)\n"
                                "r = libc.mount(b\"x\", b\"/tmp\", b\"tmpfs\", 0, None)\n"
                                "print(r, os.strerror(ctypes.get_errno()))'")
    assert out == "-1 Operation not permitted\n", (out, err)


SYSCALLS_PY = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NEWNS, NEWUSER, NEWPID, NEWNET, NEWCGROUP = 0x20000, 0x10000000, 0x20000000, 0x40000000, 0x02000000
SIGCHLD = 17
# (name, x86_64 number, args): args chosen so that without the filter most calls would not
# fail with EPERM (EFAULT, EBADF, EINVAL or success instead).
CALLS = [
    ("clone3", 435, (0, 0)),
    ("bpf", 321, (0, 0, 0)),
    ("keyctl", 250, (0, 2**64 - 3, 1)),           # KEYCTL_GET_KEYRING_ID of the session keyring
    ("add_key", 248, (0, 0, 0, 0, 0)),
    ("request_key", 249, (0, 0, 0, 0)),
    ("io_uring_setup", 425, (1, 0)),
    ("io_uring_enter", 426, (0, 0, 0, 0, 0, 0)),
    ("io_uring_register", 427, (0, 0, 0, 0)),
    ("userfaultfd", 323, (1,)),                    # UFFD_USER_MODE_ONLY
    ("perf_event_open", 298, (0, 0, 2**64 - 1, 2**64 - 1, 0)),
    ("chroot", 161, (0,)),
    ("pivot_root", 155, (0, 0)),
    ("setns", 308, (2**64 - 1, 0)),
    ("open_by_handle_at", 304, (2**64 - 1, 0, 0)),
    ("fsopen", 430, (0, 0)),
    ("fsmount", 432, (2**64 - 1, 0, 0)),
    ("fspick", 433, (2**64 - 1, 0, 0)),
    ("move_mount", 429, (2**64 - 1, 0, 2**64 - 1, 0, 0)),
    ("open_tree", 428, (2**64 - 100, 0, 0)),
    ("mount_setattr", 442, (2**64 - 1, 0, 0, 0, 0)),
    ("mount", 165, (0, 0, 0, 0, 0)),
    ("umount2", 166, (0, 0)),
    ("init_module", 175, (0, 0, 0)),
    ("finit_module", 313, (2**64 - 1, 0, 0)),
    ("delete_module", 176, (0, 0)),
    ("kexec_load", 246, (0, 0, 0, 0)),
    ("kexec_file_load", 320, (2**64 - 1, 2**64 - 1, 0, 0, 0)),
    ("swapon", 167, (0, 0)),
    ("acct", 163, (0,)),
    ("unshare(NEWUSER)", 272, (NEWUSER,)),
    ("unshare(NEWNS)", 272, (NEWNS,)),
    ("unshare(NEWNET)", 272, (NEWNET,)),
    ("unshare(NEWCGROUP)", 272, (NEWCGROUP,)),
    ("clone(NEWUSER)", 56, (NEWUSER | SIGCHLD, 0, 0, 0, 0)),
    ("clone(NEWPID)", 56, (NEWPID | SIGCHLD, 0, 0, 0, 0)),
    ("clone(NEWNS)", 56, (NEWNS | SIGCHLD, 0, 0, 0, 0)),
]
res = {}
for name, nr, args in CALLS:
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
    if r == 0 and name.startswith("clone"):
        os._exit(0)  # we are the child of a clone that went through
    if r > 0 and name.startswith("clone"):
        os.waitpid(r, 0)
    res[name] = "ok" if r >= 0 else ctypes.get_errno()
print(json.dumps(res))
"""

EXPECTED_ERRNO = {name: errno.EPERM for name in (
    "bpf", "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "userfaultfd", "perf_event_open", "chroot", "pivot_root", "setns",
    "open_by_handle_at", "fsopen", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr", "mount", "umount2", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "swapon", "acct", "unshare(NEWUSER)", "unshare(NEWNS)",
    "unshare(NEWNET)", "unshare(NEWCGROUP)", "clone(NEWUSER)", "clone(NEWPID)",
    "clone(NEWNS)")}
EXPECTED_ERRNO["clone3"] = errno.ENOSYS


@x86_64_only
def test_seccomp_refuses_dangerous_syscalls(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, SYSCALLS_PY)}")
    assert code == 0, err
    res = json.loads(out)
    wrong = {name: (res[name] if res[name] == "ok" else errname(res[name]), errname(want))
             for name, want in EXPECTED_ERRNO.items() if res[name] != want}
    assert not wrong, f"syscalls not refused as expected (got, wanted): {wrong}"
    # and ordinary process creation still works (clone without namespace flags)
    assert sh(sbx, s, "(/bin/true) && echo ok") == ("ok\n", "", 0)


# i386 keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1) through int 0x80, and the
# x32 keyctl: another syscall ABI must not get around a filter written for x86_64.
COMPAT_PY = r"""
import ctypes, mmap, sys
if sys.argv[1] == "i386":
    # push rbx; mov eax, 288; mov ebx, 0; mov ecx, -3; mov edx, 1; int 0x80; pop rbx; ret
    code = (bytes([0x53, 0xB8]) + (288).to_bytes(4, "little")
            + bytes([0xBB, 0, 0, 0, 0, 0xB9]) + (0xFFFFFFFD).to_bytes(4, "little")
            + bytes([0xBA, 1, 0, 0, 0, 0xCD, 0x80, 0x5B, 0xC3]))
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
    print("RESULT", fn(), flush=True)
else:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(0x40000000 | 250), ctypes.c_long(0), ctypes.c_long(-3),
                     ctypes.c_long(1))
    print("RESULT", r, ctypes.get_errno(), flush=True)
"""


@x86_64_only
@pytest.mark.parametrize("abi", ["i386", "x32"])
def test_other_syscall_abis_do_not_bypass_the_filter(sbx, abi):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, COMPAT_PY)} {abi}")
    if "RESULT" in out:
        result = int(out.split()[1])
        assert result < 0, \
            f"{abi} keyctl went through the filter: {out!r}"
    else:
        # killed (SIGSYS 159: the filter's bad-arch action, or SIGSEGV without that ABI)
        assert code in (128 + 31, 128 + 11), (out, err, code)


TIOC_PY = r"""
import fcntl, os, pty, sys, termios
TIOCLINUX = 0x541C
os.setsid()                              # so that the pty can become our controlling tty
m, s = pty.openpty()
fcntl.ioctl(s, termios.TIOCSCTTY, 0)
for name, req, arg in (("TIOCSTI", termios.TIOCSTI, b"x"), ("TIOCLINUX", TIOCLINUX, b"\x00")):
    try:
        fcntl.ioctl(s, req, arg)
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
"""


def test_tiocsti_and_tioclinux_are_refused(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "python3 -c \"import fcntl,termios,os,pty; m,s=pty.openpty(); "
                                "fcntl.ioctl(s, termios.TIOCSTI, b'x')\"")
    assert code == 1 and "PermissionError: [Errno 1] Operation not permitted" in err, (out, err)
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, TIOC_PY)}")
    assert out.split("\n")[:2] == [f"TIOCSTI {errno.EPERM}", f"TIOCLINUX {errno.EPERM}"], \
        (out, err)


# socket() and socketpair() of each family: the four the sandbox needs work (netlink with a
# protocol any user may open), every other one is refused with EAFNOSUPPORT before the kernel
# looks at it (vsock ignores network namespaces: a connect to CID 2 reached this VM's host).
SOCKETS_PY = r"""
import json, socket
AF = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_UNSPEC": 0,
      "AF_KEY": 15, "AF_PACKET": 17, "AF_BLUETOOTH": 31, "AF_ALG": 38, "AF_VSOCK": 40,
      "AF_XDP": 44, "AF_MCTP": 45, "AF_APPLETALK": 5, "AF_TIPC": 30, "AF_RDS": 21,
      "AF_CAN": 29, "AF_PPPOX": 24}
res = {}
for name, fam in AF.items():
    typ = socket.SOCK_DGRAM if fam == 16 else socket.SOCK_STREAM
    try:
        socket.socket(fam, typ, 0).close()
        res[name] = "ok"
    except OSError as e:
        res[name] = e.errno
    try:
        a, b = socket.socketpair(fam, socket.SOCK_STREAM)
        a.close(); b.close()
        res[name + " pair"] = "ok"
    except OSError as e:
        res[name + " pair"] = e.errno
# the upper half of the family argument is ignored by the kernel, so by the filter too
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(41, ctypes.c_long((1 << 32) | 40), 1, 0)
res["AF_VSOCK high"] = "ok" if fd >= 0 else ctypes.get_errno()
print(json.dumps(res))
"""


@x86_64_only
def test_only_local_ip_and_netlink_sockets_can_be_made(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, SOCKETS_PY)}")
    assert code == 0, err
    res = json.loads(out)
    for name in ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"):
        assert res[name] == "ok", (name, res[name])
    assert res["AF_UNIX pair"] == "ok"
    refused = {name: got for name, got in res.items()
               if not name.startswith(("AF_UNIX", "AF_INET", "AF_NETLINK"))}
    wrong = {name: got if got == "ok" else errname(got)
             for name, got in refused.items() if got != errno.EAFNOSUPPORT}
    assert not wrong, f"sockets not refused with EAFNOSUPPORT: {wrong}"


def test_commands_have_no_privileges(sbx):
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs"
                                "|Seccomp):' /proc/self/status /proc/$$/status")
    assert code == 0, err
    lines = out.splitlines()
    files = {}
    for line in lines:
        name, key, value = line.split(":", 2)
        files.setdefault(name, {})[key] = value.strip()
    assert len(files) == 2, out
    for who, got in files.items():
        assert got.get("CapEff") == "0000000000000000", got
        assert got.get("CapPrm") == "0000000000000000", got
        assert got.get("CapAmb") == "0000000000000000", got
        assert got.get("NoNewPrivs") == "1", got
        assert got.get("Seccomp") == "2", got
    assert all(v == "0000000000000000" for v in (got["CapInh"], got["CapBnd"])), got
    # seen from the host, no process of the sandbox is root or maps a uid to root
    procs = cgroup_pids(sandbox_cgroups(sbx.proc.pid))
    assert procs, "no process found in the sandbox's cgroups"
    for pid in procs:
        try:
            with open(f"/proc/{pid}/status") as f:
                uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
            outside = []
            if os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user"):
                with open(f"/proc/{pid}/uid_map") as f:
                    outside = [line.split()[1] for line in f]
        except (OSError, StopIteration):
            continue  # gone meanwhile
        assert "0" not in uids, f"sandbox process {pid} has uids {uids} on the host"
        assert "0" not in outside, f"sandbox process {pid} maps a uid to host root: {outside}"
    # setuid binaries cannot raise privileges (no_new_privs)
    out, err, code = sh(sbx, s, "su -c id root </dev/null; echo rc=$?; "
                                "mount --bind /tmp /workspace 2>&1; id -u")
    assert out.strip().splitlines()[-1] != "0" and "uid=0" not in out, out


# --- what reaches the sandbox from the host ----------------------------------------------------


def test_daemon_environment_does_not_reach_the_sandbox(sbx):
    """The daemon's environment (secrets of whoever started it) must not be readable from any
    process in the sandbox, not only the session shells: bwrap and the launcher included."""
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "for p in /proc/[0-9]*; do "
                                "if tr '\\0' '\\n' < $p/environ 2>/dev/null | "
                                "grep -q SBXFS_TEST_CANARY; then "
                                "echo \"$p $(cat $p/comm)\"; fi; done; echo checked")
    assert out.endswith("checked\n"), err
    assert sbx.canary not in out
    leaks = out.splitlines()[:-1]
    assert not leaks, ("the daemon's environment (SBXFS_TEST_CANARY) is readable in "
                       f"/proc/PID/environ of sandbox processes: {leaks}")


PROCFD_PY = r"""
import ctypes, os, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
marker = sys.argv[1].encode()
me = os.getpid()
for p in sorted(os.listdir("/proc")):
    if not p.isdigit() or int(p) == me:
        continue
    try:
        fds = os.listdir(f"/proc/{p}/fd")
    except OSError:
        continue
    for n in fds:
        path = f"/proc/{p}/fd/{n}"
        try:
            target = os.readlink(path)
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        try:  # the same file is visible at that path in the sandbox: not a host file
            seen = os.stat(target)
            if (seen.st_dev, seen.st_ino) == (st.st_dev, st.st_ino):
                continue
        except OSError:
            pass
        print("HOSTFILE", p, n, target, flush=True)
        try:
            with open(path, "rb") as f:
                print("READ", p, n, f.read(1 << 16).decode(errors="replace"), flush=True)
        except OSError as e:
            print("NOREAD", p, n, e.errno)
        try:
            pfd = os.pidfd_open(int(p))
            fd = libc.syscall(ctypes.c_long(438), ctypes.c_long(pfd), ctypes.c_long(int(n)),
                              ctypes.c_long(0))
            if fd >= 0:
                os.write(fd, marker)
                print("WROTE", p, n, target, flush=True)
        except OSError as e:
            print("NOWRITE", p, n, e.errno)
print("done")
"""


def test_host_files_are_not_reachable_through_proc_fds(sbx):
    """Every process in the sandbox may be read through /proc/PID/fd by the others (same uid),
    and grabbed with pidfd_getfd: none of them may hold a file of the host, such as the
    daemon's own stdout."""
    s = sbx.new_session()
    secret = uniq("daemon-log-secret")
    with open(sbx.stdout_log, "a") as f:
        f.write(f"{secret}\n")
    marker = uniq("written-from-sandbox")
    out, err, code = sh(sbx, s, f"python3 {put_script(sbx, PROCFD_PY)} {marker}")
    assert out.endswith("done\n"), (out, err)
    written = [p.name for p in sbx.tmp.iterdir()
               if p.is_file() and marker.encode() in p.read_bytes()]
    assert secret not in out, f"the sandbox read the daemon's stdout file:\n{out}"
    assert not written, f"the sandbox wrote into host files {written}:\n{out}"
    assert "HOSTFILE" not in out, f"sandbox processes hold host files:\n{out}"


# A sandboxed process takes the launcher's socket to the daemon (same uid: pidfd_getfd works)
# and writes what it likes on it.
LAUNCHER_SOCK_PY = r"""
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def launcher_pid():
    if len(sys.argv) > 3:
        return int(sys.argv[3])
    for p in sorted(os.listdir("/proc"), key=lambda p: int(p) if p.isdigit() else 0):
        if p.isdigit():
            try:
                if open(f"/proc/{p}/cmdline", "rb").read().startswith(b"/run/sbxfs/launcher"):
                    return int(p)
            except OSError:
                pass

lpid = launcher_pid()
try:
    pidfd = os.pidfd_open(lpid)
except OSError as e:
    print("no socket", e.errno, flush=True)
    sys.exit(3)
sock = libc.syscall(ctypes.c_long(438), ctypes.c_long(pidfd), ctypes.c_long(3), ctypes.c_long(0))
if sock < 0:
    print("no socket", ctypes.get_errno(), flush=True)
    sys.exit(3)
print("got the launcher socket", flush=True)
if sys.argv[1] == "garbage":
    os.write(sock, struct.pack("<II", 0xFFFFFFFF, 1) + b"garbage")
elif sys.argv[1] == "forge":
    # STARTED (type 3) for every plausible proc id, claiming pid = the host process group to
    # hit; then the launcher dies, and the daemon kills the "children" of the launcher.
    target = int(sys.argv[2])
    os.write(sock, b"".join(struct.pack("<IIQii", 16, 3, i, target, 0) for i in range(1, 400)))
    time.sleep(0.5)
    os.kill(lpid, 9)
    time.sleep(5)
print("sent", flush=True)
"""


def host_launcher_pid(m):
    """The launcher's pid on the host: the launcher-named descendant of the daemon whose parent
    is not one (its stdin holder is its child)."""
    def named(p):
        try:
            return open(f"/proc/{p}/cmdline", "rb").read().startswith(b"/run/sbxfs/launcher")
        except OSError:
            return False
    found = [p for p in descendants(m.proc.pid) if named(p)]
    return [p for p in found if proc_parent(p) not in found][0]


def replaced_launcher(m, old):
    """The launcher's host pid once one other than old runs, else None."""
    try:
        pid = host_launcher_pid(m)
    except IndexError:
        return None
    return pid if pid != old else None


def hijack_launcher(m, s, *args):
    """Runs LAUNCHER_SOCK_PY from a command, which cannot take the launcher's socket (it is not
    dumpable, and pidfd_open of it is refused); then as the host's root, which can, to play a
    launcher that a command took over. Returns the host run's stdout."""
    script = put_script(m, LAUNCHER_SOCK_PY)
    out, err, code = sh(m, s, f"python3 {script} {' '.join(args)}", timeout=30)
    assert (out, code) == (f"no socket {errno.EPERM}\n", 3), (out, err, code)
    res = subprocess.run([sys.executable, str(m.ws / Path(script).name), *args,
                          str(host_launcher_pid(m))], capture_output=True, timeout=30)
    assert "got the launcher socket" in res.stdout.decode(), res
    return res.stdout.decode()


def test_hijacked_launcher_cannot_make_the_daemon_kill_host_processes(fresh_mount):
    """The launcher runs inside the sandbox, so whatever it says is untrusted: a forged
    message must not make the root daemon signal a process outside the sandbox."""
    m = fresh_mount()
    s = m.new_session()
    canary = subprocess.Popen(["sleep", sleep_tag()], start_new_session=True)
    try:
        assert canary.pid > 1 and os.getpgid(canary.pid) == canary.pid
        assert os.getpgid(canary.pid) != os.getpgid(0)
        hijack_launcher(m, s, "forge", str(canary.pid))
        time.sleep(1)
        assert pid_alive(canary.pid), (
            "a command in the sandbox made the daemon SIGKILL host process group "
            f"{canary.pid} (forged STARTED pids, then killed the launcher)\n{m.daemon_log()}")
        assert sh(m, s, "echo next") == ("next\n", "", 0)
    finally:
        kill_quietly([canary.pid])
        canary.wait(5)


def test_garbage_on_the_launcher_socket_does_not_wedge_the_sandbox(fresh_mount):
    m = fresh_mount()
    attacker, victim = m.new_session(), m.new_session()
    assert sh(m, victim, "echo warm") == ("warm\n", "", 0)
    before = host_launcher_pid(m)
    hijack_launcher(m, attacker, "garbage", "-")
    # The daemon kills a launcher that says nonsense, and with it what runs (docs/limits.md):
    # a command sent before it has read the garbage would end 137. Wait for its successor.
    deadline = time.monotonic() + 15
    while replaced_launcher(m, before) is None:
        assert time.monotonic() < deadline, f"the launcher was not replaced\n{m.daemon_log()}"
        time.sleep(0.05)
    assert "malformed frame from the launcher" in m.daemon_log()
    assert m.alive()
    # a shell exit is reported by the launcher: the daemon must still hear about it
    m.submit(victim, "exit 3")
    assert m.exit_status(victim, timeout=15) == 3
    assert sh(m, victim, "echo back", timeout=15) == ("back\n", "", 0)
    new = m.new_session()
    assert sh(m, new, "echo new", timeout=15) == ("new\n", "", 0)


# --- the workspace and symlinks ----------------------------------------------------------------


def _snapshot(root):
    """Everything about a directory tree that an escaped operation could change."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames) + ([""] if dirpath == str(root) else []):
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            entry = (stat.filemode(st.st_mode), st.st_uid, st.st_gid, st.st_size,
                     st.st_mtime_ns, st.st_nlink,
                     tuple(sorted(os.listxattr(path, follow_symlinks=False))))
            if stat.S_ISREG(st.st_mode):
                entry += (Path(path).read_bytes(),)
            snap[os.path.relpath(path, root)] = entry
    return snap


def _chmod_nofollow(path, mode):
    """chmod of a symlink itself: through an O_PATH|O_NOFOLLOW fd's magic link, like glibc's
    fchmodat(AT_SYMLINK_NOFOLLOW); sends the FUSE setattr to the symlink's inode."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW)
    try:
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


def test_symlinks_planted_in_the_workspace_never_lead_the_daemon_outside(sbx):
    s = sbx.new_session()
    outside = Path(tempfile.mkdtemp(prefix="outside-", dir="/tmp"))
    W, ws = sbx.workspace, sbx.ws
    try:
        (outside / "target").write_text("OUTSIDE\n")
        (outside / "sub").mkdir()
        os.utime(outside / "target", ns=(10**18, 10**18))
        before = _snapshot(outside)
        d = uniq("iso")
        out, err, code = sh(sbx, s, f"""mkdir {d} && cd {d} &&
            ln -s {outside}/target rename_onto && ln -s {outside}/target unlink_me &&
            ln -s {outside}/newdir mkdir_over && ln -s {outside}/target attrs &&
            ln -s {outside} dirlink && ln -s / r && ln -s /etc/shadow x &&
            echo inside > file1 && mkdir moving && echo planted""")
        assert (out, code) == ("planted\n", 0), err
        # inside the sandbox the links lead to the sandbox's own files
        out, err, code = sh(sbx, s, "cat x; ls r/ | grep -c workspace; "
                                    "ln /etc/passwd hard_etc; echo rc=$?")
        assert "Permission denied" in err and out.split() == ["1", "rc=1"], (out, err)
        base, back = W / d, ws / d

        assert errno_of(os.rename, base / "file1", base / "rename_onto") == 0
        assert not (back / "rename_onto").is_symlink()
        assert (back / "rename_onto").read_text() == "inside\n"

        assert errno_of(os.unlink, base / "unlink_me") == 0
        assert not os.path.lexists(back / "unlink_me")

        assert errno_of(os.mkdir, base / "mkdir_over") == errno.EEXIST

        link_st = os.lstat(back / "attrs")
        errno_of(_chmod_nofollow, base / "attrs", 0o777)  # EOPNOTSUPP is fine
        assert errno_of(os.chown, base / "attrs", 4321, 4321, follow_symlinks=False) == 0
        assert os.lstat(back / "attrs").st_uid == 4321, "lchown did not change the link"
        assert errno_of(os.utime, base / "attrs", ns=(0, 0), follow_symlinks=False) == 0
        assert os.lstat(back / "attrs").st_mtime_ns == 0
        err = errno_of(os.setxattr, base / "attrs", "trusted.sbxfs", b"1",
                       follow_symlinks=False)
        assert err in (0, errno.EPERM, errno.EOPNOTSUPP), errname(err)
        assert errno_of(os.link, base / "attrs", base / "hard", follow_symlinks=False) == 0
        assert os.path.islink(back / "hard"), "link() of a symlink made a link to its target"
        assert os.lstat(back / "hard").st_ino == link_st.st_ino

        # An open directory keeps its inode: the sandbox moves it away and puts a symlink to
        # the outside in its place; creating through the open directory must follow the
        # directory, never the name.
        dfd = bounded(os.open, base / "moving", os.O_RDONLY | os.O_DIRECTORY)
        try:
            out, err, code = sh(sbx, s, f"cd {sbx.cmd_ws}/{d} && mv moving moved && "
                                        f"ln -s {outside} moving && echo swapped")
            assert (out, code) == ("swapped\n", 0), err

            def make_things():
                fd = os.open("created", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dfd)
                os.write(fd, b"x")
                os.close(fd)
                os.mkdir("subdir", dir_fd=dfd)
                os.symlink("/", "sl", dir_fd=dfd)
                os.mkfifo("fifo", dir_fd=dfd)
                os.rename("created", "renamed", src_dir_fd=dfd, dst_dir_fd=dfd)
                os.unlink("sl", dir_fd=dfd)

            bounded(make_things, what="creating through the open directory")
        finally:
            os.close(dfd)
        assert sorted(os.listdir(back / "moved")) == ["fifo", "renamed", "subdir"]

        after = _snapshot(outside)
        assert after == before, (
            "operations through MNT/workspace changed files outside the workspace:\n"
            + "\n".join(f"{k}: {before.get(k)} -> {after.get(k)}"
                        for k in sorted(set(before) | set(after))
                        if before.get(k) != after.get(k)))
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_session_env_never_reaches_processes_outside_the_sandbox(fresh_mount):
    """LD_PRELOAD set by a session is for its commands only: not for bwrap or the launcher,
    which the daemon starts again after the launcher was killed."""
    if not shutil.which("gcc"):
        pytest.skip("gcc is needed to build the preload library")
    m = fresh_mount()
    s = m.new_session()
    outside = Path(tempfile.mkdtemp(prefix="outside-", dir="/tmp"))
    try:
        outside.chmod(0o777)
        src = m.tmp / "evil.c"
        src.write_text('#include <fcntl.h>\n#include <unistd.h>\n'
                       '__attribute__((constructor)) static void hit(void) {\n'
                       f'  int fd = open("{outside}/preloaded", O_CREAT | O_WRONLY | O_APPEND,'
                       ' 0666);\n'
                       '  if (fd >= 0) { write(fd, "x\\n", 2); close(fd); }\n}\n')
        res = subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(m.ws / "evil.so"), str(src)],
                             capture_output=True, timeout=60)
        assert res.returncode == 0, res.stderr.decode()
        assert write_errno(s / "env", f"LD_PRELOAD={m.cmd_ws}/evil.so\n") == 0
        assert sh(m, s, "echo $LD_PRELOAD; export BASH_ENV=$LD_PRELOAD") == \
            (f"{m.cmd_ws}/evil.so\n", "", 0)
        os.kill(host_launcher_pid(m), signal.SIGKILL)
        wait_until(lambda: "the launcher died" in m.daemon_log(), 10, "the launcher's death")
        assert sh(m, s, "/bin/echo next") == ("next\n", "", 0)
        s2 = m.new_session()
        assert sh(m, s2, "echo fresh") == ("fresh\n", "", 0)
        time.sleep(0.5)
        assert not (outside / "preloaded").exists(), \
            "a library preloaded by a session ran with the host's view of the file system"
    finally:
        shutil.rmtree(outside, ignore_errors=True)


# --- the daemon's death ------------------------------------------------------------------------


def test_daemon_sigkill_leaves_nothing_behind(fresh_mount):
    m = fresh_mount()
    daemon = m.proc.pid
    fg, bg, sid = sleep_tag(), sleep_tag(), sleep_tag()
    a, b = m.new_session(), m.new_session()
    m.submit(a, f"sleep {fg}")
    assert sh(m, b, f"sleep {bg} >/dev/null 2>&1 & setsid sleep {sid} >/dev/null 2>&1 & "
                    f"echo started") == ("started\n", "", 0)
    try:
        wait_until(lambda: all(procs_matching(f"sleep {t}") for t in (fg, bg, sid)), 10,
                   "the sandbox's sleeps to start")
        cgroups = sandbox_cgroups(daemon)
        assert cgroups, f"no sbxfs-{daemon} cgroup under {CG_ROOT}"
        procs = cgroup_pids(cgroups) | set(descendants(daemon))
        for t in (fg, bg, sid):
            assert set(procs_matching(f"sleep {t}")) <= procs, \
                f"sleep {t} is neither in the sandbox's cgroups nor under the daemon"
        assert os.path.isdir(f"/run/sbxfs-{daemon}")

        m.proc.kill()
        m.proc.wait(10)

        def leftovers():
            left = [f"process {p} ({proc_comm(p)})" for p in sorted(procs) if pid_alive(p)]
            left += [f"sleep {t}" for t in (fg, bg, sid) if procs_matching(f"sleep {t}")]
            left += [f"cgroup {c}" for c in sandbox_cgroups(daemon)]
            if os.path.lexists(f"/run/sbxfs-{daemon}"):
                left.append(f"/run/sbxfs-{daemon}")
            for path in (m.workspace, m.mnt):
                if is_mounted(path):
                    left.append(f"mount {path}")
            return left

        wait_until(lambda: not leftovers(), 5, "the watchdog to clean up after SIGKILL",
                   show=lambda: "left: " + "; ".join(leftovers()))
    finally:
        for t in (fg, bg, sid):
            kill_quietly(procs_matching(f"sleep {t}"))


# --- names that look like bwrap options --------------------------------------------------------


def bwrap_argv(m, s):
    out, err, code = m.run(s, "cat /proc/1/cmdline")
    assert code == 0, err
    return out.split(b"\0")


def test_session_ids_and_commands_never_reach_bwrap_argv(sbx):
    s = sbx.new_session()
    argv = bwrap_argv(sbx, s)
    assert argv[0].endswith(b"bwrap"), argv
    for name in ("--bind x", "--bind\n/", "a\nb", "x;y", "$(id)", "a b", "x" * 65, "\t"):
        assert errno_of(os.mkdir, sbx.sessions / name) == errno.EINVAL, repr(name)
    for name in ("--bind / /x", "../x"):
        assert errno_of(os.mkdir, sbx.sessions / name) != 0, repr(name)
    assert not os.path.lexists(sbx.mnt / "x") and not os.path.lexists(sbx.tmp / "x")
    # ids that look like options are just names
    for name in ("--bind", "--ro-bind", "-", "--", "..x", "--chdir"):
        path = sbx.sessions / name
        assert errno_of(os.mkdir, path) == 0, name
        try:
            assert sh(sbx, path, "echo ok; ls /x")[0] == "ok\n"
        finally:
            bounded(os.rmdir, path)
    out, err, code = sh(sbx, s, "echo '--bind / /x' --bind / /x; ls /x")
    assert out == "--bind / /x --bind / /x\n" and code == 2, (out, err)
    assert write_errno(s / "env", "SBX_ARG=--bind / /x\n") == 0
    old_shell = status(s)["shell_pid"]
    ctl_ok(s, "restart")
    # README, limits: wait for the new shell before the next command
    wait_until(lambda: status(s)["shell_pid"] not in (old_shell, "0"), 10, "the new shell")
    out, err, code = sh(sbx, s, 'echo "$SBX_ARG"; ls /x')
    assert out == "--bind / /x\n" and code == 2, (out, err)
    after = bwrap_argv(sbx, s)
    assert after == argv, f"bwrap's argv changed:\n{argv}\n{after}"
    joined = [a.decode() for a in after]
    for i in range(len(joined) - 2):
        assert joined[i:i + 3] != ["--bind", "/", "/x"], joined


def test_cwd_writes_resolve_inside_the_sandbox(sbx):
    s = sbx.new_session()
    for path in ("/root", str(sbx.state), str(sbx.ws), "/srv", "/home/" + os.uname().nodename):
        assert write_errno(s / "cwd", f"{path}\n") == errno.ENOENT, path
    assert write_errno(s / "cwd", "../../../..\n") == 0
    assert read_bytes(s / "cwd") == b"/\n"
    out, err, code = sh(sbx, s, "pwd; ls")
    assert out.split("\n")[0] == "/" and "workspace" in out.split() and "root" not in out.split()


class EtcCopyMount(SbxMount):
    """A daemon in a mount namespace of its own whose /etc is a copy of the host's, so that the
    test can useradd and userdel "on the host" without touching this machine's files. Its mount
    is reached through /proc/PID/root, which walks that namespace's mounts."""

    def __init__(self, tmp):
        super().__init__(tmp)
        self.etc = self.tmp / "etc"
        shutil.copytree("/etc", self.etc, symlinks=True)

    def command_line(self):
        inner = " ".join(shlex.quote(a) for a in super().command_line())
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f"mount --bind {shlex.quote(str(self.etc))} /etc && exec {inner}"]

    def start(self, timeout=10):
        with open(self.stdout_log, "ab") as out, open(self.stderr_log, "ab") as err:
            self.proc = subprocess.Popen(self.command_line(), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, start_new_session=True)
        self.mnt = Path(f"/proc/{self.proc.pid}/root") / str(self.tmp / "mnt").lstrip("/")
        self.sessions = self.mnt / "sessions"
        self.workspace = self.mnt / "workspace"

        def up():
            try:
                return "workspace starting" not in (self.mnt / "limits").read_text()
            except OSError:
                return False
        wait_until(up, timeout, "the mount in its own namespace", show=self.daemon_log)
        return self

    def in_namespace(self, *argv):
        return subprocess.run(["nsenter", "-t", str(self.proc.pid), "-m", *argv],
                              capture_output=True, timeout=30)

    def end(self):
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def test_the_sandboxs_passwd_stays_when_the_host_replaces_its_own():
    """useradd and userdel rename a new /etc/passwd over the old one: a mount on the old one's
    dentry would be detached, and the sandbox would see the host's users and lose its own name."""
    if not shutil.which("useradd"):
        pytest.skip("no useradd")
    m = EtcCopyMount(tempfile.mkdtemp(prefix="sbxfs-etc-")).start()
    try:
        s = m.new_session()
        who = "whoami && cat /etc/passwd && cat /etc/group"
        before = sh(m, s, who)
        assert before[2] == 0 and before[0].startswith("sbxfs\n"), before
        user = uniq("sbxu")[:24]
        for step in (["useradd", "-M", user], ["userdel", user]):
            res = m.in_namespace(*step)
            assert res.returncode == 0, res
            assert (user in (m.etc / "passwd").read_text()) == (step[0] == "useradd")
            assert sh(m, s, who) == before, step
        # and the rest of /etc is the host's, as of the start where the host renames a new
        # file over one, live where it edits one in place
        with open(m.etc / "hostname", "a") as f:
            f.write("edited-in-place\n")
        assert "edited-in-place" in sh(m, s, "cat /etc/hostname")[0]
    finally:
        assert m.end() == 0, m.daemon_log()
        shutil.rmtree(m.tmp, ignore_errors=True)
