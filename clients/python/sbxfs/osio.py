"""The directory calls of the client's modules, by path: a path under a remote root
(remote.py) goes to that sandbox over HTTP, any other to the local filesystem (a mount)."""

import errno
import os
import stat as st

from .remote import remote_of


def mkdir(path):
    at = remote_of(path)
    if at is None:
        return os.mkdir(path)
    at[0].mkdir(at[1])


def rmdir(path):
    at = remote_of(path)
    if at is None:
        return os.rmdir(path)
    if at[0].stat(at[1])["type"] != "directory":
        raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    at[0].remove(at[1])


def listdir(path):
    at = remote_of(path)
    if at is None:
        return os.listdir(path)
    return [e["name"] for e in at[0].listdir(at[1])]


def isdir(path):
    at = remote_of(path)
    if at is None:
        return os.path.isdir(path)
    try:
        return at[0].stat(at[1])["type"] == "directory"
    except OSError:
        return False


def stat_type(path):
    """'file', 'directory', 'symlink' or 'other' (no link followed); OSError if none."""
    at = remote_of(path)
    if at is not None:
        return at[0].stat(at[1])["type"]
    mode = os.lstat(path).st_mode
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "directory"
    return "symlink" if st.S_ISLNK(mode) else "other"
