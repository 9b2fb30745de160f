"""POSIX conformance of workspace/: every operation's success path and its error cases.

One sbxfs mount with -o allow_other at a time, in each of four configurations (CONFIGS: the
kernel-mounted workspace; the FUSE passthrough with kernel passthrough of file data, with daemon
I/O and the page cache, and with nothing cached). The single-user tests
run twice, as root
and as an unprivileged user (alice, uid 4001, gid 4001, supplementary group 4100), each in a
fresh directory that user owns; the permission tests use root, alice and bob (uid 4002)
together. Every call goes through an Actor (posixutil.py): a helper process with that identity.
Where it matters, results are also checked on the backing directory itself.
"""

import errno
import fcntl
import os
import stat
import threading
import time

import pytest

from posixops import (FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE,
                      FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE, O_TMPFILE, RENAME_EXCHANGE,
                      RENAME_NOREPLACE)
from posixutil import Actor, start_mount
from sbxutil import stored_owner, uniq, stopped_cleanly

ALICE = dict(uid=4001, gid=4001, groups=[4100])
BOB = dict(uid=4002, gid=4002, groups=[])
GROUP_ALICE_IN, GROUP_NOBODY_IN = 4100, 4200

pytestmark = [pytest.mark.sbx_timeout(120), pytest.mark.host_side]


# Links are followed in every configuration, as POSIX has it (host_symlinks = follow; the
# default nofollow is tested in test_workspace_kernel.py and test_host_safety.py).
CONFIGS = {
    # the default as root: workspace/ is the kernel's mount of the backing directory
    "kernel": "[workspace]\nhost_symlinks = follow\n",
    # the FUSE passthrough: file data by kernel passthrough (the daemon is root), metadata cached
    "fuse": "[workspace]\nmount = fuse\nhost_symlinks = follow\n",
    # file data through the daemon and the mount's page cache
    "fuse-daemon-io": "[workspace]\nmount = fuse\npassthrough = no\nhost_symlinks = follow\n",
    # nothing cached: every lookup, stat and open asks the daemon
    "fuse-uncached":
        "[workspace]\nmount = fuse\npassthrough = no\ncache = no\nhost_symlinks = follow\n",
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def pm(request):
    m = start_mount("sbxfs-posix-", CONFIGS[request.param])
    try:
        yield m
    finally:
        stopped_cleanly(m)


@pytest.fixture(scope="module")
def actors(pm):
    made = {"root": Actor("root"), "alice": Actor("alice", **ALICE),
            "bob": Actor("bob", **BOB)}
    yield made
    for a in made.values():
        a.quit()


@pytest.fixture(autouse=True)
def _alive(pm):
    pm.check_alive("before this test")
    yield
    pm.check_alive("during this test")


class P(str):
    """A path string that joins with /."""

    def __truediv__(self, name):
        return P(os.path.join(self, name))


class Place:
    """A fresh directory of the test: through the mount (path) and in the backing dir."""

    def __init__(self, pm, owner):
        name = uniq("px")
        self.path = P(pm.workspace / name)
        self.host = str(pm.ws / name)
        os.mkdir(self.path, 0o755)
        if owner.uid is not None:
            os.chown(self.path, owner.uid, owner.gid)

    def __truediv__(self, name):
        return self.path / name

    def h(self, name):
        return os.path.join(self.host, name)


@pytest.fixture(params=["root", "alice"])
def a(request, actors):
    """The acting user of a single-user test: root, then alice."""
    return actors[request.param]


@pytest.fixture
def d(pm, a):
    return Place(pm, a)


@pytest.fixture
def shared(pm, actors):
    """A root-owned 0777 directory for the multi-user tests."""
    p = Place(pm, actors["root"])
    os.chmod(p.path, 0o777)
    return p


def tick():
    """Lets the clock move on between a change and the next (timestamps are compared)."""
    time.sleep(0.01)


# ---- lookup, stat, names -----------------------------------------------------------------


def test_stat_and_lookup_errors(a, d):
    a.write_file(d / "f", b"12345")
    st = a.stat(d / "f")
    assert stat.S_ISREG(st["st_mode"]) and st["st_size"] == 5 and st["st_nlink"] == 1
    assert (st["st_uid"], st["st_gid"]) == ((a.uid, a.gid) if a.uid else (0, 0))
    hst = os.stat(d.h("f"))
    assert (hst.st_ino, hst.st_size, hst.st_mtime_ns) == (st["st_ino"], 5, st["st_mtime_ns"])
    assert a.err("stat", d / "missing") == errno.ENOENT
    assert a.err("stat", d / "missing" / "x") == errno.ENOENT
    assert a.err("stat", d / "f" / "x") == errno.ENOTDIR
    assert a.err("mkdir", d / "f" / "x") == errno.ENOTDIR
    assert a.err("open", d / "f" + "/", os.O_RDONLY) == errno.ENOTDIR


def test_name_max_and_path_max(a, d):
    longest = "n" * 255
    a.write_file(d / longest, b"255")
    assert a.read_file(d / longest) == b"255"
    assert os.path.exists(d.h(longest))
    assert a.err("open", d / ("n" * 256), os.O_CREAT | os.O_WRONLY, 0o644) == errno.ENAMETOOLONG
    assert a.err("mkdir", d / ("m" * 256)) == errno.ENAMETOOLONG
    assert a.err("stat", d / ("n" * 256)) == errno.ENAMETOOLONG
    assert a.err("symlink", "t", d / ("s" * 256)) == errno.ENAMETOOLONG
    assert a.err("rename", d / longest, d / ("r" * 256)) == errno.ENAMETOOLONG
    # The longest path (PATH_MAX - 1 bytes) works; one byte more does not.
    comp = "p" * 200
    path = d.path
    while 4095 - len(path) - 1 > 255:
        path = os.path.join(path, "p" * min(200, 4095 - len(path) - 1 - 2))
        a.mkdir(path)
    near = os.path.join(path, "q" * (4095 - len(path) - 1))
    assert len(near) == 4095
    a.write_file(near, b"deep")
    assert a.read_file(near) == b"deep"
    assert a.err("stat", near + "xx") == errno.ENAMETOOLONG
    # Deeper than PATH_MAX through directory fds: the daemon never needs the whole path.
    assert a.make_deep(path, comp, 10, b"deeper") > 2000
    a.remove_deep(path, comp, 10)


def test_symlink_loops_and_nofollow(a, d):
    a.symlink("l2", d / "l1")
    a.symlink("l1", d / "l2")
    assert a.err("stat", d / "l1") == errno.ELOOP
    assert a.err("open", d / "l1", os.O_RDONLY) == errno.ELOOP
    assert a.err("open", d / "l1", os.O_WRONLY | os.O_CREAT, 0o644) == errno.ELOOP
    a.write_file(d / "target", b"t")
    a.symlink("target", d / "link")
    assert a.err("open", d / "link", os.O_RDONLY | os.O_NOFOLLOW) == errno.ELOOP
    assert a.read_file(d / "link") == b"t"
    assert stat.S_ISLNK(a.stat(d / "link", follow=False)["st_mode"])


# ---- attributes ----------------------------------------------------------------------------


def test_chmod(a, d):
    a.write_file(d / "f", b"")
    for mode in (0o600, 0o755, 0o4755, 0o2750, 0o1777, 0o000):
        a.chmod(d / "f", mode)
        assert stat.S_IMODE(a.stat(d / "f")["st_mode"]) == mode
        assert stat.S_IMODE(os.stat(d.h("f")).st_mode) == mode
    a.mkdir(d / "sub", 0o700)
    a.chmod(d / "sub", 0o3751)
    assert stat.S_IMODE(os.stat(d.h("sub")).st_mode) == 0o3751
    assert a.err("chmod", d / "missing", 0o600) == errno.ENOENT


def test_chown_as_root_and_as_owner(a, d):
    a.write_file(d / "f", b"")
    if a.uid is None:
        a.chown(d / "f", 1234, 5678)
        assert (os.stat(d.h("f")).st_uid, os.stat(d.h("f")).st_gid) == (1234, 5678)
        a.symlink("f", d / "l")
        a.lchown(d / "l", 42, 43)
        lst = os.lstat(d.h("l"))
        assert (lst.st_uid, lst.st_gid) == (42, 43)
        assert os.stat(d.h("f")).st_uid == 1234  # the target is untouched
    else:
        a.chown(d / "f", -1, GROUP_ALICE_IN)  # a group alice is in
        assert os.stat(d.h("f")).st_gid == GROUP_ALICE_IN
        assert a.err("chown", d / "f", -1, GROUP_NOBODY_IN) == errno.EPERM
        assert a.err("chown", d / "f", BOB["uid"], -1) == errno.EPERM
        assert os.stat(d.h("f")).st_uid == a.uid


def test_truncate(a, d):
    a.write_file(d / "t", b"0123456789")
    a.truncate(d / "t", 4)
    assert a.read_file(d / "t") == b"0123" == open(d.h("t"), "rb").read()
    a.truncate(d / "t", 8)
    assert a.read_file(d / "t") == b"0123\0\0\0\0"
    fd = a.open(d / "t", os.O_RDWR)
    try:
        a.ftruncate(fd, 2)
        assert a.fstat(fd)["st_size"] == 2
    finally:
        a.close(fd)
    assert a.stat(d / "t")["st_size"] == 2
    a.mkdir(d / "dir")
    assert a.err("truncate", d / "dir", 0) == errno.EISDIR
    assert a.err("truncate", d / "t", -1) == errno.EINVAL
    assert a.err("truncate", d / "missing", 0) == errno.ENOENT
    fd = a.open(d / "t", os.O_RDONLY)
    try:
        assert a.err("ftruncate", fd, 0) == errno.EINVAL  # not open for writing
    finally:
        a.close(fd)


def test_utimens_now_omit_and_explicit(a, d):
    a.write_file(d / "u", b"")
    at, mt = 1_500_000_000_123_456_789, 1_600_000_000_987_654_321
    a.utimens(d / "u", at, mt)
    st = a.stat(d / "u")
    assert (st["st_atime_ns"], st["st_mtime_ns"]) == (at, mt)
    h = os.stat(d.h("u"))
    assert (h.st_atime_ns, h.st_mtime_ns) == (at, mt)
    a.utimens(d / "u", "omit", 1_000_000_000)
    st = a.stat(d / "u")
    assert (st["st_atime_ns"], st["st_mtime_ns"]) == (at, 1_000_000_000)
    a.utimens(d / "u", 2_000_000_000, "omit")
    st = a.stat(d / "u")
    assert (st["st_atime_ns"], st["st_mtime_ns"]) == (2_000_000_000, 1_000_000_000)
    before = time.time_ns()
    a.utimens(d / "u", "omit", "now")
    st = a.stat(d / "u")
    assert st["st_atime_ns"] == 2_000_000_000
    assert abs(st["st_mtime_ns"] - before) < 5 * 10**9
    # A symlink's own times (lutimes), leaving the target alone.
    a.symlink("u", d / "l")
    a.utimens(d / "l", 3_000_000_000, 3_000_000_000, follow=False)
    assert os.lstat(d.h("l")).st_mtime_ns == 3_000_000_000
    assert os.stat(d.h("u")).st_mtime_ns != 3_000_000_000
    assert a.err("utimens", d / "missing", "now", "now") == errno.ENOENT


def test_timestamps_follow_each_change(a, d):
    def times(p):
        s = a.stat(p, follow=False)
        return s["st_mtime_ns"], s["st_ctime_ns"]

    a.mkdir(d / "dir")
    dr, f, g = d / "dir", d / "dir" / "f", d / "dir" / "g"
    a.write_file(f, b"x")
    steps = [
        # (what, action, the file's name after it, file mtime changes?, file ctime?,
        #  dir mtime?, dir ctime?)
        ("write", lambda: a.write_file(f, b"more", os.O_WRONLY | os.O_APPEND), f, 1, 1, 0, 0),
        ("truncate", lambda: a.truncate(f, 1), f, 1, 1, 0, 0),
        ("chmod", lambda: a.chmod(f, 0o600), f, 0, 1, 0, 0),
        ("utimens", lambda: a.utimens(f, "now", "now"), f, 1, 1, 0, 0),
        ("setxattr", lambda: a.setxattr(f, "user.t", b"v"), f, 0, 1, 0, 0),
        ("link", lambda: a.link(f, dr / "hard"), f, 0, 1, 1, 1),
        ("unlink other name", lambda: a.unlink(dr / "hard"), f, 0, 1, 1, 1),
        ("rename in dir", lambda: a.rename(f, g), g, 0, 1, 1, 1),
        ("rename back", lambda: a.rename(g, f), f, 0, 1, 1, 1),
        ("create sibling", lambda: a.write_file(dr / "s", b""), f, 0, 0, 1, 1),
        ("mkdir sibling", lambda: a.mkdir(dr / "sd"), f, 0, 0, 1, 1),
        ("rmdir sibling", lambda: a.rmdir(dr / "sd"), f, 0, 0, 1, 1),
        ("symlink sibling", lambda: a.symlink("f", dr / "sl"), f, 0, 0, 1, 1),
    ]
    name = f
    for what, action, after_name, fm, fc, dm, dc in steps:
        f0, d0 = times(name), times(dr)
        tick()
        action()
        name = after_name
        f1, d1 = times(name), times(dr)
        for label, before, after, want in (("file mtime", f0[0], f1[0], fm),
                                           ("file ctime", f0[1], f1[1], fc),
                                           ("dir mtime", d0[0], d1[0], dm),
                                           ("dir ctime", d0[1], d1[1], dc)):
            if want:
                assert after > before, f"{what}: {label} did not advance"
            else:
                assert after == before, f"{what}: {label} changed ({before} -> {after})"
        # The mount shows what the backing file says (no stale attribute cache).
        hs = os.stat(d.h("dir/" + os.path.basename(name)))
        assert (hs.st_mtime_ns, hs.st_ctime_ns) == f1, f"{what}: mount and backing differ"
        hd = os.stat(d.h("dir"))
        assert (hd.st_mtime_ns, hd.st_ctime_ns) == d1, f"{what}: dir differs from backing"


# ---- creating names ------------------------------------------------------------------------


def test_mknod_fifo_socket_device(a, d):
    a.mkfifo(d / "fifo", 0o640)
    assert stat.S_ISFIFO(os.stat(d.h("fifo")).st_mode)
    assert a.fifo_roundtrip(d / "fifo", b"through the pipe") == b"through the pipe"
    a.bind_socket(d / "sock")
    assert stat.S_ISSOCK(os.stat(d.h("sock")).st_mode)
    assert stat.S_ISSOCK(a.stat(d / "sock")["st_mode"])
    a.mknod(d / "reg", 0o600 | stat.S_IFREG)
    assert stat.S_ISREG(os.stat(d.h("reg")).st_mode)
    dev = os.makedev(1, 3)
    if a.uid is None:
        a.mknod(d / "null", 0o666 | stat.S_IFCHR, dev)
        st = os.stat(d.h("null"))
        assert stat.S_ISCHR(st.st_mode) and st.st_rdev == dev
        assert a.stat(d / "null")["st_rdev"] == dev
        a.mknod(d / "blk", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
        assert stat.S_ISBLK(os.stat(d.h("blk")).st_mode)
    else:
        assert a.err("mknod", d / "null", 0o666 | stat.S_IFCHR, dev) == errno.EPERM
    assert a.err("mkfifo", d / "fifo") == errno.EEXIST
    assert a.err("mknod", d / "nodir" / "x", 0o600 | stat.S_IFIFO) == errno.ENOENT


def test_mkdir_and_rmdir(a, d):
    a.set_umask(0o022)
    a.mkdir(d / "sub", 0o777)
    assert stat.S_IMODE(os.stat(d.h("sub")).st_mode) == 0o755
    n0 = a.stat(d.path)["st_nlink"]
    a.mkdir(d / "sub2")
    assert a.stat(d.path)["st_nlink"] == n0 + 1
    assert a.stat(d / "sub2")["st_nlink"] == 2
    assert a.err("mkdir", d / "sub") == errno.EEXIST
    a.write_file(d / "file", b"")
    assert a.err("mkdir", d / "file") == errno.EEXIST
    assert a.err("mkdir", d / "nodir" / "x") == errno.ENOENT
    a.write_file(d / "sub" / "inside", b"")
    assert a.err("rmdir", d / "sub") == errno.ENOTEMPTY
    assert a.err("rmdir", d / "file") == errno.ENOTDIR
    assert a.err("rmdir", d / "missing") == errno.ENOENT
    assert a.err("rmdir", d / "sub2" / ".") == errno.EINVAL
    a.unlink(d / "sub" / "inside")
    a.rmdir(d / "sub")
    a.rmdir(d / "sub2")
    assert a.stat(d.path)["st_nlink"] == n0 - 1
    assert not os.path.exists(d.h("sub"))


def test_umask_applies_to_new_files(a, d):
    old = a.set_umask(0o027)
    try:
        a.create(d / "f", 0o666)
        a.mkdir(d / "dd", 0o777)
        a.mkfifo(d / "p", 0o666)
    finally:
        a.set_umask(old)
    assert stat.S_IMODE(os.stat(d.h("f")).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(d.h("dd")).st_mode) == 0o750
    assert stat.S_IMODE(os.stat(d.h("p")).st_mode) == 0o640


def test_unlink(a, d):
    a.write_file(d / "f", b"bye")
    fd = a.open(d / "f", os.O_RDONLY)
    a.unlink(d / "f")
    assert not os.path.exists(d.h("f"))
    assert a.err("stat", d / "f") == errno.ENOENT
    assert a.read(fd, 10) == b"bye"  # open files outlive their name
    assert a.fstat(fd)["st_nlink"] == 0
    a.close(fd)
    assert a.err("unlink", d / "f") == errno.ENOENT
    a.mkdir(d / "dir")
    assert a.err("unlink", d / "dir") == errno.EISDIR
    a.symlink("nowhere", d / "dangling")
    a.unlink(d / "dangling")
    assert not os.path.lexists(d.h("dangling"))


def test_symlink_and_readlink(a, d):
    a.symlink("target/with/../parts", d / "l")
    assert a.readlink(d / "l") == "target/with/../parts" == os.readlink(d.h("l"))
    assert a.stat(d / "l", follow=False)["st_size"] == len("target/with/../parts")
    long_target = "x" * 4000
    a.symlink(long_target, d / "long")
    assert a.readlink(d / "long") == long_target
    a.symlink("/outside/absolute", d / "abs")
    assert a.readlink(d / "abs") == "/outside/absolute"
    assert a.err("symlink", "t", d / "l") == errno.EEXIST
    a.write_file(d / "plain", b"")
    assert a.err("readlink", d / "plain") == errno.EINVAL
    assert a.err("readlink", d / "missing") == errno.ENOENT


def test_link_and_link_counts(a, d):
    a.write_file(d / "orig", b"shared")
    a.link(d / "orig", d / "second")
    a.mkdir(d / "sub")
    a.link(d / "orig", d / "sub" / "third")
    assert a.stat(d / "orig")["st_nlink"] == 3 == os.stat(d.h("orig")).st_nlink
    assert a.stat(d / "orig")["st_ino"] == a.stat(d / "sub" / "third")["st_ino"]
    a.write_file(d / "second", b"changed", os.O_WRONLY | os.O_TRUNC)
    assert a.read_file(d / "sub" / "third") == b"changed"
    a.unlink(d / "orig")
    assert a.stat(d / "second")["st_nlink"] == 2
    assert a.err("link", d / "second", d / "sub" / "third") == errno.EEXIST
    assert a.err("link", d / "sub", d / "dirlink") == errno.EPERM
    assert a.err("link", d / "missing", d / "x") == errno.ENOENT
    a.symlink("second", d / "sym")
    a.link(d / "sym", d / "sym2", follow_symlinks=False)  # a hard link to the symlink
    assert stat.S_ISLNK(os.lstat(d.h("sym2")).st_mode)
    # the mount's root is not in the workspace
    assert a.err("link", d / "second", d.path + "/../../linked-out") in (
        errno.EXDEV, errno.EPERM, errno.EACCES)


def test_rename(a, d):
    a.write_file(d / "a", b"A")
    a.write_file(d / "b", b"B")
    a.rename(d / "a", d / "b")  # replaces
    assert a.read_file(d / "b") == b"A" and not os.path.exists(d.h("a"))
    a.mkdir(d / "d1")
    a.mkdir(d / "d2")
    a.write_file(d / "d2" / "x", b"")
    a.mkdir(d / "empty")
    n = a.stat(d.path)["st_nlink"]
    a.rename(d / "d1", d / "empty")  # a directory over an empty one
    assert a.stat(d.path)["st_nlink"] == n - 1
    assert a.err("rename", d / "empty", d / "d2") in (errno.ENOTEMPTY, errno.EEXIST)
    assert a.err("rename", d / "b", d / "d2") == errno.EISDIR
    assert a.err("rename", d / "d2", d / "b") == errno.ENOTDIR
    assert a.err("rename", d / "d2", d / "d2" / "inside") == errno.EINVAL
    assert a.err("rename", d / "missing", d / "x") == errno.ENOENT
    # a directory moved between parents changes both link counts
    a.mkdir(d / "p1")
    a.mkdir(d / "p2")
    a.mkdir(d / "p1" / "c")
    a.rename(d / "p1" / "c", d / "p2" / "c")
    assert a.stat(d / "p1")["st_nlink"] == 2 and a.stat(d / "p2")["st_nlink"] == 3
    assert os.stat(d.h("p2")).st_nlink == 3


def test_rename_noreplace_and_exchange(a, d):
    a.write_file(d / "a", b"A")
    a.write_file(d / "b", b"B")
    assert a.err("renameat2", d / "a", d / "b", RENAME_NOREPLACE) == errno.EEXIST
    assert a.read_file(d / "b") == b"B"
    a.renameat2(d / "a", d / "c", RENAME_NOREPLACE)
    assert a.read_file(d / "c") == b"A"
    a.renameat2(d / "c", d / "b", RENAME_EXCHANGE)
    assert a.read_file(d / "b") == b"A" and a.read_file(d / "c") == b"B"
    assert open(d.h("b"), "rb").read() == b"A"
    a.mkdir(d / "dir")
    a.renameat2(d / "c", d / "dir", RENAME_EXCHANGE)  # a file and a directory swap
    assert stat.S_ISDIR(a.stat(d / "c")["st_mode"]) and a.read_file(d / "dir") == b"B"
    assert a.err("renameat2", d / "b", d / "missing", RENAME_EXCHANGE) == errno.ENOENT
    assert a.err("renameat2", d / "b", d / "x", RENAME_EXCHANGE | RENAME_NOREPLACE) == \
        errno.EINVAL


# ---- open, read, write ---------------------------------------------------------------------


def test_open_flags(a, d):
    a.write_file(d / "f", b"0123456789")
    assert a.err("open", d / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644) == errno.EEXIST
    a.write_file(d / "f", b"abc", os.O_WRONLY | os.O_TRUNC)
    assert a.read_file(d / "f") == b"abc"
    a.write_file(d / "f", b"def", os.O_WRONLY | os.O_APPEND)
    assert a.read_file(d / "f") == b"abcdef"
    fd = a.open(d / "f", os.O_RDONLY)
    assert a.err("write", fd, b"x") == errno.EBADF
    a.close(fd)
    fd = a.open(d / "f", os.O_WRONLY)
    assert a.err("read", fd, 1) == errno.EBADF
    a.close(fd)
    a.mkdir(d / "dir")
    assert a.err("open", d / "dir", os.O_WRONLY) == errno.EISDIR
    assert a.err("open", d / "f", os.O_RDONLY | os.O_DIRECTORY) == errno.ENOTDIR
    assert a.err("open", d / "missing", os.O_RDONLY) == errno.ENOENT
    fd = a.open(d / "dir", os.O_RDONLY | os.O_DIRECTORY)
    a.close(fd)
    # O_CREAT on an existing file opens it; O_TRUNC without write access is refused
    fd = a.open(d / "f", os.O_RDWR | os.O_CREAT, 0o600)
    assert a.pread(fd, 3, 3) == b"def"
    a.close(fd)


def test_o_direct_with_unaligned_buffers(pm, a, d):
    data = bytes(range(256)) * 40 + b"tail"
    if pm.kernel_workspace():
        # The backing filesystem's own rules (ext4 refuses unaligned buffers with EINVAL):
        # workspace/ answers exactly as the backing directory does.
        native = a.err("odirect_roundtrip", d.h("native"), data, 3)
        assert a.err("odirect_roundtrip", d / "direct", data, 3) == native
        if native:
            return
    assert a.odirect_roundtrip(d / "direct", data, 3) == data
    assert open(d.h("direct"), "rb").read()[3:] == data
    assert a.read_file(d / "direct")[3:] == data  # and a cached reader sees it


def test_o_tmpfile(pm, a, d):
    assert a.tmpfile_link(d.path, b"anonymous", d / "named") == 0
    assert a.read_file(d / "named") == b"anonymous"
    assert open(d.h("named"), "rb").read() == b"anonymous"
    assert stat.S_IMODE(os.stat(d.h("named")).st_mode) == 0o640
    assert os.stat(d.h("named")).st_uid == stored_owner(pm, a.uid or 0, 0)[0]
    assert a.err("tmpfile_link", d.path, b"x", d / "never", excl=True) == errno.ENOENT
    assert not os.path.exists(d.h("never"))


def test_read_write_offsets_holes_and_large(a, d):
    fd = a.open(d / "p", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        assert a.pwrite(fd, b"0123456789", 0) == 10
        assert a.pwrite(fd, b"AB", 4) == 2
        assert a.pwrite(fd, b"Z", 1 << 20) == 1
        assert a.pread(fd, 3, 3) == b"3AB"
        assert a.pread(fd, 5, (1 << 20) - 2) == b"\0\0Z"
        assert a.pread(fd, 5, 2 << 20) == b""
        assert a.fstat(fd)["st_size"] == (1 << 20) + 1
    finally:
        a.close(fd)
    big = os.urandom(3 << 20)
    a.write_file(d / "big", big)
    assert a.read_file(d / "big") == big
    assert open(d.h("big"), "rb").read() == big
    assert a.mmap_read(d / "big") == big


def test_splice_and_sendfile(a, d):
    data = os.urandom(300_000)
    a.write_file(d / "src", data)
    assert a.splice_roundtrip(d / "src", d / "dst", len(data)) == len(data)
    assert a.read_file(d / "dst") == data
    assert a.sendfile_copy(d / "src", d / "dst2") == len(data)
    assert open(d.h("dst2"), "rb").read() == data


def test_mmap_shared_write(a, d):
    a.write_file(d / "m", b"." * 10000)
    a.mmap_write(d / "m", 5000, b"MAPPED")
    assert a.read_file(d / "m")[4998:5008] == b"..MAPPED.."
    assert open(d.h("m"), "rb").read()[5000:5006] == b"MAPPED"


def test_fsync_and_fsyncdir(a, d):
    fd = a.open(d / "s", os.O_RDWR | os.O_CREAT, 0o644)
    a.write(fd, b"synced")
    a.fsync(fd)
    a.fdatasync(fd)
    a.close(fd)
    dfd = a.open(d.path, os.O_RDONLY | os.O_DIRECTORY)
    a.fsync(dfd)
    a.close(dfd)
    assert open(d.h("s"), "rb").read() == b"synced"


def test_readdir(a, d):
    names = {f"e{i:04d}" for i in range(1500)}
    for n in names:
        a.create(d / n)
    a.mkdir(d / "subdir")
    a.symlink("e0001", d / "sym")
    listed = a.listdir(d.path)
    assert len(listed) == len(set(listed)) == len(names) + 2
    assert set(listed) == names | {"subdir", "sym"} == set(os.listdir(d.host))
    types = a.listdir_types(d.path)
    assert types["subdir"][:2] == (True, False) and types["sym"][:2] == (False, True)
    assert types["e0001"][:2] == (False, False)
    assert types["e0001"][2] == os.stat(d.h("e0001")).st_ino
    a.unlink(d / "e0001")
    assert "e0001" not in a.listdir(d.path)
    assert a.err("listdir", d / "e0002") == errno.ENOTDIR
    assert a.err("listdir", d / "missing") == errno.ENOENT


def test_statfs(pm, a):
    f, h = os.statvfs(pm.workspace), os.statvfs(pm.ws)
    assert (f.f_blocks, f.f_frsize, f.f_files, f.f_namemax) == \
        (h.f_blocks, h.f_frsize, h.f_files, h.f_namemax)
    assert a.statvfs(str(pm.workspace)).f_namemax == 255


def test_access(a, d):
    a.write_file(d / "f", b"")
    a.chmod(d / "f", 0o640)
    assert a.access(d / "f", os.R_OK | os.W_OK)
    assert not a.access(d / "f", os.X_OK)  # root too: no x bit at all
    a.chmod(d / "f", 0o100)
    assert a.access(d / "f", os.X_OK)
    assert a.access(d / "f", os.R_OK) == (a.uid is None)
    assert not a.access(d / "missing", os.F_OK)


def test_xattrs(a, d):
    a.write_file(d / "f", b"")
    a.mkdir(d / "dir")
    for p in (d / "f", d / "dir"):
        a.setxattr(p, "user.one", b"1")
        a.setxattr(p, "user.two", b"\0binary\xff")
        assert a.getxattr(p, "user.two") == b"\0binary\xff"
        assert {"user.one", "user.two"} <= set(a.listxattr(p))
        assert os.getxattr(d.h(os.path.relpath(p, d.path)), "user.one") == b"1"
        assert a.err("setxattr", p, "user.one", b"x", os.XATTR_CREATE) == errno.EEXIST
        assert a.err("setxattr", p, "user.new", b"x", os.XATTR_REPLACE) == errno.ENODATA
        a.setxattr(p, "user.one", b"replaced", os.XATTR_REPLACE)
        assert a.getxattr(p, "user.one") == b"replaced"
        a.removexattr(p, "user.one")
        assert a.err("getxattr", p, "user.one") == errno.ENODATA
        assert a.err("removexattr", p, "user.one") == errno.ENODATA
        assert "user.one" not in a.listxattr(p)
    a.symlink("f", d / "l")
    assert a.err("setxattr", d / "l", "user.x", b"1", follow_symlinks=False) == errno.EPERM
    if a.uid is None:
        a.setxattr(d / "f", "trusted.t", b"root only")
        assert a.getxattr(d / "f", "trusted.t") == b"root only"
    else:
        assert a.err("setxattr", d / "f", "trusted.t", b"x") == errno.EPERM


def test_fallocate_modes(pm, a, d):
    fd = a.open(d / "fa", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        a.fallocate(fd, 0, 0, 65536)
        assert a.fstat(fd)["st_size"] == 65536
        a.fallocate(fd, FALLOC_FL_KEEP_SIZE, 65536, 65536)
        assert a.fstat(fd)["st_size"] == 65536
        assert os.stat(d.h("fa")).st_blocks * 512 >= 131072
        a.pwrite(fd, b"\xaa" * 65536, 0)
        a.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192)
        a.fallocate(fd, FALLOC_FL_ZERO_RANGE, 32768, 4096)
        a.fallocate(fd, FALLOC_FL_ZERO_RANGE, 60000, 10000)  # and past the end
        data = a.pread(fd, 100000, 0)
        assert len(data) == 70000
        assert data[:4096] == b"\xaa" * 4096 and data[4096:12288] == b"\0" * 8192
        assert data[12288:32768] == b"\xaa" * 20480 and data[32768:36864] == b"\0" * 4096
        assert data[60000:] == b"\0" * 10000
        assert open(d.h("fa"), "rb").read() == data
        if pm.kernel_workspace():
            # The backing filesystem's own fallocate: collapse and insert range work.
            a.fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096)
            data = data[4096:]
            assert a.pread(fd, 100000, 0) == data
            a.fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 4096)
            data = b"\0" * 4096 + data
        else:
            # The kernel's FUSE module takes no collapse or insert range (it has no page
            # cache handling for them): EOPNOTSUPP before the daemon sees them, file unchanged.
            for mode in (FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE):
                assert a.err("fallocate", fd, mode, 0, 4096) == errno.EOPNOTSUPP
        assert a.pread(fd, 100000, 0) == data
        assert open(d.h("fa"), "rb").read() == data
        assert a.err("fallocate", fd, FALLOC_FL_PUNCH_HOLE, 0, 4096) == errno.EOPNOTSUPP
        assert a.err("fallocate", fd, 0, -1, 10) == errno.EINVAL
    finally:
        a.close(fd)


def test_copy_file_range(a, d):
    data = os.urandom(200_000)
    a.write_file(d / "src", data)
    a.write_file(d / "dst", b"")
    fi = a.open(d / "src", os.O_RDONLY)
    fo = a.open(d / "dst", os.O_RDWR)
    try:
        total = 0
        while total < 150_000:
            n = a.copy_file_range(fi, fo, 150_000 - total, 1000 + total, 10 + total)
            assert n > 0
            total += n
        got = a.pread(fo, 200_000, 0)
        assert got == b"\0" * 10 + data[1000:151_000]
        assert a.copy_file_range(fi, fo, 100, 300_000, 0) == 0  # past EOF
        assert a.err("copy_file_range", fi, fi, 100, 0, 50) == errno.EBADF  # fi is O_RDONLY
        assert a.err("copy_file_range", fo, fo, 100, 0, 50) == errno.EINVAL  # overlap
    finally:
        a.close(fi)
        a.close(fo)
    assert open(d.h("dst"), "rb").read() == got


def test_lseek_data_and_hole(a, d):
    fd = a.open(d / "sparse", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        a.pwrite(fd, b"d" * 4096, 0)
        a.pwrite(fd, b"e" * 4096, 1 << 20)
        assert a.lseek(fd, 0, os.SEEK_DATA) == 0
        assert a.lseek(fd, 0, os.SEEK_HOLE) == 4096
        assert a.lseek(fd, 8192, os.SEEK_DATA) == 1 << 20
        assert a.lseek(fd, 1 << 20, os.SEEK_HOLE) == (1 << 20) + 4096
        assert a.err("lseek", fd, (1 << 20) + 4096, os.SEEK_DATA) == errno.ENXIO
        assert a.err("lseek", fd, 10 << 20, os.SEEK_HOLE) == errno.ENXIO
        assert a.lseek(fd, 10, os.SEEK_SET) == 10
        assert a.lseek(fd, -5, os.SEEK_END) == (1 << 20) + 4091
    finally:
        a.close(fd)


# ---- locks ---------------------------------------------------------------------------------


def test_flock_across_opens_and_with_the_backing_file(pm, actors):
    p = Place(pm, actors["root"])
    os.chmod(p.path, 0o777)
    a1, a2 = actors["alice"], Actor("alice-2", **ALICE)
    try:
        a1.write_file(p / "lock", b"")
        fd1 = a1.open(p / "lock", os.O_RDWR)
        fd2 = a2.open(p / "lock", os.O_RDWR)
        fdh = a2.open(p.h("lock"), os.O_RDWR)  # the sandbox's view: the backing file
        a1.flock(fd1, fcntl.LOCK_EX)
        assert a2.err("flock", fd2, fcntl.LOCK_EX | fcntl.LOCK_NB) == errno.EWOULDBLOCK
        assert a2.err("flock", fdh, fcntl.LOCK_SH | fcntl.LOCK_NB) == errno.EWOULDBLOCK
        # a blocking request waits, and a signal ends the wait with EINTR
        assert a2.flock_wait(fd2, fcntl.LOCK_EX, 0.3) == "interrupted"
        # ... or gets the lock once the holder lets go
        t = threading.Timer(0.3, lambda: a1.flock(fd1, fcntl.LOCK_UN))
        t.start()
        assert a2.flock_wait(fd2, fcntl.LOCK_EX, 10) == "locked"
        t.join()
        assert a1.err("flock", fd1, fcntl.LOCK_SH | fcntl.LOCK_NB) == errno.EWOULDBLOCK
        a2.close(fd2)  # closing the holder's file releases it
        # ... once the daemon has the close: FUSE sends RELEASE asynchronously, so the lock
        # can outlive close() by a moment
        deadline = time.monotonic() + 2
        while a1.err("flock", fd1, fcntl.LOCK_SH | fcntl.LOCK_NB) == errno.EWOULDBLOCK:
            assert time.monotonic() < deadline, "the lock outlived its file by 2 s"
            time.sleep(0.001)
        a2.flock(fdh, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared with the backing side
        a1.close(fd1)
        a2.close(fdh)
    finally:
        a2.quit()


def test_posix_locks_between_processes(pm, actors):
    p = Place(pm, actors["root"])
    os.chmod(p.path, 0o777)
    a1, a2 = actors["alice"], Actor("alice-2", **ALICE)
    try:
        a1.write_file(p / "plock", b"x" * 100)
        fd1 = a1.open(p / "plock", os.O_RDWR)
        fd2 = a2.open(p / "plock", os.O_RDWR)
        a1.lockf(fd1, fcntl.LOCK_EX, 10, 0)
        assert a2.err("lockf", fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 5) in (errno.EAGAIN,
                                                                             errno.EACCES)
        a2.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 20)  # another range is free
        assert a2.getlk(fd2, fcntl.F_WRLCK, 0, 5) == (fcntl.F_WRLCK, a1.pid)
        fd1b = a1.open(p / "plock", os.O_RDONLY)
        a1.close(fd1b)  # POSIX: closing any fd of the file drops the process's locks
        a2.lockf(fd2, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
        a2.close(fd2)
        a1.close(fd1)
    finally:
        a2.quit()


# ---- concurrency ---------------------------------------------------------------------------


def test_o_append_concurrent_writers(pm, actors):
    p = Place(pm, actors["root"])
    os.chmod(p.path, 0o777)
    writers = [Actor(f"appender-{i}", **ALICE) for i in range(3)]
    try:
        writers[0].write_file(p / "log", b"")
        jobs = [(writers[0], p / "log"), (writers[1], p / "log"),
                (writers[2], p.h("log"))]  # the last one writes the backing file directly
        count, size = 300, 64
        threads = [threading.Thread(target=w.append_records, args=(path, f"w{i}", count, size))
                   for i, (w, path) in enumerate(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        data = writers[0].read_file(p / "log")
    finally:
        for w in writers:
            w.quit()
    assert len(data) == len(jobs) * count * size
    records = [data[i:i + size] for i in range(0, len(data), size)]
    seen = {}
    for r in records:
        assert r.startswith(b"<w") and r.endswith(b">\n"), f"torn record {r!r}"
        tag, num = r[1:].split(b":")[:2]
        seen.setdefault(tag, []).append(int(num))
    for tag, nums in seen.items():
        assert nums == list(range(count)), f"{tag}: records lost or out of order"
    assert open(p.h("log"), "rb").read() == data


# ---- identity and permissions --------------------------------------------------------------


def test_new_files_belong_to_their_creator(pm, actors, shared):
    alice, bob = actors["alice"], actors["bob"]
    alice.write_file(shared / "af", b"")
    alice.mkdir(shared / "ad")
    alice.symlink("af", shared / "al")
    alice.mkfifo(shared / "ap")
    alice.link(shared / "af", shared / "ah")
    bob.write_file(shared / "bf", b"")
    for name in ("af", "ad", "al", "ap"):
        st = os.lstat(shared.h(name))
        assert (st.st_uid, st.st_gid) == (4001, 4001), name
    assert (os.stat(shared.h("bf")).st_uid, os.stat(shared.h("bf")).st_gid) == (4002, 4002)
    assert alice.stat(shared / "af")["st_uid"] == 4001


def test_setgid_directories_and_supplementary_groups(pm, actors):
    root, alice = actors["root"], actors["alice"]
    p = Place(pm, root)
    # group-writable only for group 4100, which alice has as a supplementary group
    root.chown(p.path, 0, GROUP_ALICE_IN)
    root.chmod(p.path, 0o2770)
    alice.write_file(p / "f", b"")
    alice.mkdir(p / "sub")
    st, sd = os.stat(p.h("f")), os.stat(p.h("sub"))
    assert (st.st_uid, st.st_gid) == (4001, GROUP_ALICE_IN)
    assert sd.st_gid == GROUP_ALICE_IN and sd.st_mode & stat.S_ISGID
    assert actors["bob"].err("create", p / "b") == errno.EACCES
    # setgid directory of a group alice is not in: a new file's S_ISGID is dropped
    q = Place(pm, root)
    root.chown(q.path, 0, GROUP_NOBODY_IN)
    root.chmod(q.path, 0o2777)
    alice.create(q / "g", 0o2755)
    st = os.stat(q.h("g"))
    assert st.st_gid == GROUP_NOBODY_IN and not st.st_mode & stat.S_ISGID
    root.create(q / "r", 0o2755)
    assert os.stat(q.h("r")).st_mode & stat.S_ISGID  # root keeps it


def test_permission_errors_for_another_user(pm, actors):
    root, alice, bob = actors["root"], actors["alice"], actors["bob"]
    p = Place(pm, alice)
    alice.write_file(p / "private", b"secret")
    alice.chmod(p / "private", 0o600)
    alice.write_file(p / "readable", b"r")
    alice.chmod(p / "readable", 0o644)
    alice.write_file(p / "shared", b"s")
    alice.chmod(p / "shared", 0o666)
    alice.write_file(p / "script", b"#!/bin/sh\nexit 7\n")
    alice.chmod(p / "script", 0o744)
    assert bob.err("read_file", p / "private") == errno.EACCES
    assert bob.err("write_file", p / "readable", b"x", os.O_WRONLY) == errno.EACCES
    assert bob.err("truncate", p / "readable", 0) == errno.EACCES
    assert bob.err("create", p / "new") == errno.EACCES  # alice's 0755 directory
    assert bob.err("mkdir", p / "newdir") == errno.EACCES
    assert bob.err("unlink", p / "readable") == errno.EACCES
    assert bob.err("rename", p / "readable", p / "moved") == errno.EACCES
    assert bob.err("chmod", p / "shared", 0o777) == errno.EPERM
    assert bob.err("chown", p / "shared", 4002, 4002) == errno.EPERM
    assert bob.err("utimens", p / "shared", 1, 1) == errno.EPERM  # explicit times: owner only
    bob.utimens(p / "shared", "now", "now")  # "now" needs only write access
    assert bob.err("utimens", p / "readable", "now", "now") == errno.EACCES
    assert bob.err("setxattr", p / "readable", "user.x", b"1") == errno.EACCES
    assert bob.err("getxattr", p / "private", "user.x") == errno.EACCES
    assert bob.err("link", p / "private", p / "stolen") in (errno.EPERM, errno.EACCES)
    assert bob.exec_status(p / "script") == 100 + errno.EACCES
    assert alice.exec_status(p / "script") == 7
    assert bob.read_file(p / "readable") == b"r"
    bob.write_file(p / "shared", b"bob was here", os.O_WRONLY | os.O_TRUNC)
    alice.chmod(p.path, 0o700)
    assert bob.err("stat", p / "readable") == errno.EACCES
    assert bob.err("listdir", p.path) == errno.EACCES
    alice.chmod(p.path, 0o711)  # search without read
    assert bob.err("listdir", p.path) == errno.EACCES
    assert bob.read_file(p / "readable") == b"r"
    assert root.read_file(p / "private") == b"secret"  # root passes


def test_sticky_directory(pm, actors, shared):
    root, alice, bob = actors["root"], actors["alice"], actors["bob"]
    root.chmod(shared.path, 0o1777)
    alice.write_file(shared / "a", b"")
    alice.chmod(shared / "a", 0o666)
    bob.write_file(shared / "b", b"")
    assert bob.err("unlink", shared / "a") == errno.EPERM
    assert bob.err("rename", shared / "a", shared / "a2") == errno.EPERM
    assert bob.err("rename", shared / "b", shared / "a") == errno.EPERM  # over alice's
    bob.write_file(shared / "a", b"writable is not removable", os.O_WRONLY)
    bob.rename(shared / "b", shared / "b2")
    bob.unlink(shared / "b2")
    alice.unlink(shared / "a")
    alice.write_file(shared / "a3", b"")
    root.unlink(shared / "a3")


def test_write_by_another_user_clears_setuid(pm, actors):
    root, alice, bob = actors["root"], actors["alice"], actors["bob"]
    p = Place(pm, alice)
    for name in ("w", "t", "o", "r"):
        alice.write_file(p / name, b"data")
        alice.chmod(p / name, 0o6777)
    bob.write_file(p / "w", b"more", os.O_WRONLY | os.O_APPEND)
    bob.truncate(p / "t", 1)
    bob.write_file(p / "o", b"x", os.O_WRONLY | os.O_TRUNC)
    bob.read_file(p / "r")
    for name, kept in (("w", False), ("t", False), ("o", False), ("r", True)):
        mode = os.stat(p.h(name)).st_mode
        assert bool(mode & (stat.S_ISUID | stat.S_ISGID)) == kept, (name, oct(mode))
        assert alice.stat(p / name)["st_mode"] == mode
    root.chmod(p / "w", 0o6777)
    root.write_file(p / "w", b"root", os.O_WRONLY | os.O_APPEND)
    assert os.stat(p.h("w")).st_mode & stat.S_ISUID  # CAP_FSETID keeps it


def test_daemon_works_on_directory_handles_not_paths(pm, actors):
    """A directory replaced by a symlink in the backing dir: a request made through a handle
    of the old directory stays in it instead of following the new symlink out."""
    root = actors["root"]
    p = Place(pm, root)
    outside = pm.tmp / uniq("outside")
    outside.mkdir()
    root.mkdir(p / "x")
    dfd = root.open_dir_fd(p / "x")
    try:
        os.rename(p.h("x"), p.h("x_old"))
        os.symlink(str(outside), p.h("x"))
        root.create_in_dirfd(dfd, "made", b"in the old directory")
    finally:
        root.close(dfd)
    assert os.listdir(outside) == []
    assert open(p.h("x_old/made"), "rb").read() == b"in the old directory"


def test_control_files_stay_uncached(pm, actors):
    """The workspace's caching and passthrough leave sessions/ alone: a running command's
    stdout grows in size as it is written."""
    s = pm.new_session()
    pm.submit(s, "echo one; sleep 0.5; echo two")
    sizes = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(sizes) < 2:
        sizes.add(os.stat(s / "stdout").st_size)
        time.sleep(0.05)
    assert pm.exit_status(s) == 0
    assert os.stat(s / "stdout").st_size == 8
    assert {4, 8} <= sizes | {8}
