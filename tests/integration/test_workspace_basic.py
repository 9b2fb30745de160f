"""workspace/: a passthrough of the --workspace directory.

Each test works in its own directory, created on the host in ws/ and used through
mnt/workspace/; every operation done through the mount is checked against the backing dir.
"""

import errno
import os
import stat
import time

import pytest

from sbxutil import limits, stored_owner, sha256, uniq


@pytest.fixture
def dirs(sbx):
    """(path through the mount, backing host path) of a fresh directory."""
    name = uniq("wsb")
    host = sbx.ws / name
    host.mkdir()
    return sbx.workspace / name, host


def _errno(fn, *args):
    with pytest.raises(OSError) as exc:
        fn(*args)
    return exc.value.errno


def test_workspace_root_lists_backing_dir(sbx, dirs):
    fuse, host = dirs
    assert fuse.name in os.listdir(sbx.workspace)
    assert sorted(os.listdir(sbx.workspace)) == sorted(os.listdir(sbx.ws))


def test_create_and_read(dirs):
    fuse, host = dirs
    (fuse / "new.txt").write_bytes(b"hello workspace\n")
    assert (host / "new.txt").read_bytes() == b"hello workspace\n"
    assert (fuse / "new.txt").read_bytes() == b"hello workspace\n"
    (host / "hostmade.txt").write_bytes(b"from host")
    assert (fuse / "hostmade.txt").read_bytes() == b"from host"


def test_create_mode_is_passed_through(dirs):
    fuse, host = dirs
    old = os.umask(0o022)
    try:
        fd = os.open(fuse / "m.txt", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        os.close(fd)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(host / "m.txt").st_mode) == 0o600
    assert stat.S_ISREG(os.stat(host / "m.txt").st_mode)


def test_exclusive_create_of_existing_is_eexist(dirs):
    fuse, host = dirs
    (host / "exists").write_bytes(b"x")
    assert _errno(os.open, fuse / "exists", os.O_CREAT | os.O_EXCL | os.O_WRONLY) == errno.EEXIST
    assert (host / "exists").read_bytes() == b"x"


def test_overwrite_and_append(dirs):
    fuse, host = dirs
    f = fuse / "f.txt"
    f.write_bytes(b"first version, long\n")
    f.write_bytes(b"second\n")  # O_TRUNC
    assert (host / "f.txt").read_bytes() == b"second\n"
    with open(f, "ab") as fh:
        fh.write(b"appended\n")
    with open(f, "ab") as fh:
        fh.write(b"again\n")
    assert (host / "f.txt").read_bytes() == b"second\nappended\nagain\n"
    assert f.read_bytes() == b"second\nappended\nagain\n"


def test_pwrite_and_pread_at_offsets(dirs):
    fuse, host = dirs
    fd = os.open(fuse / "p.bin", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        assert os.pwrite(fd, b"0123456789", 0) == 10
        assert os.pwrite(fd, b"AB", 4) == 2
        assert os.pwrite(fd, b"Z", 15) == 1  # leaves a hole
        assert os.pread(fd, 3, 3) == b"3AB"
        assert os.pread(fd, 100, 14) == b"\0Z"
        assert os.fstat(fd).st_size == 16
    finally:
        os.close(fd)
    assert (host / "p.bin").read_bytes() == b"0123AB6789\0\0\0\0\0Z"


def test_large_binary_file_roundtrip(dirs):
    fuse, host = dirs
    data = os.urandom(8 * 1024 * 1024 + 123)
    (fuse / "big.bin").write_bytes(data)
    assert sha256((host / "big.bin").read_bytes()) == sha256(data)
    assert sha256((fuse / "big.bin").read_bytes()) == sha256(data)
    assert os.stat(fuse / "big.bin").st_size == len(data)


def test_mkdir_and_rmdir(dirs):
    fuse, host = dirs
    os.mkdir(fuse / "sub", 0o750)
    assert (host / "sub").is_dir()
    assert stat.S_IMODE(os.stat(host / "sub").st_mode) == 0o750 & ~_umask()
    os.makedirs(fuse / "sub" / "a" / "b")
    assert (host / "sub" / "a" / "b").is_dir()
    assert _errno(os.mkdir, fuse / "sub") == errno.EEXIST
    assert _errno(os.rmdir, fuse / "sub") == errno.ENOTEMPTY
    os.rmdir(fuse / "sub" / "a" / "b")
    os.rmdir(fuse / "sub" / "a")
    os.rmdir(fuse / "sub")
    assert not (host / "sub").exists()
    assert not (fuse / "sub").exists()


def _umask():
    old = os.umask(0)
    os.umask(old)
    return old


def test_listdir_matches_host(dirs):
    fuse, host = dirs
    for n in ("a", "b.txt", ".hidden"):
        (fuse / n).write_bytes(b"")
    os.mkdir(fuse / "d")
    os.symlink("a", fuse / "l")
    assert sorted(os.listdir(fuse)) == sorted(os.listdir(host)) == \
        [".hidden", "a", "b.txt", "d", "l"]
    kinds = {e.name: (e.is_dir(follow_symlinks=False), e.is_symlink()) for e in os.scandir(fuse)}
    assert kinds["d"] == (True, False) and kinds["l"] == (False, True)
    assert kinds["a"] == (False, False)


def test_unlink(dirs):
    fuse, host = dirs
    (fuse / "gone.txt").write_bytes(b"bye")
    os.unlink(fuse / "gone.txt")
    assert not (host / "gone.txt").exists()
    assert not (fuse / "gone.txt").exists()
    assert _errno(os.unlink, fuse / "gone.txt") == errno.ENOENT
    os.mkdir(fuse / "adir")
    assert _errno(os.unlink, fuse / "adir") in (errno.EISDIR, errno.EPERM)


def test_unlinked_open_file_stays_readable(dirs):
    fuse, host = dirs
    (fuse / "tmp.txt").write_bytes(b"still here")
    with open(fuse / "tmp.txt", "rb") as fh:
        os.unlink(fuse / "tmp.txt")
        assert not (host / "tmp.txt").exists()
        assert fh.read() == b"still here"


def test_rename_file(dirs):
    fuse, host = dirs
    (fuse / "old.txt").write_bytes(b"content")
    os.rename(fuse / "old.txt", fuse / "new.txt")
    assert not (host / "old.txt").exists()
    assert (host / "new.txt").read_bytes() == b"content"
    assert (fuse / "new.txt").read_bytes() == b"content"
    assert not (fuse / "old.txt").exists()


def test_rename_replaces_existing_file(dirs):
    fuse, host = dirs
    (fuse / "src").write_bytes(b"new")
    (fuse / "dst").write_bytes(b"old")
    os.replace(fuse / "src", fuse / "dst")
    assert (host / "dst").read_bytes() == b"new"
    assert (fuse / "dst").read_bytes() == b"new"
    assert not (host / "src").exists()


def test_rename_directory_across_directories(dirs):
    fuse, host = dirs
    os.makedirs(fuse / "from" / "moved")
    (fuse / "from" / "moved" / "f").write_bytes(b"inside")
    os.mkdir(fuse / "to")
    os.rename(fuse / "from" / "moved", fuse / "to" / "moved")
    assert (host / "to" / "moved" / "f").read_bytes() == b"inside"
    assert (fuse / "to" / "moved" / "f").read_bytes() == b"inside"
    assert not (host / "from" / "moved").exists()
    assert os.listdir(fuse / "from") == []


def test_symlink_and_readlink(sbx, dirs):
    fuse, host = dirs
    (fuse / "target.txt").write_bytes(b"pointed at")
    os.symlink("target.txt", fuse / "link")
    os.symlink("/nonexistent/abs/path", fuse / "dangling")
    assert os.readlink(host / "link") == "target.txt"
    assert os.readlink(fuse / "link") == "target.txt"
    assert os.readlink(fuse / "dangling") == "/nonexistent/abs/path"
    assert stat.S_ISLNK(os.lstat(host / "link").st_mode)
    assert stat.S_ISLNK(os.lstat(fuse / "link").st_mode)
    if limits(sbx)["host_symlinks"] == "nofollow":
        # host_symlinks = nofollow (the default, as root): the host's view follows no link
        assert _errno((fuse / "link").read_bytes) == errno.ELOOP
    else:
        assert (fuse / "link").read_bytes() == b"pointed at"
    assert _errno(os.symlink, "x", fuse / "link") == errno.EEXIST


def test_hard_link_count(dirs):
    fuse, host = dirs
    (fuse / "orig").write_bytes(b"shared inode")
    os.link(fuse / "orig", fuse / "second")
    assert os.stat(host / "orig").st_nlink == 2
    assert os.stat(host / "orig").st_ino == os.stat(host / "second").st_ino
    assert os.stat(fuse / "second").st_nlink == 2
    assert os.stat(fuse / "orig").st_nlink == 2
    (fuse / "second").write_bytes(b"changed via link")
    assert (host / "orig").read_bytes() == b"changed via link"
    os.unlink(fuse / "second")
    assert os.stat(host / "orig").st_nlink == 1
    assert os.stat(fuse / "orig").st_nlink == 1


def test_chmod(dirs):
    fuse, host = dirs
    (fuse / "c").write_bytes(b"")
    for mode in (0o640, 0o755, 0o400, 0o711):
        os.chmod(fuse / "c", mode)
        assert stat.S_IMODE(os.stat(host / "c").st_mode) == mode
        assert stat.S_IMODE(os.stat(fuse / "c").st_mode) == mode
    os.mkdir(fuse / "d")
    os.chmod(fuse / "d", 0o700)
    assert stat.S_IMODE(os.stat(host / "d").st_mode) == 0o700


def test_truncate(dirs):
    fuse, host = dirs
    f = fuse / "t"
    f.write_bytes(b"0123456789")
    os.truncate(f, 4)
    assert (host / "t").read_bytes() == b"0123"
    assert os.stat(f).st_size == 4
    os.truncate(f, 8)
    assert (host / "t").read_bytes() == b"0123\0\0\0\0"
    with open(f, "r+b") as fh:
        fh.truncate(2)
    assert (host / "t").read_bytes() == b"01"
    assert f.read_bytes() == b"01"
    assert os.stat(f).st_size == 2


def test_utime(dirs):
    fuse, host = dirs
    (fuse / "u").write_bytes(b"")
    atime_ns, mtime_ns = 1_500_000_000_123_456_789, 1_600_000_000_987_654_321
    os.utime(fuse / "u", ns=(atime_ns, mtime_ns))
    h = os.stat(host / "u")
    assert (h.st_atime_ns, h.st_mtime_ns) == (atime_ns, mtime_ns)
    f = os.stat(fuse / "u")
    assert (f.st_atime_ns, f.st_mtime_ns) == (atime_ns, mtime_ns)
    os.utime(fuse / "u", (1_000_000_000, 1_000_000_001))
    assert os.stat(host / "u").st_mtime == 1_000_000_001
    os.utime(fuse / "u")  # now
    assert abs(os.stat(host / "u").st_mtime - time.time()) < 60


def test_stat_matches_host(sbx, dirs):
    fuse, host = dirs
    (fuse / "s").write_bytes(b"12345")
    os.chmod(fuse / "s", 0o644)
    f, h = os.stat(fuse / "s"), os.stat(host / "s")
    assert f.st_size == h.st_size == 5
    assert f.st_mode == h.st_mode
    assert f.st_mtime_ns == h.st_mtime_ns
    assert (f.st_uid, f.st_gid) == stored_owner(sbx, h.st_uid, h.st_gid)
    assert stat.S_ISDIR(os.stat(fuse).st_mode)


def test_statvfs(sbx):
    f, h = os.statvfs(sbx.workspace), os.statvfs(sbx.ws)
    assert f.f_blocks * f.f_frsize == h.f_blocks * h.f_frsize
    assert f.f_files == h.f_files
    assert f.f_namemax == h.f_namemax
    total = h.f_blocks * h.f_frsize
    assert abs(f.f_bavail * f.f_frsize - h.f_bavail * h.f_frsize) <= max(total // 50, 1 << 20)
