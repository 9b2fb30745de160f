"""`sbxfs -u` as a transaction (issue 30): it unmounts the mount and everything mounted on it, or
changes nothing. A busy mount is refused before anything is touched, naming what holds it; an
unmount that fails all the same (a holder no process shows: a loop device on a file of the
mount) puts every cover back, so the workspace and snapshots/ never follow links; -z stops the
daemon whatever holds the mount, and what held it gets ENOTCONN."""

import errno
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from sbxutil import (SbxMount, errno_of, is_mounted, limits, mounts_on,
                     run_proc, sbxfs_binary, started, stopped_cleanly, uniq, wait_until)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the covers are mounted by a root daemon"),
    pytest.mark.sbx_timeout(180),
]


def unmount(m, *flags):
    res = run_proc([str(sbxfs_binary()), "-u", *flags, str(m.mnt)], timeout=60)
    return res.returncode, res.stderr.decode(errors="replace")


def with_link(m):
    """A link the sandbox planted to a host file, in workspace/ and in a snapshot."""
    outside = m.tmp / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret").write_text("secret\n")
    os.chmod(outside, 0o755)
    s = m.new_session()
    assert m.run(s, f"ln -sf {outside / 'secret'} link")[2] == 0
    snap = uniq("snap")
    os.mkdir(m.mnt / "snapshots" / snap)
    return [m.workspace / "link", m.mnt / "snapshots" / snap / "files" / "link"]


def follows_none(m, links):
    for link in links:
        assert errno_of(os.open, link, os.O_RDONLY) == errno.ELOOP, link
    assert limits(m)["host_symlinks"] == "nofollow", limits(m)


@pytest.fixture
def mount():
    m = started(SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-umount-")))
    try:
        yield m
    finally:
        if m.alive() or is_mounted(m.mnt):
            stopped_cleanly(m, "unmount test sbxfs")
        m.discard()


@pytest.mark.parametrize("hold", ["fd", "cwd", "mmap"])
def test_a_busy_mount_is_refused_with_its_holders_and_left_whole(mount, hold):
    m = mount
    links = with_link(m)
    covers = mounts_on(m.mnt)
    assert str(m.workspace) in covers and str(m.mnt / "snapshots") in covers, covers
    (m.workspace / "data").write_bytes(b"x" * 4096)
    if hold == "fd":
        holder = subprocess.Popen(["tail", "-f", str(m.mnt / "README")],
                                  stdout=subprocess.DEVNULL)
    elif hold == "cwd":
        holder = subprocess.Popen(["sleep", "600"], cwd=m.workspace)
    else:
        holder = subprocess.Popen(["python3", "-c", "import mmap, sys, time; "
                                   "f = open(sys.argv[1], 'rb'); "
                                   "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); "
                                   "f.close(); print('mapped', flush=True); time.sleep(600)",
                                   str(m.workspace / "data")], stdout=subprocess.PIPE)
        assert holder.stdout.readline() == b"mapped\n"
    try:
        time.sleep(0.2)
        code, err = unmount(m)
        assert code == 1, err
        assert f"held by {holder.pid} (" in err and "nothing was unmounted" in err, err
        assert mounts_on(m.mnt) == covers and m.alive()
        follows_none(m, links)
        assert m.run(m.new_session(), "echo still")[0] == b"still\n"
    finally:
        holder.kill()
        holder.wait()
    # closed: the second -u unmounts it all, and the daemon is gone
    code, err = unmount(m)
    assert code == 0, err
    assert not is_mounted(m.mnt) and mounts_on(m.mnt) == []
    assert m.wait_exit(10) == 0


def test_an_unmount_refused_by_a_hidden_holder_puts_every_cover_back(mount):
    """A loop device on a file of the mount holds it with no process to name: the covers were
    detached when fusermount3 met EBUSY, and -u puts them back."""
    if not os.path.exists("/dev/loop-control") or not shutil.which("losetup"):
        pytest.skip("no loop devices")
    m = mount
    links = with_link(m)
    covers = mounts_on(m.mnt)
    loop = subprocess.run(["losetup", "-r", "-f", "--show", str(m.mnt / "README")],
                          capture_output=True, text=True, timeout=30)
    if loop.returncode != 0:
        pytest.skip(f"losetup: {loop.stderr}")
    dev = loop.stdout.strip()
    try:
        code, err = unmount(m)
        assert code != 0, err
        assert "it is mounted as it was" in err, err
        assert mounts_on(m.mnt) == covers and is_mounted(m.mnt)
        follows_none(m, links)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True, timeout=30)
    wait_until(lambda: unmount(m)[0] == 0, 20, "-u once the loop device is gone")
    assert m.wait_exit(10) == 0


def test_more_mounts_than_it_can_see_are_refused_whole(mount):
    """70 mounts the host made in workspace/: past the 64 -u keeps track of, it could miss a
    holder or a cover, so it unmounts nothing and says why."""
    m = mount
    points = []
    try:
        for i in range(70):
            p = m.workspace / f"m{i:02d}"
            p.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "none", str(p)],
                           check=True, timeout=30)
            points.append(p)
        before = mounts_on(m.mnt)
        code, err = unmount(m)
        assert code == 1 and "more than 64 mounts on it: nothing was unmounted" in err, err
        assert mounts_on(m.mnt) == before and m.alive()
    finally:
        for p in reversed(points):
            subprocess.run(["umount", str(p)], check=False, timeout=30)
    code, err = unmount(m)
    assert code == 0, err
    assert m.wait_exit(10) == 0


def test_lazy_unmount_stops_the_daemon_and_leaves_nothing_that_follows(mount):
    m = mount
    links = with_link(m)
    tail = subprocess.Popen(["tail", "-f", str(m.mnt / "README")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    fd = os.open(m.workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        time.sleep(0.2)
        code, err = unmount(m, "-z")
        assert code == 0, err
        assert m.wait_exit(10) == 0
        assert not is_mounted(m.mnt) and mounts_on(m.mnt) == []
        # what held the mount: the control tree is gone, the detached workspace follows no link
        assert errno_of(os.stat, m.mnt / "README") in (errno.ENOENT, 0)
        assert errno_of(os.open, "link", os.O_RDONLY, dir_fd=fd) == errno.ELOOP
        tail.wait(timeout=10)  # "no files remaining"
        assert b"Transport endpoint is not connected" in tail.stderr.read()
    finally:
        os.close(fd)
        if tail.poll() is None:
            tail.kill()
            tail.wait()
    del links


@pytest.mark.no_daemon
def test_unmount_of_a_path_that_is_no_mount_says_so_and_detaches_nothing():
    """-u of a directory that is no sbxfs mount, with a mount below it: fusermount3's refusal,
    and the mount below stays (-u detaches what is on an sbxfs mount only)."""
    d = tempfile.mkdtemp(prefix="sbxfs-it-nomount-")
    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    subprocess.run(["mount", "-t", "tmpfs", "none", sub], check=True, timeout=30)
    try:
        res = run_proc([str(sbxfs_binary()), "-u", d], timeout=30)
        assert res.returncode != 0
        assert b"mounted as it was" not in res.stderr and res.stderr, res
        assert is_mounted(sub)
    finally:
        subprocess.run(["umount", sub], check=False, timeout=30)
        shutil.rmtree(d, ignore_errors=True)
