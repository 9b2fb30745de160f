"""workspace/ shows what a command changed as soon as the command's exit can be read.

workspace/ served by the daemon ([workspace] mount = fuse) lets the kernel keep names, absences,
attributes, listings and data for cache_timeout; these tests first make the kernel cache the
old state through workspace/, let a command change the backing directory, read `exit`, and
then expect the new state through workspace/ at once. cache_timeout is an hour here, so a
stale cache cannot expire on its own during a test. Both data paths: passthrough (the kernel
uses the backing files) and daemon I/O (the mount's own page cache). And the same tests against
the kernel-mounted workspace (mount = kernel, as root), which shares the sandbox's inodes.
"""

import errno
import os
import stat
import tempfile

import pytest

from sbxutil import ConfMount, uniq, stopped_cleanly

CONFIGS = {
    "kernel": "[workspace]\nmount = kernel\nhost_symlinks = follow\n",
    "passthrough": "[workspace]\nmount = fuse\ncache_timeout = 3600\n",
    "daemon-io": "[workspace]\nmount = fuse\ncache_timeout = 3600\npassthrough = no\n",
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def fm(request):
    if request.param == "kernel" and os.geteuid() != 0:
        pytest.skip("a kernel-mounted workspace needs root")
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-coh-"), CONFIGS[request.param])
    try:
        m.start()
        assert m.kernel_workspace() == (request.param == "kernel")
        yield m
    finally:
        stopped_cleanly(m)


@pytest.fixture
def case(fm):
    """(mount, session, directory name, path of it through workspace/), made by a command."""
    s = fm.new_session()
    name = uniq("coh")
    assert fm.run(s, f"mkdir {name}") == (b"", b"", 0)
    return fm, s, name, fm.workspace / name


def run_ok(m, s, cmd):
    out, err, code = m.run(s, cmd)
    assert code == 0, (cmd, out, err)
    return out


def enoent(path):
    with pytest.raises(FileNotFoundError):
        os.stat(path)


def test_create_after_a_negative_lookup(case):
    m, s, d, w = case
    enoent(w / "out.txt")
    enoent(w / "out.txt")  # now surely cached as absent
    run_ok(m, s, f"echo hi > {d}/out.txt")
    assert (w / "out.txt").read_text() == "hi\n"
    assert "out.txt" in os.listdir(w)


def test_directory_replaced(case):
    m, s, d, w = case
    run_ok(m, s, f"mkdir {d}/sub; echo x > {d}/sub/y")
    assert os.listdir(w / "sub") == ["y"]
    assert (w / "sub" / "y").read_text() == "x\n"
    run_ok(m, s, f"rm -rf {d}/sub; mkdir {d}/sub; echo z > {d}/sub/w")
    assert os.listdir(w / "sub") == ["w"]
    assert (w / "sub" / "w").read_text() == "z\n"
    enoent(w / "sub" / "y")


def test_listing_of_a_kept_directory_gains_and_loses_names(case):
    m, s, d, w = case
    run_ok(m, s, f"touch {d}/a {d}/b")
    assert sorted(os.listdir(w)) == ["a", "b"]
    run_ok(m, s, f"rm {d}/a; touch {d}/c")
    assert sorted(os.listdir(w)) == ["b", "c"]
    enoent(w / "a")
    assert os.stat(w).st_nlink == os.stat(m.ws / d).st_nlink


def test_rename(case):
    m, s, d, w = case
    run_ok(m, s, f"echo one > {d}/a; mkdir {d}/sub")
    assert (w / "a").read_text() == "one\n"
    enoent(w / "sub" / "b")
    run_ok(m, s, f"mv {d}/a {d}/sub/b")
    enoent(w / "a")
    assert (w / "sub" / "b").read_text() == "one\n"
    assert os.listdir(w / "sub") == ["b"]
    run_ok(m, s, f"mv {d}/sub {d}/moved")
    enoent(w / "sub")
    assert (w / "moved" / "b").read_text() == "one\n"


def test_chmod(case):
    m, s, d, w = case
    run_ok(m, s, f"echo x > {d}/f; chmod 644 {d}/f; mkdir {d}/sub")
    assert stat.S_IMODE(os.stat(w / "f").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(w / "sub").st_mode) != 0o700
    run_ok(m, s, f"chmod 600 {d}/f; chmod 700 {d}/sub")
    assert stat.S_IMODE(os.stat(w / "f").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(w / "sub").st_mode) == 0o700


def test_mtime(case):
    m, s, d, w = case
    run_ok(m, s, f"echo x > {d}/f")
    os.stat(w / "f")
    run_ok(m, s, f"touch -d @1000000000 {d}/f")
    assert os.stat(w / "f").st_mtime == 1000000000


def test_truncate_seen_by_path_and_by_open_file(case):
    m, s, d, w = case
    run_ok(m, s, f"printf 0123456789 > {d}/f")
    fd = os.open(w / "f", os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == 10
        assert os.pread(fd, 100, 0) == b"0123456789"
        run_ok(m, s, f"truncate -s 3 {d}/f")
        assert os.stat(w / "f").st_size == 3
        assert os.fstat(fd).st_size == 3
        assert os.pread(fd, 100, 0) == b"012"
    finally:
        os.close(fd)
    assert (w / "f").read_bytes() == b"012"


def test_overwrite_in_place_same_size(case):
    m, s, d, w = case
    run_ok(m, s, f"printf AAAA > {d}/f")
    assert (w / "f").read_bytes() == b"AAAA"
    fd = os.open(w / "f", os.O_RDONLY)
    try:
        assert os.pread(fd, 4, 0) == b"AAAA"
        # Same size, and the same mtime as far as a coarse clock goes: only the event tells.
        run_ok(m, s, f"printf BBBB | dd of={d}/f conv=notrunc status=none; "
                     f"touch -r {d}/f {d}/f")
        assert (w / "f").read_bytes() == b"BBBB"
        assert os.pread(fd, 4, 0) == b"BBBB"
    finally:
        os.close(fd)


def test_append_grows_the_size(case):
    m, s, d, w = case
    run_ok(m, s, f"echo one > {d}/log")
    assert (w / "log").read_text() == "one\n"
    run_ok(m, s, f"echo two >> {d}/log")
    assert os.stat(w / "log").st_size == 8
    assert (w / "log").read_text() == "one\ntwo\n"


def test_file_replaced_by_symlink_and_back(case):
    m, s, d, w = case
    run_ok(m, s, f"echo data > {d}/t; ln -s t {d}/l")
    assert os.readlink(w / "l") == "t"
    run_ok(m, s, f"rm {d}/l; ln -s elsewhere {d}/l")
    assert os.readlink(w / "l") == "elsewhere"
    run_ok(m, s, f"rm {d}/l; echo plain > {d}/l")
    assert stat.S_ISREG(os.lstat(w / "l").st_mode)
    assert (w / "l").read_text() == "plain\n"


def test_unlink_and_hard_link(case):
    m, s, d, w = case
    run_ok(m, s, f"echo x > {d}/f")
    assert os.stat(w / "f").st_nlink == 1
    run_ok(m, s, f"ln {d}/f {d}/g")
    assert os.stat(w / "f").st_nlink == 2
    assert (w / "g").read_text() == "x\n"
    run_ok(m, s, f"rm {d}/f")
    enoent(w / "f")
    assert os.stat(w / "g").st_nlink == 1


def test_deep_tree_made_and_removed(case):
    m, s, d, w = case
    run_ok(m, s, f"mkdir -p {d}/a/b/c && echo deep > {d}/a/b/c/f")
    assert (w / "a" / "b" / "c" / "f").read_text() == "deep\n"
    run_ok(m, s, f"rm -rf {d}/a && mkdir -p {d}/a/b && echo new > {d}/a/b/g")
    enoent(w / "a" / "b" / "c")
    assert os.listdir(w / "a" / "b") == ["g"]


def test_many_changes_in_one_command(case):
    """More events than one read of the queue holds, all applied before exit."""
    m, s, d, w = case
    run_ok(m, s, f"(cd {d} && for i in $(seq 1 3000); do echo $i > f$i; done)")
    assert len(os.listdir(w)) == 3000
    enoent(w / "g1")
    run_ok(m, s, f"(cd {d} && for i in $(seq 1 3000); do mv f$i g$i; done)")
    assert len(os.listdir(w)) == 3000
    enoent(w / "f1")
    assert (w / "g2999").read_text() == "2999\n"


def test_background_process_changes_seen_at_its_end(case):
    m, s, d, w = case
    enoent(w / "bg.txt")
    name = uniq("bg")
    (s / "procs" / name).mkdir()
    (s / "procs" / name / "cmd").write_text(f"sleep 0.3; echo bg > {d}/bg.txt\n")
    assert m.read(s / "procs" / name, "exit") == b"0\n"
    assert (w / "bg.txt").read_text() == "bg\n"


def test_host_changes_seen_by_the_next_command(case):
    m, s, d, w = case
    (w / "h.txt").write_text("from host\n")
    (w / "hd").mkdir()
    (w / "hd" / "x").write_text("x\n")
    assert run_ok(m, s, f"cat {d}/h.txt; ls {d}/hd") == b"from host\nx\n"
    os.rename(w / "h.txt", w / "h2.txt")
    os.chmod(w / "h2.txt", 0o600)
    assert run_ok(m, s, f"ls {d}; stat -c %a {d}/h2.txt") == b"h2.txt\nhd\n600\n"


def test_host_work_between_commands_keeps_its_cache_right(case):
    """Changes the host made through worksp/ while nothing ran, then one by a command."""
    m, s, d, w = case
    for i in range(200):
        (w / f"h{i}").write_text(str(i))
    run_ok(m, s, f"rm {d}/h7; echo changed > {d}/h8")
    enoent(w / "h7")
    assert (w / "h8").read_text() == "changed\n"
    assert (w / "h9").read_text() == "9"
    assert len(os.listdir(w)) == 199


def test_each_of_many_short_commands_is_seen_at_its_exit(case):
    """Short commands one after another, each checked the moment its exit can be read: a
    report read in the same batch as the command's start comes after the loop caught up
    with the workspace, so the end waits for one more catch-up."""
    m, s, d, w = case
    for i in range(60):
        (w / f"k{i}").write_text("k")
    for i in range(60):
        enoent(w / f"n{i}")
        run_ok(m, s, f"rm {d}/k{i}; echo {i} > {d}/n{i}")
        enoent(w / f"k{i}")
        assert (w / f"n{i}").read_text() == f"{i}\n"


def test_error_exit_still_publishes_changes(case):
    m, s, d, w = case
    enoent(w / "e")
    out, err, code = m.run(s, f"echo e > {d}/e; exit 3")
    assert code == 3
    assert (w / "e").read_text() == "e\n"
    with pytest.raises(OSError) as exc:
        os.stat(w / "nothing")
    assert exc.value.errno == errno.ENOENT



@pytest.fixture
def small_queue_mount():
    """A FUSE-workspace mount whose inotify queue holds 64 events (the limit applies when the
    daemon makes its instance, at start; it is put back at once)."""
    knob = "/proc/sys/fs/inotify/max_queued_events"
    old = open(knob).read()
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-coh-"), CONFIGS["passthrough"])
    try:
        with open(knob, "w") as f:
            f.write("64")
        try:
            m.start()
        finally:
            with open(knob, "w") as f:
                f.write(old)
        yield m
    finally:
        stopped_cleanly(m)


def test_queue_overflow_invalidates_everything(small_queue_mount):
    """A command makes more changes than the queue holds (it overflows): the kernel forgets
    everything it kept, absences included, rather than keep a stale part of it."""
    m = small_queue_mount
    s = m.new_session()
    w = m.workspace
    run_ok(m, s, "mkdir sub; echo old > sub/keep; touch gone")
    assert (w / "sub" / "keep").read_text() == "old\n"
    assert os.path.exists(w / "gone")
    enoent(w / "n999")
    enoent(w / "sub" / "late")
    run_ok(m, s, "touch $(seq -f n%g 0 999); echo new > sub/keep; echo late > sub/late; rm gone")
    assert "overflow" in m.daemon_log()
    assert (w / "sub" / "late").read_text() == "late\n"
    assert (w / "sub" / "keep").read_text() == "new\n"
    assert os.stat(w / "n999").st_size == 0
    enoent(w / "gone")
    assert len(os.listdir(w)) == 1001
