"""File system calls for the POSIX suite, run by posixutil.Actor in a helper process that has
the actor's uid, gid, groups and umask. Only the standard library: the helper process runs this
file's text with a small request loop (see SERVER below), without pytest.

Every function takes and returns plain picklable values; file descriptors are the helper
process's own, so a test can keep one open across calls (locks, O_APPEND writers).
"""

import ctypes
import errno
import fcntl
import mmap
import os
import signal
import socket
import struct
import time

_libc = ctypes.CDLL(None, use_errno=True)

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_EMPTY_PATH = 0x1000
AT_SYMLINK_FOLLOW = 0x400
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_INSERT_RANGE = 0x20
O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000)


def _check(res):
    if res == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return res


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _spec(t):
    if t == "now":
        return _Timespec(0, UTIME_NOW)
    if t == "omit":
        return _Timespec(0, UTIME_OMIT)
    return _Timespec(int(t) // 10**9, int(t) % 10**9)


def utimens(path, atime, mtime, follow=True):
    """utimensat with times in ns, or "now" / "omit" for either."""
    ts = (_Timespec * 2)(_spec(atime), _spec(mtime))
    flags = 0 if follow else AT_SYMLINK_NOFOLLOW
    return _check(_libc.utimensat(AT_FDCWD, os.fsencode(path), ts, flags))


def renameat2(old, new, flags=0):
    return _check(_libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new),
                                  ctypes.c_uint(flags)))


def fallocate(fd, mode, offset, length):
    return _check(_libc.fallocate(fd, mode, ctypes.c_long(offset), ctypes.c_long(length)))


def write_file(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode=0o644):
    fd = os.open(path, flags, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return len(data)


def read_file(path, flags=os.O_RDONLY):
    fd = os.open(path, flags)
    try:
        chunks = []
        while True:
            c = os.read(fd, 1 << 20)
            if not c:
                return b"".join(chunks)
            chunks.append(c)
    finally:
        os.close(fd)


def stat(path, follow=True):
    """A picklable subset of os.stat / os.lstat."""
    st = os.stat(path) if follow else os.lstat(path)
    return {k: getattr(st, k) for k in (
        "st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns",
        "st_mtime_ns", "st_ctime_ns", "st_blocks", "st_rdev")}


def fstat(fd):
    st = os.fstat(fd)
    return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_size", "st_mtime_ns",
                                        "st_ctime_ns", "st_uid", "st_gid")}


def create(path, mode=0o644, flags=os.O_WRONLY | os.O_CREAT | os.O_EXCL):
    os.close(os.open(path, flags, mode))


def umask_now():
    old = os.umask(0)
    os.umask(old)
    return old


def set_umask(mask):
    return os.umask(mask)


def tmpfile_link(dirpath, data, linkname, excl=False):
    """O_TMPFILE in dirpath, write data, then give it linkname; returns the fstat nlink
    before linking. With excl (O_EXCL) the link must fail."""
    flags = O_TMPFILE | os.O_RDWR | (os.O_EXCL if excl else 0)
    fd = os.open(dirpath, flags, 0o640)
    try:
        os.write(fd, data)
        nlink = os.fstat(fd).st_nlink
        if os.geteuid() == 0:
            _check(_libc.linkat(fd, b"", AT_FDCWD, os.fsencode(linkname), AT_EMPTY_PATH))
        else:
            _check(_libc.linkat(AT_FDCWD, f"/proc/self/fd/{fd}".encode(), AT_FDCWD,
                                os.fsencode(linkname), AT_SYMLINK_FOLLOW))
        return nlink
    finally:
        os.close(fd)


def odirect_roundtrip(path, data, offset):
    """Writes data at offset through an O_DIRECT fd from a deliberately misaligned buffer,
    reads it back the same way; returns what was read."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    try:
        m = mmap.mmap(-1, len(data) + 4096 * 2)
        m[1:1 + len(data)] = data
        view = memoryview(m)[1:1 + len(data)]
        n = os.pwritev(fd, [view], offset)
        assert n == len(data), n
        out = bytearray(len(data) + 3)
        rview = memoryview(out)[3:]
        got = os.preadv(fd, [rview], offset)
        view.release()
        rview.release()
        m.close()
        return bytes(out[3:3 + got])
    finally:
        os.close(fd)


def bind_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(path)
    finally:
        s.close()


def fifo_roundtrip(path, data):
    """Opens the fifo both ways (O_RDWR keeps it from blocking) and passes data through."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.write(fd, data)
        return os.read(fd, len(data))
    finally:
        os.close(fd)


def append_records(path, tag, count, size, via_flags=os.O_WRONLY | os.O_APPEND):
    """count records of exactly size bytes, each one write() on an O_APPEND fd."""
    fd = os.open(path, via_flags)
    try:
        for i in range(count):
            head = f"<{tag}:{i:06d}:".encode()
            rec = head + b"x" * (size - len(head) - 2) + b">\n"
            assert len(rec) == size
            assert os.write(fd, rec) == size
    finally:
        os.close(fd)
    return count


def flock_wait(fd, op, timeout):
    """flock(fd, op) that blocks at most timeout seconds: an alarm signal interrupts it.
    Returns "locked", or "interrupted" when the signal ended the wait with EINTR."""
    class Interrupted(Exception):
        pass

    def on_alarm(signum, frame):
        raise Interrupted()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        fcntl.flock(fd, op)
        return "locked"
    except Interrupted:
        return "interrupted"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def lockf(fd, cmd, length=0, start=0):
    fcntl.lockf(fd, cmd, length, start)


def getlk(fd, ltype=fcntl.F_WRLCK, start=0, length=0):
    """F_GETLK: (l_type, l_pid) of a lock that would block ltype, or (F_UNLCK, 0)."""
    req = struct.pack("hhqqi", ltype, os.SEEK_SET, start, length, 0)
    res = fcntl.fcntl(fd, fcntl.F_GETLK, req + b"\0" * 4)
    l_type, _, _, _, l_pid = struct.unpack("hhqqi", res[:struct.calcsize("hhqqi")])
    return l_type, l_pid


def mmap_write(path, offset, data):
    """Writes data into a MAP_SHARED mapping of path at offset, msync, unmap."""
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        m = mmap.mmap(fd, size)
        m[offset:offset + len(data)] = data
        m.flush()
        m.close()
    finally:
        os.close(fd)


def mmap_read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        try:
            return m[:]
        finally:
            m.close()
    finally:
        os.close(fd)


def sleep(seconds):
    time.sleep(seconds)


def identity():
    return os.getuid(), os.getgid(), sorted(os.getgroups()), os.getpid()


def errno_name(num):
    return errno.errorcode.get(num, str(num))


def flock(fd, op):
    fcntl.flock(fd, op)


def listdir_types(path):
    """{name: (is_dir, is_symlink, inode)} from scandir (readdir's d_type and d_ino)."""
    return {e.name: (e.is_dir(follow_symlinks=False), e.is_symlink(), e.inode())
            for e in os.scandir(path)}


def make_deep(base, component, depth, data):
    """depth nested directories named component under base, created with dir fds (so the
    paths may exceed PATH_MAX), and a file "f" with data at the bottom; returns the path
    length from base of that file."""
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            os.mkdir(component, 0o755, dir_fd=fds[-1])
            fds.append(os.open(component, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        fd = os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fds[-1])
        os.write(fd, data)
        os.close(fd)
        fd = os.open("f", os.O_RDONLY, dir_fd=fds[-1])
        got = os.read(fd, len(data) + 1)
        os.close(fd)
        assert got == data, got
        return depth * (len(component) + 1) + 1
    finally:
        for fd in fds:
            os.close(fd)


def remove_deep(base, component, depth):
    fds = [os.open(base, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            fds.append(os.open(component, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
        os.unlink("f", dir_fd=fds[-1])
        for i in range(depth, 0, -1):
            os.rmdir(component, dir_fd=fds[i - 1])
    finally:
        for fd in fds:
            os.close(fd)


def create_at(dirpath_fd_path, name, mode=0o644):
    """Opens the directory, then creates name relative to that directory fd."""
    dfd = os.open(dirpath_fd_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, dir_fd=dfd))
    finally:
        os.close(dfd)


def open_dir_fd(path):
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def create_in_dirfd(dfd, name, data):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
    os.write(fd, data)
    os.close(fd)


def splice_roundtrip(src, dst, length):
    """src -> pipe -> dst with splice(2), both directions of a pipe; returns bytes moved."""
    r, w = os.pipe()
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        moved = 0
        while moved < length:
            n = os.splice(fi, w, min(65536, length - moved))
            if n == 0:
                break
            left = n
            while left:
                left -= os.splice(r, fo, left)
            moved += n
        return moved
    finally:
        for fd in (r, w, fi, fo):
            os.close(fd)


def sendfile_copy(src, dst):
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        size = os.fstat(fi).st_size
        off = 0
        while off < size:
            n = os.sendfile(fo, fi, off, size - off)
            if n == 0:
                break
            off += n
        return off
    finally:
        os.close(fi)
        os.close(fo)


def exec_status(path):
    """Runs path (no arguments) and returns its exit status."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(path, [path])
        except OSError as e:
            os._exit(100 + e.errno)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
