"""workspace/ on trees far larger than the daemon's descriptor limit.

The daemon runs with a hard limit of 1024 open files it cannot raise (started through prlimit,
without CAP_SYS_RESOURCE), so the workspace gets 512 of them ([workspace] max_fds = 0: half),
while the kernel holds an inode for each of 100,000 files. Every walk through workspace/ must
give exactly what a walk of the backing directory gives, and the sandbox must keep working.
Twice: reopening closed files by handle (root), and by name from their directory (without
CAP_DAC_READ_SEARCH, as a daemon that is not root). And once with the kernel-mounted workspace
(mount = kernel, root), where no walk costs the daemon anything, under the same limit.
"""

import errno
import os
import subprocess
import tempfile
import time

import pytest

from sbxutil import ConfMount, stopped_cleanly

LIMIT = 1024
# heavy: 100,000 files and a 30,000-file archive in each of three modes take minutes; the
# FUSE workspace's paths they walk have shorter tests (coherence, differential), so the
# ASan pass leaves them to the main pass.
pytestmark = [pytest.mark.sbx_timeout(600), pytest.mark.host_side, pytest.mark.heavy]


class LimitedMount(ConfMount):
    """A FUSE-workspace mount whose daemon has RLIMIT_NOFILE LIMIT for good, and lacks the
    capabilities in drop besides."""

    def __init__(self, tmp, config_text, drop):
        super().__init__(tmp, config_text)
        self.drop = drop

    def command_line(self):
        caps = ",".join(f"-{c}" for c in ("sys_resource", *self.drop))
        return ["setpriv", f"--bounding-set={caps}", "prlimit",
                f"--nofile={LIMIT}:{LIMIT}", *super().command_line()]


@pytest.fixture(scope="module", params=["kernel", "by-handle", "by-name"])
def lm(request):
    drop = ("dac_read_search",) if request.param == "by-name" else ()
    mode = "kernel" if request.param == "kernel" else "fuse"
    if mode == "kernel" and os.geteuid() != 0:
        pytest.skip("a kernel-mounted workspace needs root")
    m = LimitedMount(tempfile.mkdtemp(prefix="sbxfs-scale-", dir="/var/tmp"),
                     f"[workspace]\nmount = {mode}\n", drop)
    try:
        m.start()
        assert m.kernel_workspace() == (mode == "kernel")
        yield m
    finally:
        stopped_cleanly(m)


def daemon_fds(m):
    return len(os.listdir(f"/proc/{m.proc.pid}/fd"))


def nofile_limit(m):
    with open(f"/proc/{m.proc.pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3]), int(line.split()[4])
    raise AssertionError("no open files limit")


def sh(cmd, cwd):
    """stdout of a shell command run on the host in cwd."""
    res = subprocess.run(cmd, shell=True, cwd=cwd, capture_output=True, timeout=300)
    assert res.returncode == 0, (cmd, res.stderr)
    return res.stdout


def timed(cmd, cwd):
    t = time.monotonic()
    out = sh(cmd, cwd)
    return out, time.monotonic() - t


def walks_agree(m, top, report):
    """find -size, du -a and ls -lR of top through workspace/ and in the backing dir agree."""
    for cmd in (f"find {top} -size -1k | sort", f"du -a {top} | sort -k2",
                f"ls -lRgo --time-style=+%s {top}"):
        theirs = sh(cmd, m.ws)
        ours, seconds = timed(cmd, m.workspace)
        assert ours == theirs, f"{cmd}: workspace/ differs from the backing directory"
        report.append(f"{cmd.split('|')[0].strip()}: {seconds:.2f} s")
        assert daemon_fds(m) <= LIMIT


def test_the_daemon_cannot_raise_its_limit(lm):
    assert nofile_limit(lm) == (LIMIT, LIMIT)
    with open(f"/proc/{lm.proc.pid}/status") as f:
        caps = int(next(ln for ln in f if ln.startswith("CapEff:")).split()[1], 16)
    assert not caps & (1 << 24)  # CAP_SYS_RESOURCE
    assert bool(caps & (1 << 2)) == (not lm.drop)  # CAP_DAC_READ_SEARCH


def test_walk_100k_files_made_by_a_command(lm):
    s = lm.new_session()
    out, err, code = lm.run(s, "mkdir big && (cd big && for a in $(seq 0 99); do mkdir $a; "
                               "for b in $(seq 0 9); do mkdir $a/$b; (cd $a/$b && "
                               "touch $(seq 1 100) && seq 1 400 > big); done; done)",
                            timeout=300)
    assert code == 0, err
    report = []
    walks_agree(lm, "big", report)
    # Warm: the kernel's inodes stay while their fds come and go.
    walks_agree(lm, "big", report)
    print("\n100,000 files, 1,000 directories, hard limit 1024:", "; ".join(report))
    assert "out of file descriptors" not in lm.daemon_log()
    assert ("no reopening by file handle" in lm.daemon_log()) == bool(lm.drop)
    # The sandbox still works, and so do new sessions.
    assert lm.run(s, "ls big | wc -l; cat big/7/3/big | wc -l") == (b"100\n400\n", b"", 0)
    s2 = lm.new_session()
    assert lm.run(s2, "echo fresh") == (b"fresh\n", b"", 0)


def test_a_closed_fd_is_never_reopened_through_a_symlink(lm, tmp_path):
    """The sandbox swaps a directory whose fd the budget closed for a symlink to a host
    directory: an inode the kernel still holds below it is reopened as the same file (by
    handle) or fails with ESTALE (by name), never through the link."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret").write_text("host only\n")
    (host / "0").mkdir()
    p = os.open(lm.workspace / "big" / "3" / "0", os.O_PATH | os.O_DIRECTORY)
    try:
        sh("find big > /dev/null", lm.workspace)  # every other fd goes before these
        s = lm.new_session()
        assert lm.run(s, f"mv big/3 big/3x && ln -s {host} big/3 && "
                         "touch big/3x/0/newfile")[2] == 0
        for name in ("secret", "0"):
            with pytest.raises(OSError) as exc:
                os.stat(name, dir_fd=p)
            assert exc.value.errno in (errno.ENOENT, errno.ESTALE)
        try:
            st = os.stat("newfile", dir_fd=p)
        except OSError as e:
            assert e.errno == errno.ESTALE and lm.drop, e
        else:
            assert not lm.drop
            assert st.st_ino == os.stat(lm.ws / "big" / "3x" / "0" / "newfile").st_ino
    finally:
        os.close(p)
    assert (lm.workspace / "big" / "3x" / "0" / "newfile").exists()


def test_changes_by_a_command_after_the_walk(lm):
    """Inodes whose fds the budget closed are still right after the sandbox moves things."""
    s = lm.new_session()
    assert lm.run(s, "mkdir -p moved && mv big/5 moved/5 && rm -r big/6 && "
                     "echo new > big/7/3/1")[2] == 0
    assert not os.path.exists(lm.workspace / "big" / "5")
    assert not os.path.exists(lm.workspace / "big" / "6" / "0" / "1")
    assert (lm.workspace / "big" / "7" / "3" / "1").read_text() == "new\n"
    assert sorted(os.listdir(lm.workspace / "moved" / "5" / "9"))[:3] == ["1", "10", "100"]
    report = []
    walks_agree(lm, "moved", report)


def test_host_extracts_a_30k_file_archive(lm, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    sh("for a in $(seq 0 29); do mkdir $a; for b in $(seq 0 9); do mkdir $a/$b; "
       "(cd $a/$b && touch $(seq 1 99) && echo $a.$b > data); done; done", src)
    archive = tmp_path / "a.tar"
    sh(f"tar -cf {archive} .", src)
    (lm.workspace / "x").mkdir()
    _, seconds = timed(f"tar -xf {archive}", lm.workspace / "x")
    print(f"\ntar -x of 30,000 files into workspace/ under a limit of 1024: {seconds:.2f} s")
    assert sh("find . | sort", lm.ws / "x") == sh("find . | sort", src)
    assert (lm.ws / "x" / "17" / "4" / "data").read_text() == "17.4\n"
    s = lm.new_session()
    assert lm.run(s, "find x -type f | wc -l") == (b"30000\n", b"", 0)
    assert daemon_fds(lm) <= LIMIT
