"""A fleet (sbxfs-fleet, src/fleet, fs/fleet): ls lists the sandboxes, mkdir ID and reading
clone make one, rmdir ID destroys it; each is a whole sbxfs mount at ID/fs with a daemon of its
own. A command right after the mkdir finds its sandbox up; a daemon killed is started again with
what outlives it, the others untouched; a supervisor killed and started again finds every
sandbox, and leaves no daemon of the one before; the bound is ENOSPC with the reason in the
fleet's status; two sandboxes see nothing of each other."""

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from sbxutil import (SbxMount, bounded, is_mounted, isolation_none, mountpoints, parse_status,
                     read_bytes, sbxfs_binary, wait_until, write_bytes)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or isolation_none(),
                                reason="a fleet's sandboxes are root's mounts, isolated")

N = 50


class Fleet:
    def __init__(self, tmp, *args, binary=None):
        self.binary = binary or sbxfs_binary().parent / "sbxfs-fleet"
        self.tmp = Path(tmp)
        self.mnt = self.tmp / "mnt"
        self.state = self.tmp / "state"
        self.args = list(args)
        self.log = self.tmp / "fleet.log"
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.binary), "--state-dir", str(self.state),
                 *self.args, str(self.mnt)], stdout=log, stderr=log)
        wait_until(self.answers, 20, "the fleet's mount", show=self.text_log)

    def answers(self):
        assert self.proc.poll() is None, self.text_log()
        try:
            return (self.mnt / "status").read_bytes().startswith(b"sandboxes ")
        except OSError:  # not mounted yet, or the mount of a supervisor that died
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)

    def daemons(self):
        """The pids of sbxfs daemons of this fleet's sandboxes."""
        out = subprocess.run(["pgrep", "-f", "--", f"--state-dir {self.state}/sandboxes/"],
                             capture_output=True, text=True).stdout
        return sorted(int(p) for p in out.split())

    def ids(self):
        return sorted(p.name for p in self.mnt.iterdir() if p.is_dir())

    def sh(self, id, cmd, timeout=30):
        s = self.mnt / id / "fs" / "sessions" / "default"
        write_bytes(s / "cmd", cmd + "\n", timeout=timeout)
        out = read_bytes(s / "stdout", timeout=timeout).decode()
        code = read_bytes(s / "exit", timeout=timeout)
        assert code == b"0\n", (id, cmd, code, read_bytes(s / "stderr"))
        return out

    def status(self, id=None):
        return parse_status(read_bytes(self.mnt / id / "status" if id else self.mnt / "status"))

    def text_log(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def show(self, id):
        """What a failed wait shows: the fleet's log, the sandbox's status and its daemon's."""
        log = self.state / "sandboxes" / id / "state" / "sbxfs.log"
        return (f"{self.text_log()}\nstatus of {id}: {self.status(id)}\n{id}'s log:\n" +
                (log.read_text(errors="replace")[-6000:] if log.exists() else "(none)"))


def running(pid):
    """Whether pid is a process that has not ended (its parent, init, may not have reaped it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


@contextmanager
def fleet(*args, binary=None):
    f = Fleet(tempfile.mkdtemp(prefix="sbxfs-it-fleet-"), *args, binary=binary)
    try:
        f.start()
        yield f
    finally:
        stuck = False
        try:
            f.stop()
        except subprocess.TimeoutExpired:  # killed, so that its daemons are not left to others
            stuck = True
            f.proc.kill()
            f.proc.wait()
        left = f.daemons()
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        if is_mounted(f.mnt):
            subprocess.run(["umount", "-l", str(f.mnt)], capture_output=True)
        log = f.text_log()  # before the files go: a failure below shows it
        subprocess.run(["rm", "-rf", "--one-file-system", str(f.tmp)], capture_output=True)
        assert not stuck, f"the supervisor did not stop within 60 s of SIGTERM\n{log}"
        assert not left, f"daemons left after the supervisor stopped: {left}\n{log}"


@pytest.mark.heavy  # a scale test: the shorter ones take its paths in every pass
def test_fifty_sandboxes_each_its_own_daemon_and_uid():
    with fleet("--max", "64") as f:
        ids = [f"b{i:02d}" for i in range(N)]
        for id in ids:
            bounded(os.mkdir, f.mnt / id, what=f"mkdir {id}")
        assert f.ids() == ids
        # a command right after the mkdir finds the sandbox up
        uids = {id: f.sh(id, f"id -u; echo {id} > /workspace/mine; ls /workspace") for id in ids}
        for id, out in uids.items():
            assert out.split()[1:] == ["mine"], out  # nothing of another's
        assert len({out.split()[0] for out in uids.values()}) == N  # an uid each
        assert len(f.daemons()) >= N
        st = f.status()
        assert st["sandboxes"] == str(N) and st["running"] == str(N), st
        # their processes are their own: another's are neither seen nor signalled
        pid = f.sh("b00", "sleep 1000 & echo $!").strip()
        assert f.sh("b01", f"kill -0 {pid} 2>&1 || echo no such process").strip() != ""
        assert "sleep 1000" not in f.sh("b01", "ps -eo args")
        # one daemon killed: the other 49 answer at once, and it comes back
        victim = f.status("b00")["pid"]
        os.kill(int(victim), signal.SIGKILL)
        for id in ids[1:]:
            assert f.sh(id, "cat /workspace/mine") == f"{id}\n"
        wait_until(lambda: f.status("b00")["state"] == "running" and
                   f.status("b00")["pid"] != victim, 20, "b00 started again",
                   show=lambda: f.show("b00"))
        assert f.sh("b00", "cat /workspace/mine") == "b00\n"


def test_a_killed_daemon_is_started_again_and_the_others_keep_working():
    with fleet() as f:
        for id in ("k1", "k2", "k3"):
            os.mkdir(f.mnt / id)
            f.sh(id, f"export MINE={id}; mkdir -p /workspace/d && cd /workspace/d")
        time.sleep(0.3)  # what outlives a daemon is saved within 100 ms
        victim = f.status("k2")
        os.kill(int(victim["pid"]), signal.SIGKILL)
        for id in ("k1", "k3"):
            assert f.sh(id, 'echo "$MINE $PWD"') == f"{id} /workspace/d\n"
        wait_until(lambda: f.status("k2")["state"] == "running" and
                   f.status("k2")["pid"] != victim["pid"], 20, "k2 restarted",
                   show=lambda: f.show("k2"))
        assert f.status("k2")["restarts"] == "1"
        assert f.sh("k2", 'echo "$MINE $PWD"') == "k2 /workspace/d\n"


def test_a_supervisor_killed_then_started_again_finds_every_sandbox():
    with fleet() as f:
        for id in ("r1", "r2"):
            os.mkdir(f.mnt / id)
            f.sh(id, f"export MINE={id}; echo kept > /workspace/f")
        time.sleep(0.3)
        old = f.daemons()
        f.proc.kill()
        f.proc.wait(timeout=10)
        f.start()
        assert f.ids() == ["r1", "r2"]
        for id in ("r1", "r2"):
            assert f.sh(id, 'echo "$MINE $(cat /workspace/f)"') == f"{id} kept\n"
        assert not set(old) & set(f.daemons()), "a daemon of the supervisor before is left"
        assert "a supervisor before left" in f.text_log()


def test_rmdir_destroys_and_clone_makes_one_ready():
    with fleet() as f:
        id = read_bytes(f.mnt / "clone").decode().strip()
        assert f.sh(id, "echo ready") == "ready\n"  # up once clone's read returned
        pid = int(f.status(id)["pid"])
        f.sh(id, "export GONE=1")
        time.sleep(0.3)
        bounded(os.rmdir, f.mnt / id, timeout=30, what=f"rmdir {id}")
        assert id not in f.ids()
        assert not (f.state / "sandboxes" / id).exists()
        assert not running(pid)
        assert not is_mounted(f.mnt / id / "fs")
        # the same id again is a new sandbox: nothing of the old one
        os.mkdir(f.mnt / id)
        assert f.sh(id, 'echo "${GONE:-none}"') == "none\n"


def test_the_bound_is_enospc_with_the_reason_and_names_are_checked():
    with fleet("--max", "2") as f:
        os.mkdir(f.mnt / "one")
        os.mkdir(f.mnt / "two")
        with pytest.raises(OSError) as e:
            os.mkdir(f.mnt / "three")
        assert e.value.errno == errno.ENOSPC
        with pytest.raises(OSError) as e:
            read_bytes(f.mnt / "clone")
        assert e.value.errno == errno.ENOSPC
        assert "max is 2" in f.status()["refused"], f.status()
        assert f.ids() == ["one", "two"]
        for bad, err in ((".hidden", errno.EINVAL), ("a b", errno.EINVAL), ("x" * 65, errno.EINVAL),
                         ("one", errno.EEXIST)):
            with pytest.raises(OSError) as e:
                os.mkdir(f.mnt / bad)
            assert e.value.errno in (err, errno.ENAMETOOLONG), (bad, e.value)
        with pytest.raises(OSError) as e:
            os.mkdir(f.mnt / "one" / "sub")
        assert e.value.errno == errno.EPERM
        # the fleet's names are the supervisor's: anything but mkdir and rmdir is refused
        for call in (lambda: open(f.mnt / "new", "w"), lambda: os.unlink(f.mnt / "status"),
                     lambda: os.rename(f.mnt / "one", f.mnt / "uno"),
                     lambda: os.symlink("/etc", f.mnt / "link"),
                     lambda: os.chmod(f.mnt / "status", 0o666),
                     lambda: open(f.mnt / "one" / "status", "w")):
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno in (errno.EPERM, errno.EACCES), e.value


def test_a_daemon_that_cannot_be_run_fails_its_sandbox_with_why(tmp_path):
    """The fleet runs the sbxfs next to it: one that exec refuses fails the sandbox at once, with
    exec's word in its status, and the fleet goes on."""
    shutil.copy2(sbxfs_binary().parent / "sbxfs-fleet", tmp_path / "sbxfs-fleet")
    (tmp_path / "sbxfs").write_bytes(b"\x7fELF not a program")
    (tmp_path / "sbxfs").chmod(0o755)
    with fleet(binary=tmp_path / "sbxfs-fleet") as f:
        os.mkdir(f.mnt / "broken")
        # a use of it waits for its start, which fails
        with pytest.raises(OSError) as e:
            bounded(os.listdir, f.mnt / "broken" / "fs", what="ls broken/fs")
        assert e.value.errno == errno.EIO, e.value
        st = f.status("broken")
        assert st["state"] == "failed", st
        assert st["reason"].endswith(f"{tmp_path}/sbxfs: ENOEXEC"), st
        assert f.status()["failed"] == "1", f.status()


def test_mkdirs_at_once_all_come_up():
    with fleet() as f:
        ids = [f"p{i}" for i in range(20)]
        errs = []

        def make(id):
            try:
                os.mkdir(f.mnt / id)
                assert f.sh(id, "echo ok") == "ok\n"
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append((id, e))
        threads = [threading.Thread(target=make, args=(id,)) for id in ids]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errs, errs
        assert f.ids() == sorted(ids)


def sleepy(tmp_path, after=1):
    ini = tmp_path / "sandbox.ini"
    ini.write_text(f"[sandbox]\nsleep_after = {after}\n")
    return ini


def mounted_at(path):
    """Whether something is mounted at path, from the mount table alone: a path walk into a
    sleeping sandbox's fs/ would wake it."""
    return str(path) in mountpoints()


def asleep(f, id):
    return f.status(id)["state"] == "sleeping"


def test_an_idle_sandbox_sleeps_and_a_use_wakes_it_with_what_it_kept(tmp_path):
    with fleet("--sandbox-config", str(sleepy(tmp_path))) as f:
        os.mkdir(f.mnt / "z1")
        f.sh("z1", "export MINE=kept; cd /workspace && echo file > f")
        pid = int(f.status("z1")["pid"])
        wait_until(lambda: asleep(f, "z1"), 15, "z1 asleep", show=f.text_log)
        st = f.status("z1")
        assert st["pid"] == "0" and st["restarts"] == "0", st
        assert not running(pid)
        assert not mounted_at(f.mnt / "z1" / "fs")
        assert f.status()["sleeping"] == "1"
        # the first use waits for the wake, and finds what a daemon's restart keeps
        assert read_bytes(f.mnt / "z1" / "fs" / "workspace" / "f") == b"file\n"
        assert f.status("z1")["state"] == "running"
        assert f.sh("z1", 'echo "$MINE $PWD"') == "kept /workspace\n"
        assert f.status("z1")["restarts"] == "0"
        status = parse_status(read_bytes(f.mnt / "z1" / "fs" / "sessions" / "default" / "status"))
        assert status["restored"] != "no", status


def test_what_runs_or_is_open_keeps_a_sandbox_awake(tmp_path):
    with fleet("--sandbox-config", str(sleepy(tmp_path))) as f:
        os.mkdir(f.mnt / "w1")
        f.sh("w1", "sleep 2.5 >/dev/null 2>&1 &")
        time.sleep(2)
        assert f.status("w1")["state"] == "running"  # a process left behind runs
        wait_until(lambda: asleep(f, "w1"), 15, "w1 asleep once the process ended")
        # a file held open (as tail -f would) keeps it awake; once closed, it sleeps
        with open(f.mnt / "w1" / "fs" / "sessions" / "default" / "stdout", "rb"):
            time.sleep(2.5)
            assert f.status("w1")["state"] == "running"
        wait_until(lambda: asleep(f, "w1"), 15, "w1 asleep once the file was closed")


def test_keep_alive_keeps_it_awake_and_is_checked(tmp_path):
    with fleet("--sandbox-config", str(sleepy(tmp_path))) as f:
        os.mkdir(f.mnt / "a1")
        keep = f.mnt / "a1" / "keep_alive"
        assert read_bytes(keep) == b"no\n"
        write_bytes(keep, "yes\n")
        assert read_bytes(keep) == b"yes\n"
        time.sleep(2.5)
        assert f.status("a1")["state"] == "running"
        for bad in ("maybe\n", "yes yes", "yes\nno\n", "1"):
            with pytest.raises(OSError) as e:
                with open(keep, "wb", buffering=0) as w:
                    w.write(bad.encode())
            assert e.value.errno == errno.EINVAL, bad
        assert read_bytes(keep) == b"yes\n"
        write_bytes(keep, "no")
        wait_until(lambda: asleep(f, "a1"), 15, "a1 asleep once keep_alive was no")
        assert read_bytes(keep) == b"no\n"  # reading it wakes nothing
        assert asleep(f, "a1")


def test_a_sleeping_sandbox_stays_asleep_across_a_supervisor_restart(tmp_path):
    with fleet("--sandbox-config", str(sleepy(tmp_path))) as f:
        os.mkdir(f.mnt / "q1")
        f.sh("q1", "export MINE=q")
        wait_until(lambda: asleep(f, "q1"), 15, "q1 asleep")
        f.stop()
        f.start()
        assert asleep(f, "q1")
        assert f.daemons() == []
        assert f.sh("q1", 'echo "$MINE"') == "q\n"
        # rmdir of a sleeping sandbox removes it without a daemon to stop
        wait_until(lambda: asleep(f, "q1"), 15, "q1 asleep again")
        bounded(os.rmdir, f.mnt / "q1", timeout=30, what="rmdir q1")
        assert f.ids() == []


class InFleet(SbxMount):
    """A sandbox of a fleet, as the tests drive a mount (test_restart's checks)."""

    def __init__(self, f, id):
        super().__init__(f.tmp / f"as-mount-{id}")
        self.mnt = f.mnt / id / "fs"
        self.sessions = self.mnt / "sessions"
        self.workspace = self.mnt / "workspace"


def test_a_reboot_of_the_whole_fleet_keeps_what_outlives_a_daemon(tmp_path):
    from test_restart import check_state, make_state
    with fleet() as f:
        os.mkdir(f.mnt / "rb")
        m = InFleet(f, "rb")
        before = make_state(m)
        f.sh("rb", "echo kept > /workspace/file")
        bounded(os.mkdir, m.mnt / "snapshots" / "before", timeout=60, what="a snapshot")
        keep = f.mnt / "rb" / "keep_alive"
        write_bytes(keep, "yes\n")
        f.sh("rb", "sleep 1000 >/dev/null 2>&1 &")
        uid = f.sh("rb", "id -u")
        # a reboot: the supervisor and every daemon stop, then all start again
        f.stop()
        assert f.daemons() == [] and not mounted_at(f.mnt / "rb" / "fs")
        f.start()
        check_state(m, before)
        assert f.sh("rb", "cat /workspace/file; id -u; pgrep -c sleep || true") == \
            f"kept\n{uid}0\n"
        assert parse_status(read_bytes(m.mnt / "snapshots" / "before" / "status"))["state"] == \
            "ready"
        assert read_bytes(keep) == b"yes\n"


def test_two_sandboxes_reach_nothing_of_each_others_network():
    with fleet() as f:
        for id in ("n1", "n2"):
            os.mkdir(f.mnt / id)
        f.sh("n1", "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & "
                   "for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && "
                   "break; sleep 0.05; done; (exec 3<>/dev/tcp/127.0.0.1/8765) && echo up")
        out = f.sh("n2", "(exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && echo reached || "
                         "echo refused")
        assert out == "refused\n"
        assert f.sh("n1", "(exec 3<>/dev/tcp/127.0.0.1/8765) && echo reached") == "reached\n"


def refused(f, path, err=errno.ENOSPC):
    with pytest.raises(OSError) as e:
        os.mkdir(path) if path.parent == f.mnt else os.stat(path)
    assert e.value.errno == err, e.value
    return f.status()["refused"]


def test_running_and_memory_bounds_refuse_creates_and_wakes(tmp_path):
    ini = tmp_path / "sandbox.ini"
    ini.write_text("[sandbox]\nsleep_after = 1\nmemory_max = 2G\n")
    with fleet("--max-running", "1", "--memory-budget", "3G", "--sandbox-config", str(ini)) as f:
        os.mkdir(f.mnt / "one")
        f.sh("one", "export MINE=one")
        why = refused(f, f.mnt / "two")
        assert why == "two not created: 1 running, and --max-running is 1", why
        wait_until(lambda: asleep(f, "one"), 15, "one asleep")
        os.mkdir(f.mnt / "two")  # a sleeping sandbox holds nothing
        why = refused(f, f.mnt / "one" / "fs" / "sessions")  # its wake is refused
        assert why == "one not woken: 1 running, and --max-running is 1", why
        assert asleep(f, "one")
        wait_until(lambda: asleep(f, "two"), 15, "two asleep")
        assert f.sh("one", 'echo "$MINE"') == "one\n"  # now it wakes
        st = f.status()
        assert st["memory_used"] == str(2 << 30) and st["memory_budget"] == str(3 << 30), st
        ini.write_text("[sandbox]\nmemory_max = 1500M\n")  # the next sandboxes' config
    with fleet("--memory-budget", "3G", "--sandbox-config", str(ini)) as f:
        os.mkdir(f.mnt / "a")
        os.mkdir(f.mnt / "b")
        why = refused(f, f.mnt / "c")
        assert why == ("c not created: 3000 MiB of memory_max taken, 1500 MiB more is past "
                       "--memory-budget 3072 MiB"), why
        assert f.ids() == ["a", "b"]


def test_a_disk_budget_needs_and_sums_each_workspace_max(tmp_path):
    ini = tmp_path / "sandbox.ini"
    with fleet("--disk-budget", "100M", "--sandbox-config", str(ini)) as f:
        ini.write_text("")
        why = refused(f, f.mnt / "unbounded")
        assert why == ("unbounded not created: its workspace_max is max, and --disk-budget "
                       "needs one"), why
        ini.write_text("[sandbox]\nworkspace_max = 64M\n")
        os.mkdir(f.mnt / "d1")
        assert f.sh("d1", "echo ok") == "ok\n"
        why = refused(f, f.mnt / "d2")
        assert "64 MiB of workspace_max taken, 64 MiB more is past --disk-budget 100 MiB" in why
        assert f.status()["disk_used"] == str(64 << 20)
        # a config that does not load makes nothing, and says why
        ini.write_text("[sandbox]\nmemory_max = lots\n")
        why = refused(f, f.mnt / "bad", errno.EINVAL)
        assert why.startswith("bad not created: its config: ") and "memory_max" in why, why
        assert f.ids() == ["d1"]


def write_config(path, text):
    """One open, its writes and its close (where a config applies): the errno, or 0."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        return e.errno
    return 0


def test_a_sandboxs_config_file_applies_whole_with_a_restart_or_not_at_all(tmp_path):
    ini = tmp_path / "sandbox.ini"
    ini.write_text("[sandbox]\nmemory_max = 1G\n")
    with fleet("--memory-budget", "3G", "--sandbox-config", str(ini)) as f:
        os.mkdir(f.mnt / "a")
        os.mkdir(f.mnt / "b")
        cfg = f.mnt / "a" / "config"
        assert read_bytes(cfg) == ini.read_bytes()
        f.sh("a", "export MINE=kept; cd /workspace && echo x > f")
        # the close returns once the sandbox runs with it, what outlives a daemon kept
        assert write_config(cfg, "[sandbox]\nmemory_max = 2G\n") == 0
        assert f.status("a")["state"] == "running" and f.status("a")["restarts"] == "0"
        limits = read_bytes(f.mnt / "a" / "fs" / "limits").decode()
        assert f"memory_max {2 << 30}\n" in limits, limits
        assert f.sh("a", 'echo "$MINE $PWD $(cat f)"') == "kept /workspace x\n"
        assert read_bytes(cfg) == b"[sandbox]\nmemory_max = 2G\n"
        assert os.stat(cfg).st_size == len(b"[sandbox]\nmemory_max = 2G\n")
        # refused whole, the reason in the fleet's status, the config as it was
        pid = f.status("a")["pid"]
        for text, err, why in (
                ("[sandbox]\nmemory_max = lots\n", errno.EINVAL, "bad value 'lots'"),
                ("[sandbox]\nmemory_max = 3G\n", errno.ENOSPC, "past --memory-budget"),
                ("[sandbox]\nmemory_max = max\n", errno.ENOSPC, "needs one"),
                ("[nosuch]\nkey = 1\n", errno.EINVAL, "nosuch"),
                ("[sandbox]\0memory_max = 1G\n", errno.EINVAL, "a NUL byte"),
                ("x" * (65 << 10), errno.EFBIG, None)):
            assert write_config(cfg, text) == err, text[:40]
            if why:
                assert why in f.status()["refused"], (why, f.status()["refused"])
            assert read_bytes(cfg) == b"[sandbox]\nmemory_max = 2G\n"
        assert f.status("a")["pid"] == pid  # nothing refused restarted it
        # right after a mkdir it waits for the start, then starts again with it
        os.rmdir(f.mnt / "b")
        os.mkdir(f.mnt / "c")
        assert write_config(f.mnt / "c" / "config", "[sandbox]\nmemory_max = 512M\n") == 0
        assert f"memory_max {512 << 20}\n" in read_bytes(f.mnt / "c" / "fs" / "limits").decode()
        assert f.status()["memory_used"] == str((2 << 30) + (512 << 20))
