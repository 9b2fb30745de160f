"""sbxfs installed like a real filesystem: -o options and their precedence, mount.fuse3 (what
`mount -t fuse.sbxfs` and fstab run), daemon mode (the starting process's exit code, detaching),
`sbxfs -u` in both workspace modes; the install tree, man pages, systemd unit and deployment
recipes are checked offline at the end of this file."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import (REPO_ROOT, bounded, is_mounted, isolation_none, kill_quietly,
                     procs_matching, run_proc, sbxfs_binary, uniq, wait_until)


class Instance:
    """A daemon-mode sbxfs started by the test as a user would (no -f), in its own tmp dir."""

    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.ws, self.mnt, self.state = (self.tmp / n for n in ("ws", "mnt", "state"))
        self.ws.mkdir()
        self.mnt.mkdir()

    def isolation_opts(self):
        return ["isolation=none"] if isolation_none() else []

    def pids(self):
        """The daemon (and its launcher): processes naming this instance's mount point."""
        return procs_matching(str(self.mnt))

    def unmount(self):
        return run_proc([str(sbxfs_binary()), "-u", str(self.mnt)], timeout=30)

    def cleanup(self):
        if is_mounted(self.mnt):
            self.unmount()
        try:
            wait_until(lambda: not self.pids(), 10, "the daemon to end")
        finally:
            kill_quietly(self.pids())
            if not is_mounted(self.mnt):
                shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cmd):
        """A command in a new session: its stdout."""
        session = self.mnt / "sessions" / uniq("s")
        bounded(os.mkdir, session)
        bounded((session / "cmd").write_bytes, cmd.encode())
        return bounded((session / "stdout").read_bytes)


@pytest.fixture
def inst():
    i = Instance(tempfile.mkdtemp(prefix="sbxfs-install-"))
    yield i
    i.cleanup()


def daemon_pid(inst):
    """The daemon: of the processes naming the mount point, the one no other one started."""
    pids = inst.pids()
    parents = {}
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            parents[pid] = int(f.read().rsplit(")", 1)[1].split()[1])
    roots = [p for p in pids if parents[p] not in pids]
    assert len(roots) == 1, f"processes of the mount: {pids}"
    return roots[0]


def test_mount_fuse3_runs_sbxfs_with_source_and_options(inst):
    """`mount -t fuse.sbxfs SRC MNT -o ...` and fstab run `mount.fuse3 SRC MNT -t fuse.sbxfs
    -o ...`, which runs `sbxfs` from PATH: the real mount.fuse3 returns once the mount answers,
    config keys, fstab's own options and FUSE's pass, SOURCE is the workspace."""
    mount_fuse3 = shutil.which("mount.fuse3", path="/usr/sbin:/sbin")
    if not mount_fuse3:
        pytest.skip("mount.fuse3 is not installed (package fuse3)")
    bindir = inst.tmp / "bin"
    bindir.mkdir()
    (bindir / "sbxfs").symlink_to(sbxfs_binary())
    (inst.ws / "marker").write_text("from the source\n")
    opts = ",".join(["rw", "nosuid", "nofail", "_netdev", "x-systemd.requires=x", "defaults",
                     f"state_dir={inst.state}", "env.SBX_OPT=given", "session.lang=C",
                     *inst.isolation_opts()])
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    t0 = time.monotonic()
    res = run_proc([mount_fuse3, str(inst.ws), str(inst.mnt), "-t", "fuse.sbxfs", "-o", opts],
                   env=env, timeout=60)
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr.decode()
    # The mount answers as soon as mount.fuse3 returned: no waiting.
    assert {"sessions", "workspace"} <= set(bounded(os.listdir, inst.mnt))
    with open("/proc/self/mounts") as f:
        line = next(ln for ln in f if f" {inst.mnt} " in ln)
    assert line.split()[0] == str(inst.ws) and line.split()[2] == "fuse.sbxfs", line
    assert "nosuid" in line.split()[3]
    assert inst.run("echo $SBX_OPT $LANG; cat marker") == b"given C\nfrom the source\n"
    assert took < 30
    res = inst.unmount()
    assert res.returncode == 0, res.stderr.decode()
    assert not is_mounted(inst.mnt)
    wait_until(lambda: not inst.pids(), 10, "the daemon to end after sbxfs -u")


@pytest.mark.parametrize("mode", ["kernel", "fuse"])
def test_daemon_outlives_its_shell_and_sbxfs_u_stops_it(inst, mode):
    """Started without -f from a shell in its own session that then exits: exit code 0 with the
    mount answering, the daemon in a session of its own, in /, stdio on /dev/null; sbxfs -u
    unmounts cleanly whether workspace/ is the kernel's mount or FUSE's."""
    rcfile = inst.tmp / "rc"
    cmd = [str(sbxfs_binary()), "--workspace", str(inst.ws), "--state-dir", str(inst.state),
           "-o", ",".join([f"workspace.mount={mode}", *inst.isolation_opts()]), str(inst.mnt)]
    script = " ".join(f"'{a}'" for a in cmd) + f"; echo $? > '{rcfile}'"
    res = run_proc(["setsid", "--wait", "bash", "-c", script], timeout=60)
    assert res.returncode == 0 and rcfile.read_text() == "0\n", res.stderr.decode()
    assert "sessions" in bounded(os.listdir, inst.mnt)  # answers at once
    pid = daemon_pid(inst)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    assert int(fields[3]) == pid, "the daemon leads a session of its own"
    assert int(fields[4]) == 0, "no controlling terminal"
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
    assert inst.run("echo alive") == b"alive\n"
    if mode == "kernel" and os.geteuid() == 0:
        wait_until(lambda: is_mounted(inst.mnt / "workspace"), 10, "the kernel workspace")
    log = (inst.state / "sbxfs.log").read_text()
    assert "mounted on" in log
    res = inst.unmount()
    assert res.returncode == 0, res.stderr.decode()
    assert not is_mounted(inst.mnt / "workspace") and not is_mounted(inst.mnt)
    wait_until(lambda: not inst.pids(), 10, "the daemon to end after sbxfs -u")


def start(inst, *args, timeout=60):
    return run_proc([str(sbxfs_binary()), *args], timeout=timeout)


def test_bad_option_or_mount_point_fails_with_the_reason(inst):
    """A bad -o, an unknown key, a bad value, a mount point that cannot be made: exit status
    non-zero, the reason on stderr naming what was wrong, nothing left mounted or running."""
    base = ["--workspace", str(inst.ws), "--state-dir", str(inst.state)]
    cases = [
        (["-o", "frobnicate"], "frobnicate"),
        (["-o", "no_such_key=1"], "no_such_key"),
        (["-o", "memory_max=lots"], "memory_max"),
        (["-o", "session.network=host"], "network"),
        (["-o", "ro"], "ro"),
        (["--network", "bridge"], "network"),
    ]
    for extra, needle in cases:
        res = start(inst, *base, *extra, str(inst.mnt))
        assert res.returncode != 0 and needle in res.stderr.decode(), (extra, res)
    (inst.tmp / "file").write_text("")
    res = start(inst, *base, str(inst.tmp / "file" / "mnt"))
    assert res.returncode != 0 and "file/mnt" in res.stderr.decode(), res
    assert not is_mounted(inst.mnt) and not inst.pids()


def test_failure_after_the_fork_reaches_the_starting_process(inst):
    """The daemon fails once detached (its sandbox cannot start: a launcher that exits at
    once): the starting process prints why and exits non-zero, with nothing left mounted."""
    res = start(inst, "--workspace", str(inst.ws), "--state-dir", str(inst.state), "-o",
                ",".join(["launcher=/bin/false", *inst.isolation_opts()]), str(inst.mnt))
    assert res.returncode != 0, res
    assert "launcher" in res.stderr.decode(), res.stderr.decode()
    assert not is_mounted(inst.mnt)


def test_precedence_file_then_o_then_flags(inst):
    """The ini file < -o < dedicated flags: [env] from the file overridden by -o env.NAME,
    the workspace from -o overridden by --workspace, and -o config=PATH as -c."""
    other_ws = inst.tmp / "other"
    other_ws.mkdir()
    (inst.ws / "which").write_text("flag\n")
    (other_ws / "which").write_text("option\n")
    ini = inst.tmp / "sbxfs.ini"
    ini.write_text(f"[sbxfs]\nworkspace = {other_ws}\n[env]\nA = file\nB = file\n")
    res = start(inst, "--state-dir", str(inst.state), "-o",
                ",".join([f"config={ini}", "env.B=option", f"workspace={other_ws}",
                          *inst.isolation_opts()]),
                "--workspace", str(inst.ws), str(inst.mnt))
    assert res.returncode == 0, res.stderr.decode()
    assert inst.run("echo $A $B; cat which") == b"file option\nflag\n"


def test_syslog_option_leaves_the_state_log_alone(inst):
    """-o syslog: the daemon logs to syslog, not to STATE/sbxfs.log."""
    res = start(inst, "--workspace", str(inst.ws), "--state-dir", str(inst.state), "-o",
                ",".join(["syslog", *inst.isolation_opts()]), str(inst.mnt))
    assert res.returncode == 0, res.stderr.decode()
    assert inst.run("echo ok") == b"ok\n"
    assert not (inst.state / "sbxfs.log").exists()
