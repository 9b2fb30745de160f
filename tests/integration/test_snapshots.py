"""snapshots/: a snapshot is one instant of the workspace while commands write (the sandbox is
frozen for its catch-up); files/ is a read-only view that plain tools compare; a restore brings
back contents, modes, symlinks, hard links, xattrs, holes and mtimes, refuses with EBUSY while
something runs (and ends it with force), and leaves the files the host has open as they were;
an archive goes out as tar and comes back in on another mount, and a hostile archive leaves
nothing; space_max and max bound them with ENOSPC and leave nothing half made; a thousand are
listed; an XFS workspace image makes them reflinks."""

import errno
import io
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from contextlib import contextmanager

import pytest

from sbxutil import (Background, ConfMount, bounded, errno_of, errname, isolation_none, parse_status,
                     read_bytes, started, stopped_cleanly, wait_until, write_bytes,
                     write_errno)

MiB = 1 << 20
SPACE_MAX = 48 * MiB
IMPORT_FILES_MAX = 500

CONFIG = f"""[snapshots]
max = 40
space_max = {SPACE_MAX // MiB}M
import_files_max = {IMPORT_FILES_MAX}
"""


@contextmanager
def conf_mount(config_text, prefix="sbxfs-it-snap-"):
    m = started(ConfMount(tempfile.mkdtemp(prefix=prefix), config_text), timeout=30)
    try:
        yield m
    finally:
        stopped_cleanly(m, "snapshots' sbxfs")


@pytest.fixture(scope="module")
def m():
    with conf_mount(CONFIG) as mount:
        yield mount


def snaps(m):
    return m.mnt / "snapshots"


def sh(m, cmd, timeout=60):
    out, err, code = m.run(m.sessions / "default", cmd, timeout=timeout)
    assert code == 0, f"{cmd!r} exited {code}: {err.decode(errors='replace')}"
    return out.decode()


def take(m, name):
    bounded(os.mkdir, snaps(m) / name, timeout=60, what=f"mkdir snapshots/{name}")
    st = snap_status(m, name)
    assert st["state"] == "ready", st
    return st


def snap_status(m, name):
    return parse_status(read_bytes(snaps(m) / name / "status", timeout=10))


def ctl(path, line):
    """One write of line to a ctl file, then its close: the errno of whichever failed."""
    return write_errno(path, line, flags=os.O_WRONLY, at_close=True, timeout=60)


def restore(m, name, line="restore"):
    err = ctl(snaps(m) / name / "ctl", line + "\n")
    assert err == 0, f"{line} of {name}: {errname(err)}"


def empty_workspace(m):
    sh(m, f"find {m.cmd_ws} -mindepth 1 -delete")


def leftovers(m):
    """What a failed or deleted snapshot left in the state dir (removed on the worker)."""
    return sorted(p.name for p in (m.state / "snapshots").iterdir() if p.name.startswith("."))


def test_take_browse_and_diff(m):
    empty_workspace(m)
    sh(m, "mkdir -p src/lib && printf 'a\\n' > src/a.txt && seq 1 20000 > src/lib/n.txt && "
          "ln -s a.txt src/link && printf x > 'odd name'")
    st = take(m, "browse")
    assert int(st["files"]) == 6 and int(st["size"]) > 100000, st
    assert st["origin"] == "taken" and int(st["took_ms"]) >= 0
    if not isolation_none():
        assert st["frozen"] == "yes", st
    copy = m.tmp / "copy"
    shutil.copytree(m.ws, copy, symlinks=True)
    files = snaps(m) / "browse" / "files"
    res = subprocess.run(["diff", "-r", "--no-dereference", str(files), str(copy)],
                         capture_output=True, timeout=30)
    assert res.returncode == 0, res.stdout.decode() + res.stderr.decode()
    assert os.readlink(files / "src" / "link") == "a.txt"
    # Read-only: nothing changes it.
    assert errno_of(write_bytes, files / "src" / "a.txt", b"no") == errno.EROFS
    assert errno_of(os.mkdir, files / "new") == errno.EROFS
    assert errno_of(os.unlink, files / "src" / "a.txt") in (errno.EROFS, errno.EPERM)
    # The workspace moves on; the snapshot does not.
    sh(m, "echo changed > src/a.txt")
    assert (files / "src" / "a.txt").read_bytes() == b"a\n"
    assert sorted(os.listdir(snaps(m))) >= ["browse", "clone", "ctl", "import"]


def test_clone_names_and_rmdir(m):
    name = read_bytes(snaps(m) / "clone", timeout=60).decode().strip()
    assert name and (snaps(m) / name / "files").is_dir()
    assert snap_status(m, name)["state"] == "ready"
    assert errno_of(os.mkdir, snaps(m) / ".hidden") == errno.EINVAL
    assert errno_of(os.mkdir, snaps(m) / "clone") == errno.EEXIST
    assert errno_of(os.mkdir, snaps(m) / name) == errno.EEXIST
    assert errno_of(os.rmdir, snaps(m) / "nosuch") == errno.ENOENT
    # An archive being read keeps its snapshot from going.
    with open(snaps(m) / name / "archive", "rb") as f:
        f.read(512)
        assert errno_of(os.rmdir, snaps(m) / name) == errno.EBUSY
    bounded(os.rmdir, snaps(m) / name)
    assert not (snaps(m) / name).exists()
    wait_until(lambda: not leftovers(m), 20, "the deleted snapshot's tree to go")


def test_progress_shows_and_the_control_plane_answers_meanwhile(m):
    """A copy of 10,000 files runs on the worker: its status shows progress, and a command runs
    to its end while the take still waits. Taken through clone, whose open waits without
    holding snapshots/ (a mkdir holds it, as every mkdir holds its directory, for its time)."""
    empty_workspace(m)
    sh(m, "python3 -c \"import os\nfor d in range(100):\n os.mkdir(f'p{d}')\n"
          " for i in range(100): open(f'p{d}/f{i}', 'w').write('x' * 1000)\"")
    before = set(os.listdir(snaps(m)))
    clone = Background(read_bytes, snaps(m) / "clone", 60, what="read snapshots/clone")

    def taking():
        new = set(os.listdir(snaps(m))) - before
        return new and snap_status(m, new.pop())

    seen = wait_until(taking, 20, "the new snapshot in the listing")
    name = clone.result(60).decode().strip() if seen["state"] != "taking" else None
    if seen["state"] == "taking":  # a slower machine than the copy: watched while it runs
        assert "phase" in seen and "progress_files" in seen, seen
        assert sh(m, "echo answered", timeout=20) == "answered\n"
        name = clone.result(60).decode().strip()
    st = snap_status(m, name)
    assert st["state"] == "ready" and int(st["files"]) == 10100, st
    bounded(os.rmdir, snaps(m) / name)
    empty_workspace(m)


def test_one_instant_while_a_command_writes(m):
    """Two files renamed into place in turn with one counter, a, then z: at any instant a == z
    or a == z + 1. A copy reads a, then a big file m, then z, which the writer has moved on by
    then: without the frozen catch-up, z would be ahead of a."""
    empty_workspace(m)
    sh(m, "echo 0 > a; echo 0 > z; head -c 16M /dev/urandom > m")
    writer = m.sessions / "writer"
    os.mkdir(writer)
    (m.ws / "loop.sh").write_text(
        "i=0; while :; do i=$((i+1)); echo $i > a.t; mv a.t a; echo $i > z.t; mv z.t z; done\n")
    m.submit(writer, "bash loop.sh")
    try:
        wait_until(lambda: int((m.ws / "z").read_text() or 0) > 20, 20, "the writer to run")
        seen = set()
        for n in range(6):
            take(m, "instant")
            files = snaps(m) / "instant" / "files"
            a, z = int((files / "a").read_text()), int((files / "z").read_text())
            assert a in (z, z + 1), f"snapshot {n} is torn: a={a} z={z}"
            seen.add(z)
            bounded(os.rmdir, snaps(m) / "instant")
        assert len(seen) > 1, "the writer did not move between snapshots"
    finally:
        ctl(writer / "ctl", "kill KILL\n")
        read_bytes(writer / "exit", timeout=30)


def ws_stat(m, rel):
    return os.lstat(m.ws / rel)


def test_restore_everything_back(m):
    empty_workspace(m)
    sh(m, "mkdir -p d/sub && echo one > d/f && chmod 751 d/f && ln -s ../d/f d/link && "
          "ln d/f d/hard && truncate -s 2G sparse && echo tail >> sparse && "
          "touch -d '2001-02-03 04:05:06.789' d/old && echo stable > stable && "
          "python3 -c \"import os; os.setxattr('d/f', 'user.tag', b'v1')\"")
    time.sleep(1.2)  # 'stable' older than the snapshot's trust margin: a restore keeps it
    before = {rel: ws_stat(m, rel) for rel in ("d/f", "d/link", "d/hard", "sparse", "d/old",
                                               "stable")}
    take(m, "full")
    sh(m, f"rm -rf {m.cmd_ws}/d {m.cmd_ws}/sparse && mkdir d && echo other > d/f && "
          "ln -s elsewhere d/link && echo new > d/extra")
    restore(m, "full")
    ws = m.ws
    f, hard, old = ws_stat(m, "d/f"), ws_stat(m, "d/hard"), ws_stat(m, "d/old")
    assert (ws / "d/f").read_text() == "one\n" and stat.S_IMODE(f.st_mode) == 0o751
    assert f.st_ino == hard.st_ino and f.st_nlink == 2, "hard link not restored"
    assert os.readlink(ws / "d/link") == "../d/f"
    assert os.getxattr(ws / "d/f", "user.tag") == b"v1"
    assert not (ws / "d/extra").exists()
    assert old.st_mtime_ns == before["d/old"].st_mtime_ns
    assert f.st_mtime_ns == before["d/f"].st_mtime_ns
    sp = ws_stat(m, "sparse")
    assert sp.st_size == 2 * 1024**3 + 5 and sp.st_blocks * 512 < 1 * MiB, "sparse file filled"
    assert ws_stat(m, "stable").st_ino == before["stable"].st_ino, "unchanged file recopied"
    # A changed mode, a replaced symlink, a removed xattr, a broken hard link: back again.
    sh(m, "chmod 600 d/f && ln -sfn nowhere d/link && rm d/hard && echo x > d/hard && "
          "python3 -c \"import os; os.removexattr('d/f', 'user.tag')\"")
    restore(m, "full")
    f, hard = ws_stat(m, "d/f"), ws_stat(m, "d/hard")
    assert stat.S_IMODE(f.st_mode) == 0o751 and f.st_ino == hard.st_ino
    assert os.readlink(ws / "d/link") == "../d/f"
    assert os.getxattr(ws / "d/f", "user.tag") == b"v1"
    st = snap_status(m, "full")
    assert st["restore"] == "ok", st
    # The sandbox sees the restored workspace.
    assert sh(m, "cat d/f; readlink d/link") == "one\n../d/f\n"


def test_restore_a_directory_only(m):
    empty_workspace(m)
    sh(m, "mkdir -p keep part && echo 1 > keep/k && echo 1 > part/p")
    take(m, "parts")
    sh(m, "echo 2 > keep/k && echo 2 > part/p && echo 2 > part/q")
    restore(m, "parts", "restore /workspace/part")
    assert (m.ws / "part/p").read_text() == "1\n" and not (m.ws / "part/q").exists()
    assert (m.ws / "keep/k").read_text() == "2\n"
    assert ctl(snaps(m) / "parts" / "ctl", "restore ../etc\n") == errno.EINVAL
    assert ctl(snaps(m) / "parts" / "ctl", "restore /etc\n") == errno.EINVAL
    assert ctl(snaps(m) / "ctl", "restore parts keep\n") == 0
    assert (m.ws / "keep/k").read_text() == "1\n"
    assert ctl(snaps(m) / "ctl", "restore nosuch\n") == errno.ENOENT


def test_restore_busy_then_force(m):
    empty_workspace(m)
    sh(m, "echo snapshot > held")
    take(m, "busy")
    sh(m, "echo later > held")
    proc = m.sessions / "default" / "procs" / "holder"
    os.mkdir(proc)
    write_bytes(proc / "cmd", f"exec 3< {m.cmd_ws}/held; sleep 1000")
    wait_until(lambda: parse_status(read_bytes(proc / "status"))["state"] == "running", 20,
               "the holder to run")
    with open(m.ws / "held") as host_open:  # the host's open file keeps what it had
        assert ctl(snaps(m) / "busy" / "ctl", "restore\n") == errno.EBUSY
        assert (m.ws / "held").read_text() == "later\n"
        assert snap_status(m, "busy").get("restore") is None
        restore(m, "busy", "restore force")
        assert host_open.read() == "later\n"
    assert (m.ws / "held").read_text() == "snapshot\n"
    wait_until(lambda: parse_status(read_bytes(proc / "status"))["state"] != "running", 20,
               "the holder to be gone")
    bounded(os.rmdir, proc)


def test_a_directorys_snapshot_weighs_what_the_directory_does(m):
    empty_workspace(m)
    sh(m, "mkdir -p big small/sub && head -c 8M /dev/urandom > big/blob && echo a > small/a && "
          "echo b > small/sub/b")
    assert ctl(snaps(m) / "ctl", "take part small\n") == 0
    st = snap_status(m, "part")
    assert st["state"] == "ready" and st["root"] == "small", st
    assert int(st["size"]) == 4 and int(st["space"]) <= 4, st  # a and b, not big/blob
    assert sorted(os.listdir(snaps(m) / "part" / "files")) == ["a", "sub"]
    # Its own restore puts the directory back in place; nothing else is touched.
    sh(m, "echo changed > small/a && echo c > small/c && echo more >> big/blob")
    big = os.stat(m.ws / "big/blob")
    restore(m, "part")
    assert (m.ws / "small/a").read_text() == "a\n" and not (m.ws / "small/c").exists()
    assert os.stat(m.ws / "big/blob").st_size == big.st_size
    sh(m, "echo changed > small/sub/b")
    restore(m, "part", "restore small/sub")
    assert (m.ws / "small/sub/b").read_text() == "b\n"
    # It holds small/ alone; a name is a snapshot's once.
    assert ctl(snaps(m) / "part" / "ctl", "restore big\n") == errno.EINVAL
    assert ctl(snaps(m) / "ctl", "take part small\n") == errno.EEXIST
    assert ctl(snaps(m) / "ctl", "take other ../etc\n") == errno.EINVAL
    assert ctl(snaps(m) / "ctl", "take other nosuch\n") == errno.ENOENT
    assert not (snaps(m) / "other").exists()
    bounded(os.rmdir, snaps(m) / "part")


def start_proc(m, name, cmd):
    proc = m.sessions / "default" / "procs" / name
    os.mkdir(proc)
    write_bytes(proc / "cmd", cmd)
    wait_until(lambda: parse_status(read_bytes(proc / "status"))["state"] == "running", 20,
               f"{name} to run")
    return proc


def proc_state(proc):
    return parse_status(read_bytes(proc / "status"))["state"]


def test_restoring_a_directory_stops_only_what_holds_it(m):
    empty_workspace(m)
    sh(m, "mkdir app other && echo snapshot > app/f && echo x > other/y")
    take(m, "dirs")
    sh(m, "echo later > app/f")
    server = start_proc(m, "server", f"cd {m.cmd_ws}/other && exec sleep 1000")
    try:
        # Nothing holds app/: restored while the server elsewhere runs on.
        restore(m, "dirs", "restore app")
        assert (m.ws / "app/f").read_text() == "snapshot\n"
        sh(m, "echo later > app/f")
        holder = start_proc(m, "holder",
                            f"exec 3< {m.cmd_ws}/app/f; touch {m.cmd_ws}/other/held; "
                            "exec sleep 1000")
        wait_until(lambda: (m.ws / "other/held").exists(), 20, "the holder to hold app/f")
        # Held: refused at close, and status and the log say by what.
        assert ctl(snaps(m) / "dirs" / "ctl", "restore app\n") == errno.EBUSY
        st = snap_status(m, "dirs")
        assert st["restore"] == os.strerror(errno.EBUSY), st
        assert re.fullmatch(rf"\d+ \(sleep\) holds {re.escape(m.cmd_ws)}/app/f", st["restore_busy"]), st
        assert f"restore refused, busy: {st['restore_busy']}" in m.daemon_log(limit=10**6)
        assert (m.ws / "app/f").read_text() == "later\n"
        assert proc_state(holder) == "running" and proc_state(server) == "running"
        # Forced: the holder is stopped, the server is not.
        restore(m, "dirs", "restore force app")
        assert (m.ws / "app/f").read_text() == "snapshot\n"
        wait_until(lambda: proc_state(holder) != "running", 20, "the holder to be gone")
        assert proc_state(server) == "running"
        assert "restore_busy" not in snap_status(m, "dirs")
        bounded(os.rmdir, holder)
    finally:
        ctl(server / "ctl", "kill KILL\n")
        wait_until(lambda: proc_state(server) != "running", 20, "the server to be gone")
        bounded(os.rmdir, server)


def test_archive_round_trip_to_another_mount(m):
    empty_workspace(m)
    sh(m, "mkdir -p t/deep && echo hi > t/a && ln t/a t/b && ln -s a t/c && "
          "truncate -s 64M t/hole && touch -d '1999-12-31 23:59:59.5' t/a && "
          "python3 -c \"import os; os.setxattr('t/a', 'user.k', b'val')\" && "
          f"mkdir -p {'n' * 60}/{'m' * 60} && echo long > {'n' * 60}/{'m' * 60}/{'f' * 90}")
    take(m, "trip")
    data = read_bytes(snaps(m) / "trip" / "archive", timeout=60)
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert "./t/a" in names and f"./{'n' * 60}/{'m' * 60}/{'f' * 90}" in names
    with conf_mount(CONFIG, prefix="sbxfs-it-snap2-") as other:
        write_bytes(snaps(other) / "import" / "trip", data, timeout=60)
        st = snap_status(other, "trip")
        assert st["state"] == "ready" and st["origin"] == "imported", st
        here, there = snaps(m) / "trip" / "files", snaps(other) / "trip" / "files"
        res = subprocess.run(["diff", "-r", "--no-dereference", str(here), str(there)],
                             capture_output=True, timeout=30)
        assert res.returncode == 0, res.stdout.decode() + res.stderr.decode()
        restore(other, "trip")
        a, b = os.lstat(other.ws / "t/a"), os.lstat(other.ws / "t/b")
        assert a.st_ino == b.st_ino and a.st_mtime_ns == ws_stat(m, "t/a").st_mtime_ns
        assert os.getxattr(other.ws / "t/a", "user.k") == b"val"
        assert os.lstat(other.ws / "t/hole").st_blocks == 0
        assert os.readlink(other.ws / "t/c") == "a"


def tar_of(*members):
    """An archive of (TarInfo, data) pairs."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def member(name, kind=tarfile.REGTYPE, data=b"", link="", mode=0o644):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, len(data), link, mode
    return info, data


def import_errno(m, name, data):
    """Writes an archive to import/NAME: the errno of the write or the close (0: made)."""
    def go():
        fd = os.open(snaps(m) / "import" / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = 0
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            err = exc.errno
        try:
            os.close(fd)
        except OSError as exc:
            err = err or exc.errno
        return err
    return bounded(go, timeout=60, what=f"import {name}")


def test_hostile_archives_leave_nothing(m):
    ok = tar_of(member("fine"), member("x", data=b"1"))
    hostile = {
        "dotdot": tar_of(member("../escape", data=b"x")),
        "inner_dotdot": tar_of(member("a/../../escape", data=b"x")),
        "absolute": tar_of(member("/etc/evil", data=b"x")),
        "link_out": tar_of(member("l", tarfile.SYMTYPE, link="../../etc/passwd")),
        "link_abs": tar_of(member("l", tarfile.SYMTYPE, link="/etc/passwd")),
        "hard_out": tar_of(member("h", tarfile.LNKTYPE, link="../x")),
        "hard_none": tar_of(member("h", tarfile.LNKTYPE, link="nosuch")),
        "device": tar_of(member("dev", tarfile.CHRTYPE)),
        "fifo": tar_of(member("fifo", tarfile.FIFOTYPE)),
        "through_link": tar_of(member("d", tarfile.SYMTYPE, link="."),
                               member("d/f", data=b"x")),
        "many": tar_of(*[member(f"f{i}") for i in range(IMPORT_FILES_MAX + 1)]),
        "truncated": ok[:700],
        "garbage": os.urandom(4096),
    }
    # A header declaring a petabyte, then a few bytes.
    huge = tarfile.TarInfo("huge")
    huge.size = 1 << 50
    hostile["huge"] = huge.tobuf(tarfile.PAX_FORMAT) + b"x" * 1024
    for name, data in hostile.items():
        err = import_errno(m, f"bad-{name}", data)
        assert err in (errno.EINVAL, errno.EFBIG, errno.ENOSPC), f"{name}: {errname(err)}"
        assert not (snaps(m) / f"bad-{name}").exists(), name
    assert not (m.tmp / "escape").exists() and not (m.state / "escape").exists()
    wait_until(lambda: not leftovers(m), 20, "the refused imports' trees to go")
    # Set-id bits are dropped; a good archive after all that is taken.
    assert import_errno(m, "good", tar_of(member("suid", data=b"#!", mode=0o4755))) == 0
    mode = os.lstat(snaps(m) / "good" / "files" / "suid").st_mode
    assert stat.S_IMODE(mode) == 0o755, oct(mode)


def test_space_budget_enospc_and_nothing_half_made(m):
    empty_workspace(m)
    sh(m, "head -c 30M /dev/urandom > big")
    used = sum(int(snap_status(m, n).get("space", 0)) for n in os.listdir(snaps(m))
               if n not in ("clone", "ctl", "import"))
    assert used + 30 * MiB <= SPACE_MAX, "earlier tests left too much"
    take(m, "big1")
    assert int(snap_status(m, "big1")["space"]) >= 30 * MiB
    assert errno_of(os.mkdir, snaps(m) / "big2", timeout=60) == errno.ENOSPC
    assert not (snaps(m) / "big2").exists()
    wait_until(lambda: not leftovers(m), 20, "the refused snapshot's tree to go")
    bounded(os.rmdir, snaps(m) / "big1")
    take(m, "big2")
    bounded(os.rmdir, snaps(m) / "big2")
    empty_workspace(m)


@pytest.mark.heavy
def test_files_budget_bounds_inodes_with_enospc_and_nothing_half_made():
    """200,000 empty files take 41 KB of space_max and 200,000 inodes: files_max bounds the
    entries, refused at mkdir with ENOSPC (the reason in the log), with nothing left behind."""
    with conf_mount("[snapshots]\nfiles_max = 150000\n") as m2:
        sh(m2, "mkdir many && cd many && python3 -c 'import os\n"
               "for i in range(200000): os.close(os.open(str(i), os.O_CREAT | os.O_WRONLY))'",
           timeout=120)
        assert errno_of(os.mkdir, snaps(m2) / "many", timeout=120) == errno.ENOSPC
        assert not (snaps(m2) / "many").exists()
        assert "do not fit in what space_max and files_max leave" in m2.daemon_log()
        wait_until(lambda: not leftovers(m2), 30, "the refused snapshot's tree to go")
        sh(m2, f"cd {m2.cmd_ws} && find many -name '1*' -delete")  # 88,889 entries left
        st = take(m2, "fits")
        assert int(st["files"]) <= 150000, st
        # a second one would pass the budget the first one holds
        assert errno_of(os.mkdir, snaps(m2) / "again", timeout=120) == errno.ENOSPC
        wait_until(lambda: not leftovers(m2), 30, "the refused snapshot's tree to go")


SWAP_PY = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
open("swapping", "w").close()
while True:
    for i in range(100):
        libc.renameat2(-100, b"p%d" % i, -100, b"q%d" % i, RENAME_EXCHANGE)
"""


@pytest.mark.heavy
def test_snapshots_taken_while_a_directory_and_a_link_swap_places(m):
    """A command swaps a hundred directories with links of the same names as fast as it can
    (renameat2 RENAME_EXCHANGE): each of 25 snapshots is taken, each name copied as the frozen
    pass finds it (a directory with its file, or a link), none fails with EINVAL."""
    empty_workspace(m)
    sh(m, f"cd {m.cmd_ws} && mkdir real && for i in $(seq 0 99); do mkdir p$i && "
          f"echo in > p$i/f && ln -s real q$i; done")
    (m.ws / "swap.py").write_text(SWAP_PY)
    swapper = m.new_session()
    m.submit(swapper, f"cd {m.cmd_ws} && exec python3 swap.py")
    try:
        wait_until(lambda: (m.ws / "swapping").exists(), 10, "the swapper")
        for i in range(25):
            take(m, f"swap{i}")
            files = snaps(m) / f"swap{i}" / "files"
            for j in range(100):
                for name in (f"p{j}", f"q{j}"):
                    st = os.lstat(files / name)
                    if stat.S_ISDIR(st.st_mode):
                        assert (files / name / "f").read_text() == "in\n"
                    else:
                        assert stat.S_ISLNK(st.st_mode) and os.readlink(files / name) == "real"
    finally:
        assert ctl(swapper / "ctl", "kill KILL\n") in (0, errno.ESRCH)
    for i in range(25):
        bounded(os.rmdir, snaps(m) / f"swap{i}")
    empty_workspace(m)


@pytest.mark.heavy
def test_a_thousand_snapshots_listed_and_kept_across_restarts():
    n = 1000
    with conf_mount(f"[snapshots]\nmax = {n}\ncompress = zstd\n") as m2:
        sh(m2, "echo tiny > t")
        t0 = time.monotonic()
        for i in range(n):
            os.mkdir(snaps(m2) / f"s{i:04d}")
        took = time.monotonic() - t0
        names = os.listdir(snaps(m2))
        assert len(names) == n + 3, len(names)
        assert errno_of(os.mkdir, snaps(m2) / "one-too-many") == errno.ENOSPC
        assert (snaps(m2) / "s0999" / "files" / "t").read_text() == "tiny\n"
        print(f"{n} snapshots of a one-file workspace in {took:.1f} s")
        m2.stop()
        started(m2, timeout=30)
        assert len(os.listdir(snaps(m2))) == n + 3
        assert (snaps(m2) / "s0500" / "files" / "t").read_text() == "tiny\n"
        # compress = zstd: the archive is a zstd stream, and an import takes it back.
        data = read_bytes(snaps(m2) / "s0500" / "archive")
        assert data[:4] == b"\x28\xb5\x2f\xfd", data[:8]
        bounded(os.rmdir, snaps(m2) / "s0999")
        write_bytes(snaps(m2) / "import" / "z", data)
        assert (snaps(m2) / "z" / "files" / "t").read_text() == "tiny\n"


needs_xfs = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mkfs.xfs"),
                               reason="an XFS workspace image needs root and mkfs.xfs")


@needs_xfs
def test_xfs_image_snapshots_are_reflinks():
    with conf_mount("[sandbox]\nworkspace_max = 320M\nworkspace_fs = xfs\n") as x:
        sh(x, "head -c 40M /dev/urandom > blob && mkdir d && echo a > d/a")
        st = take(x, "r")
        assert st["reflinks"] == "yes" and int(st["space"]) == 0, st
        assert (x.state / "image" / "snapshots" / "r" / "tree" / "blob").exists()
        sh(x, "rm blob && echo b > d/a")
        restore(x, "r")
        assert (x.ws / "d/a").read_text() == "a\n" and os.path.getsize(x.ws / "blob") == 40 * MiB
        # Grown at the next start (xfs_growfs, mounted), the snapshots kept in the image.
        size = os.statvfs(x.ws).f_blocks * os.statvfs(x.ws).f_frsize
        x.stop()
        x.config.write_text("[sandbox]\nworkspace_max = 420M\nworkspace_fs = xfs\n")
        started(x, timeout=30)
        assert os.statvfs(x.ws).f_blocks * os.statvfs(x.ws).f_frsize > size + 50 * MiB
        assert (snaps(x) / "r" / "files" / "d" / "a").read_text() == "a\n"
