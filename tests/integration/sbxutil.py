"""Helpers shared by the sbxfs integration tests.

Everything that may block on the FUSE daemon goes through `Background`/`bounded`, which run
the blocking call in a helper thread and fail the test when it does not return in time, so a
hung daemon fails a test instead of hanging CI.  (A thread stuck inside a FUSE request cannot
be cancelled; the per-test watchdog in conftest.py kills the daemon when a test overruns, which
aborts the connection and releases every stuck syscall.)
"""

import contextlib
import errno
import hashlib
import os
import random
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# Seconds a single FUSE operation of a test may take before the test fails.
IO_TIMEOUT = 30

# Every live daemon started by the tests; the per-test watchdog aborts them on overrun.
LIVE_MOUNTS = set()
_LIVE_LOCK = threading.Lock()

# A variable put into the daemon's environment; it must never reach a session's shell.
CANARY_NAME = "SBXFS_TEST_CANARY"


def sbxfs_binary() -> Path:
    """build/sbxfs of the repository, or $SBXFS_BIN, or $SBXFS_BUILD/sbxfs."""
    if os.environ.get("SBXFS_BIN"):
        return Path(os.environ["SBXFS_BIN"]).expanduser().resolve()
    build = os.environ.get("SBXFS_BUILD")
    build_dir = Path(build).expanduser().resolve() if build else REPO_ROOT / "build"
    return build_dir / "sbxfs"


def extra_args():
    return shlex.split(os.environ.get("SBXFS_EXTRA_ARGS", ""))


def isolation_none():
    """True when the daemon under test runs commands without bwrap (--isolation none)."""
    args = extra_args()
    return "--isolation=none" in args or any(
        a == "--isolation" and b == "none" for a, b in zip(args, args[1:]))


def swaps_ids(m):
    """Whether m shows ids swapped through workspace/: the opt-in `idmap = user`, with the sandbox
    run by root as its own user. The default (`idmap = handover`) shows plain ids."""
    return (not isolation_none() and os.getuid() == 0 and
            re.search(r"(?m)^\s*idmap\s*=\s*user\s*$", m.config_text()) is not None)


def stored_owner(m, uid, gid):
    """The (uid, gid) the backing directory holds for a file whose owner shows as (uid, gid)
    through m's workspace/ (or the other way round: it is a swap). Ids are plain by default;
    with `idmap = user` the mount owner's ids and the sandbox's are swapped."""
    if not swaps_ids(m):
        return uid, gid
    sb_uid, sb_gid = m.sandbox_ids()

    def swap(x, owner, sandbox):
        return sandbox if x == owner else owner if x == sandbox else x
    return swap(uid, 0, sb_uid), swap(gid, 0, sb_gid)


def uniq(prefix="t"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def sleep_tag():
    """A unique duration like 1000.123456, so `sleep <tag>` can be found with pgrep -f."""
    return f"1000.{random.randrange(10**8, 10**9)}"


# ---------------------------------------------------------------------------------------------
# bounded blocking calls


class Background:
    """Runs fn(*args, **kwargs) in a daemon thread; collect the outcome with result()."""

    def __init__(self, fn, *args, what=None, **kwargs):
        self.what = what or getattr(fn, "__name__", repr(fn))
        self._box = {}
        self._thread = threading.Thread(
            target=self._run, args=(fn, args, kwargs), name=f"bg {self.what}", daemon=True
        )
        self._thread.start()

    def _run(self, fn, args, kwargs):
        try:
            self._box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller by result()
            self._box["error"] = exc

    def wait(self, timeout):
        """True when the call has returned (or raised) within `timeout` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def done(self):
        return not self._thread.is_alive()

    def result(self, timeout=IO_TIMEOUT):
        if not self.wait(timeout):
            pytest.fail(
                f"{self.what}: still blocked after {timeout}s (daemon hung or deadlocked?)",
                pytrace=False,
            )
        if "error" in self._box:
            raise self._box["error"]
        return self._box.get("value")


def bounded(fn, *args, timeout=IO_TIMEOUT, what=None, **kwargs):
    """fn(*args, **kwargs), failing the test if it does not return within `timeout` s."""
    return Background(fn, *args, what=what, **kwargs).result(timeout)


def _read_all(path):
    with open(path, "rb", buffering=0) as f:
        chunks = []
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def read_bytes(path, timeout=IO_TIMEOUT):
    """open + read to EOF + close, bounded."""
    return bounded(_read_all, path, timeout=timeout, what=f"reading {path}")


def read_fd_to_eof(fd, timeout=IO_TIMEOUT):
    def go():
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    return bounded(go, timeout=timeout, what=f"reading fd {fd} to EOF")


SHELL_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC  # what `echo x > file` uses


def _write_all(path, data, flags):
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def write_bytes(path, data, timeout=IO_TIMEOUT, flags=SHELL_WRITE_FLAGS):
    """open + write everything + close, bounded; raises OSError like the failing syscall."""
    if isinstance(data, str):
        data = data.encode()
    bounded(_write_all, path, data, flags, timeout=timeout, what=f"writing {path}")


def write_errno(path, data, timeout=IO_TIMEOUT, flags=SHELL_WRITE_FLAGS, at_close=False):
    """Opens `path`, does ONE write() of `data`, closes.

    Returns the errno of the write (0 on success).  Failures of open() or close() are not
    what the caller is checking, so they fail the test with a message saying which call it was;
    except that after a failed write the close fails with the same errno (a failed write
    poisons the open of a control file: nothing of it is applied, and its close says so).
    With at_close, what is applied at close answers there (a `ctl` line's ESRCH, a last line
    without its newline): after a write that succeeded, the close's errno is returned.
    """
    if isinstance(data, str):
        data = data.encode()

    def go():
        fd = os.open(path, flags, 0o644)
        try:
            n = os.write(fd, data)
            assert n == len(data), f"short write to {path}: {n} of {len(data)} bytes"
            err = 0
        except OSError as exc:
            err = exc.errno
        try:
            os.close(fd)
        except OSError as exc:
            if at_close and not err:
                return exc.errno
            if not err or exc.errno != err:
                pytest.fail(f"close() of {path} failed after the write: {exc}", pytrace=False)
        return err

    return bounded(go, timeout=timeout, what=f"write() to {path}")


def errno_of(fn, *args, timeout=IO_TIMEOUT, **kwargs):
    """errno raised by fn(*args) (bounded), or 0 if it succeeded."""

    def go():
        try:
            fn(*args, **kwargs)
        except OSError as exc:
            return exc.errno
        return 0

    return bounded(go, timeout=timeout, what=getattr(fn, "__name__", "call"))


def errname(num):
    return errno.errorcode.get(num, str(num)) if num else "success"


# ---------------------------------------------------------------------------------------------
# polling


def spool_stats(m):
    """os.stat of each spool file the daemon holds: unnamed files in its state dir's spool/, seen
    through /proc/PID/fd (open while their run is in the history; emptied ones kept for reuse)."""
    fds = f"/proc/{m.proc.pid}/fd"
    prefix = str(m.state / "spool") + "/"
    found = []
    for fd in os.listdir(fds):
        try:
            if os.readlink(f"{fds}/{fd}").startswith(prefix):
                found.append(os.stat(f"{fds}/{fd}"))
        except OSError:
            pass  # closed meanwhile
    return found


def nonempty_spools(m):
    return sum(1 for st in spool_stats(m) if st.st_size > 0)


def wait_until(fn, timeout, what, interval=0.02, show=None):
    """Polls fn() until it returns something truthy; returns that. Fails after `timeout` s,
    describing the state with show() if given, else with fn()'s last value."""
    deadline = time.monotonic() + timeout
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            state = show() if show else f"last: {last!r}"
            pytest.fail(f"timed out after {timeout}s waiting for {what} ({state})",
                        pytrace=False)
        time.sleep(interval)


def wait_file_sh(name, seconds=60):
    """Shell snippet: wait (bounded) for file `name` to exist; its status is 0 iff it does."""
    q = shlex.quote(name)
    n = int(seconds / 0.05)
    return (f"_w=0; while [ ! -e {q} ] && [ $_w -lt {n} ]; do sleep 0.05; _w=$((_w+1)); done; "
            f"[ -e {q} ]")


def read_pipe_until(pipe, needle, timeout):
    """Reads a (host) pipe until `needle` appeared; returns what was read."""
    fd = pipe.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"timed out waiting for {needle!r} on pipe (got {buf!r})", pytrace=False)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                pytest.fail(f"pipe closed before {needle!r} appeared (got {buf!r})",
                            pytrace=False)
            buf += chunk
    return buf


# ---------------------------------------------------------------------------------------------
# processes


def _proc_stat(pid):
    """(state, ppid) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rindex(b")") + 2:].split()
    return rest[0].decode(), int(rest[1])


def pid_alive(pid):
    st = _proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def alive_inside(m, session, pid):
    """Whether `pid`, a pid as the sandbox numbers it (what status files show), is a live process
    there, as a command of `session` of mount m sees it: on the host that number is another
    process's, or none."""
    out, _, _ = m.run(session, f"sed 's/.*) //' /proc/{int(pid)}/stat 2>/dev/null | cut -c1")
    return out.strip() not in (b"", b"Z", b"X")


def proc_state(pid):
    st = _proc_stat(pid)
    return st[0] if st else None


def proc_parent(pid):
    st = _proc_stat(pid)
    return st[1] if st else None


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def procs_matching(text, comm=None):
    """Live pids (other than ours) whose command line contains `text` (like pgrep -f); with
    comm, only those that run that program now (not a `bash -c` whose script holds `text`)."""
    found = []
    me = os.getpid()
    for pid in all_pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            if comm is not None:
                with open(f"/proc/{pid}/comm", "rb") as f:
                    if f.read().rstrip(b"\n").decode(errors="replace") != comm:
                        continue
        except OSError:
            continue
        if text in cmdline and pid_alive(pid):
            found.append(pid)
    return found


def descendants(root):
    """All live descendants of pid `root`."""
    children = {}
    for pid in all_pids():
        st = _proc_stat(pid)
        if st and st[0] not in ("Z", "X"):
            children.setdefault(st[1], []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_quietly(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def has_open(pid, path):
    """Whether process `pid` holds `path` open (a reader of it is then parked or about to be)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            pass
    return False


def cgroup_tree_pids(top):
    """Pids in cgroup.procs of the cgroup directory top and of every group below it."""
    pids = set()
    for dirpath, _, files in os.walk(top):
        if "cgroup.procs" in files:
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as f:
                    pids.update(int(x) for x in f.read().split())
            except OSError:
                pass
    return pids


def free_port():
    """A TCP port nothing listens on now (bound to 0 on the host, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def cat_pipe(path, release):
    """A host `cat path`, its stdout a pipe. On the way out release() ends what cat may still be
    waiting for, then cat is killed if it still runs, and reaped."""
    cat = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        yield cat
    finally:
        release()
        if cat.poll() is None:
            cat.kill()
        cat.wait(timeout=10)
        cat.stdout.close()


def assert_sigint_ends(proc, what, timeout=2):
    """Ctrl-C to proc, blocked on the mount, ends it within timeout s, by that signal."""
    os.kill(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} still blocked {timeout} s after SIGINT")
    assert proc.returncode == -signal.SIGINT


def run_proc(args, timeout=60, **kwargs):
    """subprocess.run in its own process group, the whole group killed on timeout."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, **kwargs)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=10)
        pytest.fail(f"{args!r} did not finish within {timeout}s; stdout so far {out[-500:]!r}",
                    pytrace=False)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


# ---------------------------------------------------------------------------------------------
# mounts


def mountpoints():
    """Mount points of this mount namespace, from /proc/self/mountinfo (no FUSE access)."""
    points = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            field = line.split()[4]
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field))
    return points


def mounts_on(path):
    """The mount points below path (what is mounted on a mount), deepest first."""
    top = os.path.realpath(path)
    return sorted((p for p in mountpoints() if p.startswith(top + "/")), key=len, reverse=True)


def is_mounted(path):
    return os.path.realpath(path) in mountpoints()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class SbxMount:
    """One sbxfs daemon: <tmp>/mnt mounted from <tmp>/ws, state in <tmp>/state."""

    def __init__(self, tmp: Path):
        self.tmp = Path(tmp)
        self.mnt = self.tmp / "mnt"
        self.ws = self.tmp / "ws"
        self.state = self.tmp / "state"
        for d in (self.mnt, self.ws, self.state):
            d.mkdir(parents=True, exist_ok=True)
        # The workspace as the sandbox's commands see it.
        self.cmd_ws = os.path.realpath(self.ws) if isolation_none() else "/workspace"
        # The sandbox user's home, likewise (the state dir's home/ on the host).
        self.cmd_home = (os.path.realpath(self.state / "home") if isolation_none()
                         else "/home/sbxfs")
        self.sessions = self.mnt / "sessions"
        self.workspace = self.mnt / "workspace"
        self.proc = None
        self.canary = uniq("canary")
        self.stdout_log = self.tmp / "daemon.stdout"
        self.stderr_log = self.tmp / "daemon.stderr"

    # -- daemon lifecycle -----------------------------------------------------------------

    def command_line(self):
        return [str(sbxfs_binary()), "-f", "--workspace", str(self.ws),
                "--state-dir", str(self.state), *extra_args(), str(self.mnt)]

    def config_text(self):
        """The ini text this mount is started with ("" for none)."""
        config = getattr(self, "config", None)
        return config.read_text() if config else ""

    def kernel_workspace(self):
        """Whether workspace/ should be the kernel's mount of the backing directory: the daemon
        is root and the config does not ask for the FUSE workspace."""
        return os.geteuid() == 0 and not re.search(r"(?m)^\s*mount\s*=\s*fuse\s*$",
                                                   self.config_text())

    def start(self, timeout=10):
        binary = sbxfs_binary()
        if not os.access(binary, os.X_OK):
            pytest.fail(f"sbxfs binary not found or not executable: {binary} "
                        f"(build with `meson compile -C build`, or set SBXFS_BIN/SBXFS_BUILD)",
                        pytrace=False)
        env = dict(os.environ)
        env[CANARY_NAME] = self.canary
        with open(self.stdout_log, "ab") as out, open(self.stderr_log, "ab") as err:
            self.proc = subprocess.Popen(self.command_line(), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, env=env,
                                         start_new_session=True)
        with _LIVE_LOCK:
            LIVE_MOUNTS.add(self)
        deadline = time.monotonic() + timeout
        while not is_mounted(self.mnt):
            if self.proc.poll() is not None:
                with _LIVE_LOCK:
                    LIVE_MOUNTS.discard(self)
                pytest.fail(f"sbxfs exited with status {self.proc.returncode} before mounting; "
                            f"command {self.command_line()}\nstderr:\n{self.daemon_log()}",
                            pytrace=False)
            if time.monotonic() > deadline:
                self.abort()
                pytest.fail(f"{self.mnt} not mounted {timeout}s after starting sbxfs\n"
                            f"stderr:\n{self.daemon_log()}", pytrace=False)
            time.sleep(0.02)
        # Mounted; make sure the daemon answers before handing it to tests.
        bounded(os.listdir, self.mnt, timeout=timeout, what="first listdir of the mount")
        if self.kernel_workspace():
            wait_until(lambda: is_mounted(self.workspace), timeout,
                       f"{self.workspace} to become the kernel's mount of the workspace",
                       show=self.daemon_log)
        wait_until(lambda: self.workspace_mode() != "starting", timeout,
                   "workspace/ to be attached (limits: workspace starting)", show=self.daemon_log)
        return self

    def workspace_mode(self):
        """How workspace/ is served, from `limits`: kernel, fuse, fuse-fallback (or starting)."""
        for line in read_bytes(self.mnt / "limits", timeout=5).decode().splitlines():
            if line.startswith("workspace "):
                return line.split(" ")[1]
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def daemon_log(self, limit=6000):
        text = ""
        for path in (self.stderr_log, self.stdout_log):
            try:
                data = path.read_bytes().decode(errors="replace")
            except OSError:
                continue
            if data:
                text += f"--- {path.name} ---\n{data[-limit:]}\n"
        return text or "(daemon wrote nothing)"

    def check_alive(self, when):
        if self.proc is not None and self.proc.poll() is not None:
            pytest.fail(f"sbxfs daemon is dead ({when}); exit status {self.proc.returncode}\n"
                        f"{self.daemon_log()}", pytrace=False)

    def fusermount_unmount(self, attempts=20):
        """fusermount3 -u, retried while the mount is busy. Returns the last CompletedProcess."""
        res = None
        for _ in range(attempts):
            res = subprocess.run(["fusermount3", "-u", str(self.mnt)], capture_output=True,
                                 timeout=10)
            if res.returncode == 0 or not is_mounted(self.mnt):
                return res
            time.sleep(0.25)
        return res

    def unmount(self, attempts=20):
        """`sbxfs -u`, retried while the mount is busy. Returns the last CompletedProcess."""
        res = None
        for _ in range(attempts):
            res = subprocess.run([str(sbxfs_binary()), "-u", str(self.mnt)],
                                 capture_output=True, timeout=10)
            if res.returncode == 0 or not is_mounted(self.mnt):
                return res
            time.sleep(0.25)
        return res

    def wait_exit(self, timeout=10):
        """Waits for the daemon; returns its status or None if it is still running."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def abort(self):
        """Emergency stop: SIGKILL the daemon (aborting the FUSE connection) and detach."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(self.mnt)], capture_output=True,
                           timeout=10)
        with _LIVE_LOCK:
            LIVE_MOUNTS.discard(self)

    def stop(self):
        """Normal teardown: sbxfs -u, wait 10 s (then kill). Returns a list of problems."""
        problems = []
        if self.proc is None:
            return problems
        if self.proc.poll() is not None:
            problems.append(f"daemon had already exited with status {self.proc.returncode}")
        else:
            res = self.unmount()
            if res.returncode != 0 and is_mounted(self.mnt):
                problems.append(f"sbxfs -u failed: {res.stderr.decode(errors='replace')}")
            rc = self.wait_exit(10)
            if rc is None:
                problems.append("daemon still running 10 s after unmount; killed it")
            elif rc != 0:
                problems.append(f"daemon exited with status {rc} after unmount")
        self.abort()
        for path in (self.workspace, self.mnt):
            if is_mounted(path):
                problems.append(f"{path} still mounted after teardown")
        if problems:
            problems.append(self.daemon_log())
        return problems

    def cleanup_tmp(self):
        if is_mounted(self.mnt):
            return  # never rm -rf through a live mount
        if os.environ.get("SBXFS_KEEP_TMP"):
            return
        shutil.rmtree(self.tmp, ignore_errors=True)

    def discard(self):
        """Teardown that checks nothing: stops the daemon if it still runs, kills it if need be,
        and removes the temp dir."""
        if self.alive():
            self.stop()
        self.abort()
        self.cleanup_tmp()

    # -- sessions -------------------------------------------------------------------------

    def new_session(self, name=None):
        """mkdir a fresh session directory; returns its path."""
        path = self.sessions / (name or uniq("s"))
        bounded(os.mkdir, path, what=f"mkdir {path}")
        return path

    def submit(self, session, cmd, timeout=IO_TIMEOUT):
        """Writes `cmd` to <session>/cmd the way a shell redirection does (submitted at close)."""
        write_bytes(Path(session) / "cmd", cmd, timeout=timeout)

    def read(self, session, name, timeout=IO_TIMEOUT):
        return read_bytes(Path(session) / name, timeout=timeout)

    def exit_status(self, session, timeout=IO_TIMEOUT):
        """Blocks (bounded) for the latest command; its status as an int, None if empty."""
        data = self.read(session, "exit", timeout=timeout)
        if data == b"":
            return None
        assert re.fullmatch(rb"[0-9]+\n", data), f"malformed exit file content {data!r}"
        return int(data)

    def run(self, session, cmd, timeout=IO_TIMEOUT):
        """Submits `cmd`, then returns (stdout bytes, stderr bytes, exit status)."""
        deadline = time.monotonic() + timeout
        self.submit(session, cmd, timeout=timeout)
        out = self.read(session, "stdout", timeout=max(1.0, deadline - time.monotonic()))
        err = self.read(session, "stderr", timeout=max(1.0, deadline - time.monotonic()))
        code = self.exit_status(session, timeout=max(1.0, deadline - time.monotonic()))
        return out, err, code

    def touch(self, name):
        """Creates a marker file in the workspace (on the host side)."""
        (self.ws / name).touch()

    def wait_ws_file(self, name, timeout=20):
        wait_until(lambda: (self.ws / name).exists(), timeout, f"workspace file {name}")

    def sandbox_ids(self):
        """(uid, gid) the sandbox's commands run as on the host, from the root `limits`."""
        ids = dict(line.split(" ", 1) for line in
                   read_bytes(self.mnt / "limits", timeout=5).decode().splitlines())
        return int(ids["uid"]), int(ids["gid"])

    def read_env(self, session):
        text = self.read(session, "env").decode()
        env = {}
        for line in text.splitlines():
            assert "=" in line, f"env line without '=': {line!r} in {text!r}"
            name, value = line.split("=", 1)
            env[name] = value
        return env

    uniq = staticmethod(uniq)


def abort_all_mounts(reason):
    with _LIVE_LOCK:
        mounts = list(LIVE_MOUNTS)
    for m in mounts:
        try:
            with open(m.stderr_log, "ab") as f:
                f.write(f"\n[test harness] SIGKILL: {reason}\n".encode())
        except OSError:
            pass
        m.abort()


class ConfMount(SbxMount):
    """An SbxMount started with `-c <tmp>/sbxfs.ini`."""

    def __init__(self, tmp, config_text):
        super().__init__(tmp)
        self.config = self.tmp / "sbxfs.ini"
        self.config.write_text(config_text)

    def command_line(self):
        cmd = super().command_line()
        return [cmd[0], "-c", str(self.config), *cmd[1:]]


def parse_status(data):
    """`key value` lines -> dict (the value is the rest of the line, e.g. 'queued 2')."""
    text = data.decode()
    assert text.endswith("\n"), f"status does not end with a newline: {text!r}"
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" ")
        assert sep and key and value, f"malformed status line {line!r} in {text!r}"
        assert key not in out, f"duplicate key {key!r} in {text!r}"
        out[key] = value
    return out


def status(path):
    """The parsed `status` of a session, a runs/<n> or a background process; never blocks."""
    return parse_status(read_bytes(Path(path) / "status", timeout=5))


def sh(m, s, cmd, timeout=30):
    """Runs cmd in session s of mount m; (stdout str, stderr str, exit status)."""
    out, err, code = m.run(s, cmd, timeout=timeout)
    return out.decode(errors="replace"), err.decode(errors="replace"), code


def put_script(m, text):
    """Writes a script into the workspace (host side); returns its path inside the sandbox."""
    name = uniq("script") + ".py"
    (m.ws / name).write_text(text)
    return f"{m.cmd_ws}/{name}"


def limits(m):
    """The mount's root `limits` file as {key: value}."""
    text = read_bytes(m.mnt / "limits", timeout=5).decode()
    return dict(line.partition(" ")[::2] for line in text.splitlines())


def ctl(d, line, at_close=False):
    """One write() of `line` to d/ctl (a session, run, process or terminal directory); returns
    its errno (0 on success). With at_close, the close's errno after a write that succeeded
    (lines apply at close: a kill's ESRCH)."""
    return write_errno(Path(d) / "ctl", line, flags=os.O_WRONLY, at_close=at_close)


def ctl_ok(d, line):
    err = ctl(d, line)
    assert err == 0, f"ctl {line!r}: {errname(err)}"


def exit_of(d, timeout=30):
    """Blocks (bounded) until the process or terminal of directory d ends; its exit status."""
    data = read_bytes(Path(d) / "exit", timeout=timeout)
    assert re.fullmatch(rb"[0-9]+\n", data), f"malformed exit file content {data!r}"
    return int(data)


def started(m, timeout=10):
    """m.start(); if that fails, m is aborted and its temp dir removed before the error goes on."""
    try:
        return m.start(timeout=timeout)
    except BaseException:
        m.abort()
        m.cleanup_tmp()
        raise


def stopped_cleanly(m, what="sbxfs"):
    """Stops m, removes its temp dir, and fails on whatever went wrong in the stop."""
    problems = m.stop()
    m.cleanup_tmp()
    assert not problems, f"unclean shutdown of the {what}:\n" + "\n".join(problems)
