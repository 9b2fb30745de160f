"""Paths beneath the workspace, walked one component at a time without following a symbolic
link: whatever a sandboxed command plants in the workspace (a link to /etc, a directory
swapped for a link between two steps), a file call of the client stays in the workspace. Each
directory of the walk is held open (O_PATH) and the next name is opened from it (dir_fd) with
O_NOFOLLOW|O_DIRECTORY, so there is no window between a check and a use: each step starts
from a directory already held, and a link at any name is refused."""

import errno
import os
import stat
from contextlib import contextmanager

_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def link_error():
    return OSError(errno.ELOOP, "a symbolic link, which the client does not follow in the "
                   "workspace")


def is_dir_error():
    return OSError(errno.EISDIR, "is a directory")


def lstat_at(dir_fd, name):
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def open_child(dir_fd, name):
    """The directory `name` of dir_fd: ELOOP for a link, ENOTDIR for anything else but a
    directory."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except NotADirectoryError:
        try:
            link = stat.S_ISLNK(lstat_at(dir_fd, name).st_mode)
        except OSError:
            link = False
        if link:
            raise link_error() from None
        raise


def open_dir(workspace, parts, create=False):
    """The directory at `parts` (names, none `.`, `..` or empty) beneath `workspace`, held open
    (O_PATH); with `create`, missing ones are made on the way (mkdir -p)."""
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts:
            try:
                child = open_child(fd, name)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    pass
                child = open_child(fd, name)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_listable(dir_fd):
    """The directory dir_fd names, opened for reading its entries (O_PATH cannot)."""
    return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)


@contextmanager
def parent(workspace, parts):
    """(dir_fd, name): the parent directory of `parts` held open, and the last name ("" when
    parts name the workspace itself)."""
    fd = open_dir(workspace, parts[:-1])
    try:
        yield fd, (parts[-1] if parts else "")
    finally:
        os.close(fd)


def _check_regular(mode):
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise is_dir_error()
    if stat.S_ISLNK(mode):
        raise link_error()
    kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
    raise OSError(errno.EINVAL, f"{kind}, not a regular file: the client reads regular files "
                  "only")


def open_regular(dir_fd, name):
    """(fd, stat): the regular file `name` of dir_fd, open for reading. Anything else is
    refused before it is opened (a FIFO would block the reader for good, a device never end);
    the open itself does not follow a link (O_NOFOLLOW) or wait (O_NONBLOCK), and what it
    opened is checked again, in case a command put something else there in between."""
    if not name:
        raise is_dir_error()
    _check_regular(lstat_at(dir_fd, name).st_mode)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                 dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        _check_regular(st.st_mode)
        return fd, st
    except BaseException:
        os.close(fd)
        raise
