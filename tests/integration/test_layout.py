"""The top level of the mount: README, workspace/, sessions/."""

import errno
import os
import stat

from sbxutil import bounded, errno_of, errname, read_bytes, write_errno


def test_root_lists_readme_workspace_sessions(sbx):
    names = set(bounded(os.listdir, sbx.mnt))
    assert {"README", "workspace", "sessions"} <= names
    assert stat.S_ISREG(os.stat(sbx.mnt / "README").st_mode)
    assert stat.S_ISDIR(os.stat(sbx.workspace).st_mode)
    assert stat.S_ISDIR(os.stat(sbx.sessions).st_mode)


def test_readme_is_readable_text(sbx):
    data = read_bytes(sbx.mnt / "README")
    assert len(data) > 50
    text = data.decode("utf-8")
    for word in ("workspace", "sessions", "cmd", "stdout"):
        assert word in text, f"README does not mention {word}"
    assert os.stat(sbx.mnt / "README").st_size == len(data)


def test_readme_is_read_only(sbx):
    before = read_bytes(sbx.mnt / "README")
    err = errno_of(os.open, sbx.mnt / "README", os.O_WRONLY)
    if err == 0:  # opened: then the write itself must fail
        err = write_errno(sbx.mnt / "README", b"overwrite", flags=os.O_WRONLY)
    assert err in (errno.EACCES, errno.EPERM, errno.EROFS), errname(err)
    assert errno_of(os.truncate, sbx.mnt / "README", 0) != 0
    assert read_bytes(sbx.mnt / "README") == before


def test_sessions_dir_has_clone_and_default(sbx):
    names = set(bounded(os.listdir, sbx.sessions))
    assert {"clone", "default"} <= names
    assert stat.S_ISDIR(os.stat(sbx.sessions / "default").st_mode)
    assert stat.S_ISREG(os.stat(sbx.sessions / "clone").st_mode)
