"""create_backup, restore_backup, delete_backup: a backup is a snapshot of the directory asked
for (snapshots/ctl's `take NAME DIR`: it weighs what the directory does, taken at one instant
even while commands run); the dict names it and the directory, and restoring it restores that
directory in place."""

import os
import secrets
import time

from . import osio
from .errors import ValidationError, map_error
from .files import workspace_parts
from .fsio import write_control
from .names import check_name


def _snapshot_dir(sandbox, backup):
    if not isinstance(backup, dict):
        raise ValidationError("a backup dict {'id', 'dir'} is required")
    return os.path.join(sandbox.mountpoint, "snapshots", check_name(backup.get("id"), "backup"))


def create_backup(session, dir, name=None):
    """dir: the workspace or a directory in it, as commands see it (relative: from the
    session's cwd); name: a label kept in the returned dict."""
    parts = workspace_parts(session, dir)
    id = f"backup-{int(time.time() * 1000):x}-{secrets.token_hex(4)}"
    try:
        write_control(os.path.join(session.sandbox.mountpoint, "snapshots", "ctl"),
                      f"take {id} {'/'.join(parts)}\n")
    except OSError as exc:
        raise map_error(exc, "backup", f"backup of {dir}") from None
    backup = {"id": id, "dir": "/".join(["/workspace", *parts])}
    if name is not None:
        backup["name"] = str(name)
    return backup


def restore_backup(session, backup, force=False):
    """force: end what runs in the sandbox first (else ResourceBusyError while something
    runs)."""
    path = _snapshot_dir(session.sandbox, backup)
    dir = backup.get("dir", "/workspace")
    parts = workspace_parts(session, dir)
    line = " ".join(["restore", *(["force"] if force else []), *(["/".join(parts)] if parts
                                                                  else [])])
    try:
        write_control(os.path.join(path, "ctl"), line + "\n")
    except OSError as exc:
        raise map_error(exc, "backup", f"restore of backup {backup['id']}") from None
    return {"success": True, "id": backup["id"], "dir": dir}


def delete_backup(session, backup):
    path = _snapshot_dir(session.sandbox, backup)
    try:
        osio.rmdir(path)
    except OSError as exc:
        raise map_error(exc, "backup", f"backup {backup['id']}") from None
    return {"success": True, "id": backup["id"]}
