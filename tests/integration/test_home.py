"""The sandbox user's home (src/sandbox/home.c): HOME is out of the workspace, so that caches
(npm's, pip's, yarn's) stay out of it, its snapshots and its backups; it is kept across
restarts, bounded with a bounded workspace, never followed by the daemon, and [session] home
puts HOME back where a user wants it."""

import os
import shutil
import stat
import subprocess
import tempfile
from contextlib import contextmanager

import pytest

from sbxutil import (ConfMount, bounded, isolation_none, is_mounted, parse_status, read_bytes,
                     started, stopped_cleanly)

MiB = 1 << 20
own_uid = os.geteuid() == 0 and not isolation_none()


@contextmanager
def conf_mount(config_text="", prefix="sbxfs-it-home-"):
    m = started(ConfMount(tempfile.mkdtemp(prefix=prefix), config_text), timeout=30)
    try:
        yield m
    finally:
        stopped_cleanly(m, "home's sbxfs")


@pytest.fixture(scope="module")
def m():
    with conf_mount() as mount:
        yield mount


def sh(m, cmd, timeout=60, ok=True):
    out, err, code = m.run(m.sessions / "default", cmd, timeout=timeout)
    if ok:
        assert code == 0, f"{cmd!r} exited {code}: {err.decode(errors='replace')}"
        return out.decode()
    return out.decode(), err.decode(errors="replace"), code


def test_home_is_the_sandbox_users_own_out_of_the_workspace(m):
    home = sh(m, 'printf %s "$HOME"')
    assert home == m.cmd_home
    assert sh(m, "cd && pwd") == home + "\n"
    assert not home.startswith(m.cmd_ws)
    host = os.lstat(m.state / "home")
    assert stat.S_ISDIR(host.st_mode) and stat.S_IMODE(host.st_mode) == 0o700
    if own_uid:
        # whoami's entry agrees, and the host's copy is the sandbox's, not root's
        assert sh(m, "getent passwd sbxfs | cut -d: -f6") == "/home/sbxfs\n"
        assert (host.st_uid, host.st_gid) == m.sandbox_ids()
    # A context's interpreter gets the same HOME.
    ctx = m.mnt / "contexts" / m.uniq("c")
    bounded(os.mkdir, ctx, what="mkdir context")
    assert f"HOME={home}\n" in (ctx / "env").read_text()
    os.rmdir(ctx)


def test_caches_stay_out_of_the_workspace_and_its_snapshots(m):
    home = m.cmd_home
    if shutil.which("npm"):
        assert sh(m, "npm config get cache").strip() == f"{home}/.npm"
    before = sorted(os.listdir(m.ws))
    sh(m, "mkdir -p ~/.cache/pip ~/.npm && head -c 4M /dev/urandom > ~/.cache/pip/blob && "
          f"head -c 4M /dev/urandom > ~/.npm/blob && echo w > {m.cmd_ws}/w")
    assert sorted(os.listdir(m.ws)) == sorted(before + ["w"])
    assert os.path.getsize(m.state / "home" / ".cache" / "pip" / "blob") == 4 * MiB
    snaps = m.mnt / "snapshots"
    bounded(os.mkdir, snaps / "nocache", timeout=60, what="mkdir snapshots/nocache")
    st = parse_status(read_bytes(snaps / "nocache" / "status", timeout=10))
    assert st["state"] == "ready" and int(st["size"]) < MiB, st
    assert ".cache" not in os.listdir(snaps / "nocache" / "files")
    os.rmdir(snaps / "nocache")


def test_session_home_puts_it_back():
    with conf_mount("[session]\nhome = /workspace\n") as x:
        assert sh(x, 'printf %s "$HOME"') == "/workspace"


def test_the_home_survives_a_restart_and_its_links_are_never_followed():
    canary = tempfile.NamedTemporaryFile(prefix="sbxfs-home-canary-", delete=False)
    canary.write(b"host\n")
    canary.close()
    os.chmod(canary.name, 0o644)
    before = os.lstat(canary.name)
    try:
        with conf_mount() as x:
            sh(x, f"echo registry=x > ~/.npmrc && ln -s {canary.name} ~/canary && "
                  f"ln -s / ~/rootlink && mkdir ~/d && ln -s {canary.name} ~/d/f")
            x.stop()
            x.start(timeout=30)
            assert sh(x, "cat ~/.npmrc") == "registry=x\n"
            assert sh(x, "readlink ~/canary") == canary.name + "\n"
            assert os.path.islink(x.state / "home" / "canary")
        after = os.lstat(canary.name)
        assert (after.st_uid, after.st_gid, after.st_mode) == \
            (before.st_uid, before.st_gid, before.st_mode)
        assert open(canary.name, "rb").read() == b"host\n"
    finally:
        os.unlink(canary.name)


@pytest.mark.skipif(os.geteuid() != 0, reason="home_max loop-mounts an image: root only")
def test_a_bounded_home_gives_enospc_and_leaves_the_workspace_alone():
    with conf_mount("[sandbox]\nworkspace_max = 96M\nhome_max = 16M\n") as x:
        home = x.state / "home"
        assert is_mounted(home)
        vfs = os.statvfs(home)
        assert vfs.f_blocks * vfs.f_frsize <= 16 * MiB
        out, err, code = sh(x, "head -c 24M /dev/zero > ~/big", ok=False)
        assert code != 0 and "No space left on device" in err, (code, err)
        # the workspace has its own room
        sh(x, f"head -c 24M /dev/zero > {x.cmd_ws}/big && rm ~/big")
        assert os.path.getsize(x.state / "home.img") == 16 * MiB
    # "auto": a quarter of workspace_max, 64M at least
    with conf_mount("[sandbox]\nworkspace_max = 400M\n") as x:
        assert os.path.getsize(x.state / "home.img") == 100 * MiB
        assert sh(x, "stat -c %U ~") == ("sbxfs\n" if own_uid else "root\n")


def test_home_max_is_checked():
    for bad in ("512K", "-1", "1GB", "auto1"):
        m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-home-"), f"[sandbox]\nhome_max = {bad}\n")
        try:
            res = subprocess.run(m.command_line(), capture_output=True, timeout=30)
            assert res.returncode != 0 and b"home_max" in res.stderr, (bad, res)
        finally:
            m.abort()
            m.cleanup_tmp()
