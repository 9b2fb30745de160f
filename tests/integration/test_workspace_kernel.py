"""The kernel-mounted workspace ([workspace] mount = kernel, the default, daemon as root):
workspace/ is the backing directory itself, mounted by the kernel over the FUSE mount's
workspace entry (plain ids by default, idmapped with the opt-in idmap = user, always nosuid and
nodev, nosymfollow unless host_symlinks = follow). Unmounting (sbxfs -u, signals, the watchdog)
takes both mounts down; where the workspace cannot be mounted, workspace/ is the FUSE
passthrough under a nosymfollow bind of itself, and the log (a warning, once) and `limits` say
why."""

import errno
import os
import shutil
import subprocess
import tempfile

import pytest

from posixutil import AllowOtherMount
from sbxutil import (REPO_ROOT, ConfMount, is_mounted, isolation_none, limits, stored_owner,
                     uniq, wait_until, started)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a kernel mount needs root")

FALLBACK_LOG = "workspace/ is served through FUSE"


def mount_options(path):
    """The per-mount options of the mount at path (e.g. {'rw', 'nosuid', 'idmapped'})."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                return set(fields[5].split(","))
    return None


def start(mount):
    return started(mount)


@pytest.fixture
def own_mount():
    """Factory of private mounts: own_mount(config_text=None, allow_other=False)."""
    made = []

    def make(config_text=None, allow_other=False):
        tmp = tempfile.mkdtemp(prefix="sbxfs-it-kws-")
        if allow_other:
            m = AllowOtherMount(tmp, config_text)
        elif config_text is not None:
            m = ConfMount(tmp, config_text)
        else:
            from sbxutil import SbxMount
            m = SbxMount(tmp)
        made.append(m)
        return m

    yield make
    for m in made:
        m.discard()


def test_workspace_is_the_kernels_mount_of_the_backing_directory(sbx):
    opts = mount_options(sbx.workspace)
    assert opts is not None, f"{sbx.workspace} is not a mount point"
    assert {"nosuid", "nodev", "nosymfollow"} <= opts, opts
    # Plain ids by default (idmap = handover): nothing to map.
    assert "idmapped" not in opts, opts
    ws, backing = os.stat(sbx.workspace), os.stat(sbx.ws)
    assert (ws.st_dev, ws.st_ino) == (backing.st_dev, backing.st_ino)
    assert FALLBACK_LOG not in sbx.daemon_log()
    lim = limits(sbx)
    assert (lim["workspace"], lim["host_symlinks"]) == ("kernel", "nofollow"), lim


def test_what_a_command_wrote_is_there_when_exit_reads(sbx):
    s = sbx.new_session()
    name = uniq("k")
    path = sbx.workspace / name
    assert not path.exists()  # a negative lookup first: nothing may keep it
    assert sbx.run(s, f"mkdir {name}; echo x > {name}/y") == (b"", b"", 0)
    assert sorted(os.listdir(path)) == ["y"]
    assert sbx.run(s, f"rm -rf {name}; mkdir {name}; echo z > {name}/w; chmod 640 {name}/w") == \
        (b"", b"", 0)
    assert sorted(os.listdir(path)) == ["w"]
    assert (path / "w").read_bytes() == b"z\n"
    assert os.stat(path / "w").st_mode & 0o777 == 0o640


@pytest.mark.skipif(isolation_none(), reason="without a sandbox user there is nothing to hand over")
def test_ids_are_plain_and_the_hosts_files_are_handed_over_before_the_next_command(sbx):
    s = sbx.new_session()
    name = uniq("own")
    uid, gid = sbx.sandbox_ids()
    (sbx.workspace / f"{name}.host").write_text("h")
    # Until a command starts, what the host wrote is root's, through workspace/ and stored.
    for where in (sbx.workspace, sbx.ws):
        st = os.stat(where / f"{name}.host")
        assert (st.st_uid, st.st_gid) == (0, 0), where
    out, err, code = sbx.run(s, f"echo c > {name}.cmd; stat -c '%u %g' {name}.host; "
                                f"echo more >> {name}.host")
    assert (out.decode(), code) == (f"{uid} {gid}\n", 0), err
    for suffix in ("host", "cmd"):
        shown = os.stat(sbx.workspace / f"{name}.{suffix}")
        stored = os.stat(sbx.ws / f"{name}.{suffix}")
        assert (shown.st_uid, shown.st_gid) == (uid, gid), suffix
        assert (stored.st_uid, stored.st_gid) == (uid, gid), suffix
    assert (sbx.workspace / f"{name}.host").read_text() == "hmore\n"


@pytest.mark.skipif(isolation_none(), reason="without a sandbox user no id mapping is needed")
def test_idmap_user_swaps_owner_and_sandbox_ids_on_the_host_side(own_mount):
    m = start(own_mount("[sandbox]\nidmap = user\n"))
    assert "idmapped" in mount_options(m.workspace)
    s = m.new_session()
    name = uniq("own")
    (m.workspace / f"{name}.host").write_text("h")
    assert m.run(s, f"echo c > {name}.cmd; stat -c '%u %g' {name}.host") [2] == 0
    for suffix in ("host", "cmd"):
        shown = os.stat(m.workspace / f"{name}.{suffix}")
        stored = os.stat(m.ws / f"{name}.{suffix}")
        assert (shown.st_uid, shown.st_gid) == (0, 0), suffix
        assert (stored.st_uid, stored.st_gid) == stored_owner(m, 0, 0), suffix
        assert stored_owner(m, 0, 0) == m.sandbox_ids()


def test_planted_symlink_is_not_followed_from_the_host(sbx):
    secret = sbx.tmp / "host-secret"
    secret.write_text("host only\n")
    s = sbx.new_session()
    name = uniq("link")
    assert sbx.run(s, f"ln -s {secret} {name}")[2] == 0
    link = sbx.workspace / name
    assert os.readlink(link) == str(secret)
    with pytest.raises(OSError) as e:
        link.read_text()
    assert e.value.errno == errno.ELOOP
    # The sandbox's own view is unchanged: links there are followed as usual.
    assert sbx.run(s, f"ln -s {name}.t {name}.rel; echo in > {name}.t; cat {name}.rel") == \
        (b"in\n", b"", 0)


def test_a_node_modules_bin_link_fails_on_the_host_with_eloop_and_says_why(sbx):
    """npm's layout, made in the sandbox (`node_modules/.bin/x -> ../x/cli.js`): the sandbox
    runs it, the host's exec of it fails with ELOOP (host_symlinks = nofollow). The daemon's
    log and docs/troubleshooting.md lead from that message to host_symlinks."""
    s = sbx.new_session()
    d = uniq("npm")
    assert sbx.run(s, f"mkdir {d} && cd {d} && "
                      "mkdir -p node_modules/.bin node_modules/x && "
                      "printf '#!/bin/sh\\necho cli\\n' > node_modules/x/cli.js && "
                      "chmod +x node_modules/x/cli.js && "
                      "ln -s ../x/cli.js node_modules/.bin/x && node_modules/.bin/x") == \
        (b"cli\n", b"", 0)
    with pytest.raises(OSError) as e:
        subprocess.run([str(sbx.workspace / d / "node_modules/.bin/x")], timeout=30)
    assert e.value.errno == errno.ELOOP
    assert "host_symlinks = nofollow: opening one fails with ELOOP" in sbx.daemon_log()
    doc = (REPO_ROOT / "docs/troubleshooting.md").read_text()
    entry = doc[doc.index("## `Too many levels of symbolic links`"):]
    entry = entry[:entry.index("\n## ")]
    assert "host_symlinks = follow" in entry and "host_symlinks = nofollow" in entry


def test_host_symlinks_follow(own_mount):
    m = start(own_mount("[workspace]\nhost_symlinks = follow\n"))
    secret = m.tmp / "host-secret"
    secret.write_text("host only\n")
    assert "nosymfollow" not in mount_options(m.workspace)
    s = m.new_session()
    assert m.run(s, f"ln -s {secret} l")[2] == 0
    assert (m.workspace / "l").read_text() == "host only\n"


@pytest.mark.skipif(isolation_none(), reason="the sandbox runs as root: its ids are the host's")
@pytest.mark.parametrize("idmap", ["handover", "user"])
def test_setuid_planted_by_the_sandbox_gives_nothing_on_the_host(own_mount, idmap):
    m = start(own_mount(f"[sandbox]\nidmap = {idmap}\n", allow_other=True))
    s = m.new_session()
    # The sandbox can no longer make one (seccomp: test_setuid_env.py)...
    assert m.run(s, "cp /usr/bin/id idcopy && chmod 4755 idcopy")[2] == 1
    assert os.stat(m.ws / "idcopy").st_mode & 0o6000 == 0
    # ...so plant it as one made before that would be: the sandbox's, setuid.
    uid, gid = m.sandbox_ids()
    os.chown(m.ws / "idcopy", uid, gid)
    os.chmod(m.ws / "idcopy", 0o4755)
    planted = m.workspace / "idcopy"
    # It shows as a setuid file of the sandbox's, or through the swap as one of root's...
    st = os.stat(planted)
    assert st.st_uid == (0 if idmap == "user" else uid) and st.st_mode & 0o4000
    # ...which, run by another user, must not run as root.
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          str(planted), "-u"], capture_output=True, timeout=10)
    assert out.returncode == 0, out.stderr
    assert out.stdout == b"65534\n"


def test_fusermount_alone_is_refused_and_leaves_both_mounts_working(own_mount):
    m = start(own_mount())
    res = subprocess.run(["fusermount3", "-u", str(m.mnt)], capture_output=True, timeout=10)
    assert res.returncode != 0 and b"busy" in res.stderr.lower(), res
    assert is_mounted(m.mnt) and is_mounted(m.workspace)
    s = m.new_session()
    assert m.run(s, "echo ok > f; cat f") == (b"ok\n", b"", 0)
    assert (m.workspace / "f").read_text() == "ok\n"
    assert m.unmount().returncode == 0
    assert m.wait_exit(10) == 0
    assert not is_mounted(m.workspace) and not is_mounted(m.mnt)
    assert os.listdir(m.mnt) == []


def fuse_bind_of_itself(m):
    """Whether m's workspace/ is the FUSE mount's own workspace subtree bound over itself."""
    path = os.path.realpath(m.workspace)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                return fields[3] == "/workspace" and fields[fields.index("-") + 1] == "fuse.sbxfs"
    return False


def test_workspace_mount_fuse_keeps_the_passthrough_under_a_nosymfollow_bind(own_mount):
    m = start(own_mount("[workspace]\nmount = fuse\n"))
    # Not the kernel's mount of the backing directory: the FUSE workspace, bound over itself
    # so that the host follows no link there either.
    assert fuse_bind_of_itself(m)
    assert {"nosuid", "nodev", "nosymfollow"} <= mount_options(m.workspace)
    lim = limits(m)
    assert (lim["workspace"], lim["host_symlinks"]) == ("fuse", "nofollow"), lim
    assert FALLBACK_LOG + ":" not in m.daemon_log()
    s = m.new_session()
    assert m.run(s, "echo ok > f") == (b"", b"", 0)
    assert (m.workspace / "f").read_text() == "ok\n"
    # The bind on the FUSE mount makes a plain fusermount3 -u meet EBUSY, as the kernel mount
    # does; sbxfs -u takes both down.
    res = subprocess.run(["fusermount3", "-u", str(m.mnt)], capture_output=True, timeout=10)
    assert res.returncode != 0 and b"busy" in res.stderr.lower(), res
    assert m.unmount().returncode == 0
    assert m.wait_exit(10) == 0
    assert not is_mounted(m.workspace) and not is_mounted(m.mnt)


def test_workspace_mount_fuse_with_host_symlinks_follow_is_the_bare_passthrough(own_mount):
    m = start(own_mount("[workspace]\nmount = fuse\nhost_symlinks = follow\n"))
    assert not is_mounted(m.workspace)
    lim = limits(m)
    assert (lim["workspace"], lim["host_symlinks"]) == ("fuse", "follow"), lim
    s = m.new_session()
    assert m.run(s, "echo ok > f") == (b"", b"", 0)
    assert (m.workspace / "f").read_text() == "ok\n"
    # A plain fusermount3 -u works when nothing is mounted on the FUSE mount.
    assert m.fusermount_unmount().returncode == 0
    assert m.wait_exit(10) == 0


@pytest.mark.skipif(isolation_none(), reason="without a sandbox user no id mapping is needed")
def test_a_backing_filesystem_that_cannot_be_idmapped_falls_back_to_fuse(own_mount):
    m = own_mount("[workspace]\nmount = kernel\n[sandbox]\nidmap = user\n")
    # ramfs cannot be idmapped.
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(m.ws)], check=True)
    try:
        m.kernel_workspace = lambda: False
        start(m)
        # The FUSE workspace, under its nosymfollow bind: loud in the log and in limits.
        assert fuse_bind_of_itself(m)
        assert "nosymfollow" in mount_options(m.workspace)
        lines = [ln for ln in m.daemon_log().splitlines() if FALLBACK_LOG in ln]
        assert len(lines) == 1 and "cannot be idmapped" in lines[0], m.daemon_log()
        lim = limits(m)
        assert lim["workspace"].startswith("fuse-fallback "), lim
        assert "cannot be idmapped" in lim["workspace"], lim
        assert lim["host_symlinks"] == "nofollow", lim
        s = m.new_session()
        assert m.run(s, "echo ok > f") == (b"", b"", 0)
        assert (m.workspace / "f").read_text() == "ok\n"
        assert os.stat(m.ws / "f").st_uid == stored_owner(m, 0, 0)[0]
        assert m.stop() == []
    finally:
        wait_until(lambda: not is_mounted(m.mnt), 10, "the mount to go")
        subprocess.run(["umount", str(m.ws)], check=True)
    shutil.rmtree(m.tmp, ignore_errors=True)


def test_a_backing_filesystem_that_cannot_be_idmapped_is_kernel_mounted_with_plain_ids(own_mount):
    m = own_mount()
    # ramfs: no idmapped mounts, but plain ids need none.
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(m.ws)], check=True)
    try:
        start(m)
        assert "nosymfollow" in mount_options(m.workspace)
        assert FALLBACK_LOG not in m.daemon_log()
        assert limits(m)["workspace"] == "kernel"
        s = m.new_session()
        assert m.run(s, "echo ok > f") == (b"", b"", 0)
        assert (m.workspace / "f").read_text() == "ok\n"
        assert m.stop() == []
    finally:
        wait_until(lambda: not is_mounted(m.mnt), 10, "the mount to go")
        subprocess.run(["umount", str(m.ws)], check=True)
    shutil.rmtree(m.tmp, ignore_errors=True)


@pytest.mark.skipif(isolation_none(), reason="without a sandbox user nothing is handed over")
def test_idmap_none_keeps_the_hosts_files_the_hosts(own_mount):
    m = start(own_mount("[sandbox]\nidmap = none\n"))
    assert "idmapped" not in mount_options(m.workspace)
    (m.workspace / "hostfile").write_text("h\n")
    s = m.new_session()
    out, err, code = m.run(s, "echo x >> hostfile")
    assert code != 0 and b"Permission denied" in err, (out, err)
    st = os.stat(m.ws / "hostfile")
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert "handover" not in m.daemon_log()
