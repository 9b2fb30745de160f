"""Checkout limits: what a hostile repository can make sbxfs-git take of the host.

sbxfs-git runs outside the sandbox, so what it uses is the host's. It runs in a cgroup of its
own below its session's group (the session's memory limit and process count apply to it),
under RLIMIT_AS and RLIMIT_FSIZE ([session] git_file_max), and refuses a blob larger than
[session] git_object_max before reading it (libgit2 reads a blob whole): `error too-large`. A
checkout that needs more memory than its session has is OOM-killed and reads `error
too-large` too. Either way the session and the daemon go on.

The sources, in a host directory that git_local_roots allows: a 1.3 MB repository whose one
commit holds a 300 MiB blob of zeros, one with a 2 MiB blob, and one of ten 30 MiB files of
random bytes, larger than a session's memory. Sessions have 256M of their own
(memory_max 320M less memory_reserve 64M); a new session's group is made for each test, so its
peak memory (which counts sbxfs-git's: its group is below) is that test's.
"""

import hashlib
import os
import re
import shutil
import struct
import zlib
import signal
import socket
import tempfile
from pathlib import Path

import pytest

from sbxutil import (ConfMount, procs_matching, read_bytes, run_proc, sleep_tag, started,
                     stopped_cleanly, uniq, wait_until, write_errno)
from test_checkout import GitDaemon, git_env

GIT = shutil.which("git", path="/usr/bin:/bin") or "/usr/bin/git"
BIG = 300 << 20
MEDIUM = 2 << 20
WIDE_FILE = 30 << 20
WIDE_FILES = [f"f{i}" for i in range(10)]
SESSION_MAX = 256 << 20
OBJECT_MAX = 100 << 20  # the default
CG_ROOT = "/sys/fs/cgroup"
FINAL_RE = re.compile(r"(ok [0-9a-f]{40} \S+ \S+|error ([a-z-]+): (.*))")
CONF = """[sandbox]
memory_max = 320M
memory_reserve = 64M
tmp_size = 32M
shm_size = 16M
[session]
git_allow_private = yes
git_local_roots = {base}
"""


def git(repo, *args, stdin=None):
    res = run_proc([GIT, "-C", str(repo), *args], env=git_env("/nonexistent"), timeout=120,
                   stdin=stdin)
    assert res.returncode == 0, res.stderr
    return res.stdout.decode().strip()


def repo_with_blob(path, size):
    """One commit: `small`, and `zeros`, a blob of size zero bytes (hashed from a sparse file,
    so nothing of it is held in memory here)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "small").write_text("small\n")
    git(path, "add", "small")
    with tempfile.TemporaryFile() as data:
        data.truncate(size)
        oid = git(path, "hash-object", "-w", "--stdin", stdin=data)
    git(path, "update-index", "--add", "--cacheinfo", f"100644,{oid},zeros")
    git(path, "commit", "-qm", "blob")


def wide_repo(path):
    """One commit of WIDE_FILES, random bytes (git cannot compress or delta them)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    # Random bytes neither compress nor have deltas: the time to look for them is wasted.
    git(path, "config", "core.compression", "0")
    git(path, "config", "pack.window", "0")
    for name in WIDE_FILES:
        with open(path / name, "wb") as f:
            for _ in range(WIDE_FILE >> 20):
                f.write(os.urandom(1 << 20))
    git(path, "add", ".")
    git(path, "commit", "-qm", "wide")
    for name in WIDE_FILES:  # the commit has them: only .git is needed
        (path / name).unlink()


# The delta bomb: a 64 KiB blob, and a delta on it of one byte per 64 KiB copy that makes a
# 1 GiB blob (8 KiB of delta, a few dozen bytes once compressed).
SEED = 64 << 10
BOMB = 1 << 30


def pack_header(kind, size):
    """A pack object's type-and-size header (git's pack format)."""
    out = bytearray([(kind << 4) | (size & 15)])
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7f)
        size >>= 7
    return bytes(out)


def delta_size(n):
    out = bytearray()
    while True:
        out.append(n & 0x7f | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(out)


def ofs_delta_offset(n):
    """OFS_DELTA's distance back to its base, in git's own varint."""
    out = [n & 0x7f]
    n >>= 7
    while n:
        n -= 1
        out.insert(0, 0x80 | (n & 0x7f))
        n >>= 7
    return bytes(out)


def delta_bomb_repo(path):
    """A bare repository whose one commit holds `seed` (SEED random bytes) and `bomb`, a BOMB
    byte blob stored as a delta on seed: its pack is a decompression bomb."""
    seed = os.urandom(SEED)
    copies = BOMB // SEED
    seed_id = hashlib.sha1(b"blob %d\0" % SEED + seed).digest()
    h = hashlib.sha1(b"blob %d\0" % BOMB)
    for _ in range(copies):
        h.update(seed)
    bomb_id = h.digest()
    tree = b"100644 bomb\0" + bomb_id + b"100644 seed\0" + seed_id
    tree_id = hashlib.sha1(b"tree %d\0" % len(tree) + tree).digest()
    commit = (b"tree %s\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nbomb\n"
              % tree_id.hex().encode())
    commit_id = hashlib.sha1(b"commit %d\0" % len(commit) + commit).digest()
    # 0x80 alone: copy 0x10000 bytes from offset 0 of the base
    delta = delta_size(SEED) + delta_size(BOMB) + b"\x80" * copies
    pack = bytearray(b"PACK" + struct.pack(">II", 2, 4))
    pack += pack_header(1, len(commit)) + zlib.compress(commit)
    pack += pack_header(2, len(tree)) + zlib.compress(tree)
    seed_at = len(pack)
    pack += pack_header(3, SEED) + zlib.compress(seed)
    bomb_at = len(pack)
    pack += pack_header(6, len(delta)) + ofs_delta_offset(bomb_at - seed_at)
    pack += zlib.compress(delta, 9)
    pack += hashlib.sha1(pack).digest()
    run_proc([GIT, "init", "-q", "--bare", "-b", "main", str(path)], timeout=60)
    name = path / "objects" / "pack" / f"pack-{hashlib.sha1(pack).hexdigest()}.pack"
    name.write_bytes(pack)
    git(path, "index-pack", str(name))
    git(path, "update-ref", "refs/heads/main", commit_id.hex())
    return len(pack)


@pytest.fixture(scope="module")
def base():
    d = Path(tempfile.mkdtemp(prefix="sbxfs-lim-src-"))
    try:
        repo_with_blob(d / "big", BIG)
        git(d / "big", "branch", "other")
        git(d / "big", "tag", "tg")
        repo_with_blob(d / "medium", MEDIUM)
        wide_repo(d / "wide")
        delta_bomb_repo(d / "bomb")
        (d / "tiny").mkdir()
        git(d / "tiny", "init", "-q", "-b", "main")
        (d / "tiny" / "x").write_text("x\n")
        git(d / "tiny", "add", "x")
        git(d / "tiny", "commit", "-qm", "tiny")
        for p in [d, *d.rglob("*")]:  # the sandbox's user reads it
            p.chmod(0o755 if p.is_dir() else 0o644)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def mount(base, extra=""):
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-lim-"), CONF.format(base=base) + extra)
    os.chmod(m.tmp, 0o755)  # sbxfs-git reaches the workspace by its host path
    return started(m)


@pytest.fixture(scope="module")
def default(base):
    m = mount(base)
    yield m
    stopped_cleanly(m, "checkout limits")


@pytest.fixture(scope="module")
def lax(base):
    """Objects up to 1G: the big blob is read."""
    m = mount(base, "git_object_max = 1G\n")
    yield m
    stopped_cleanly(m, "lax checkout limits")


@pytest.fixture(scope="module")
def small_files(base):
    m = mount(base, "git_file_max = 1M\n")
    yield m
    stopped_cleanly(m, "small files checkout limits")


# --- helpers -----------------------------------------------------------------------------------


def checkout(s, line, timeout=120):
    """Writes one request to checkout and reads it to its end: (whole text, final line)."""
    assert write_errno(Path(s) / "checkout", line + "\n") == 0, line
    text = read_bytes(Path(s) / "checkout", timeout=timeout).decode()
    final = text.splitlines()[-1]
    assert FINAL_RE.fullmatch(final), f"malformed final line {final!r} in {text!r}"
    return text, final


def cgroups_of(pid):
    """{controllers: group path} of a host process, from /proc/PID/cgroup; only the sandbox's
    groups."""
    with open(f"/proc/{pid}/cgroup") as f:
        pairs = [line.rstrip("\n").split(":", 2)[1:] for line in f]
    return {ctrls: path for ctrls, path in pairs if "/sbxfs-" in path}


def group_dir(ctrls, path):
    """The directory of a group: a v1 hierarchy's (ctrls as named in /proc/PID/cgroup), or v2's
    (ctrls ""), on its own or as the unified half of a hybrid machine."""
    if ctrls:
        return f"{CG_ROOT}/{ctrls}{path}"
    if os.path.exists(f"{CG_ROOT}/cgroup.controllers"):
        return f"{CG_ROOT}{path}"
    return f"{CG_ROOT}/unified{path}"


class Session:
    """A new session, and the cgroups of its own group, found from a process it left there."""

    def __init__(self, m):
        self.m, self.s = m, m.new_session()
        tag = sleep_tag()
        out, err, code = m.run(self.s, f"sleep {tag} </dev/null >/dev/null 2>&1 &")
        assert code == 0, err
        self.sleeper = wait_until(lambda: procs_matching(f"sleep {tag}"), 10, "the sleeper")[0]
        self.groups = cgroups_of(self.sleeper)
        if not self.groups:
            pytest.skip("no cgroup for the sandbox")

    def peak(self):
        """The most memory the session's group (sbxfs-git's below it included) ever used."""
        for ctrls, path in self.groups.items():
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                f = Path(group_dir(ctrls, path)) / name
                if ("memory" in ctrls.split(",") or not ctrls) and f.exists():
                    return int(f.read_text())
        pytest.skip(f"no memory controller for the sessions: {self.groups}")

    def close(self):
        os.kill(self.sleeper, signal.SIGKILL)

    def still_works(self, base):
        out, err, code = self.m.run(self.s, "echo alive")
        assert (out, code) == (b"alive\n", 0), err
        _, final = checkout(self.s, f"{base}/tiny dir={uniq('tiny')}")
        assert final.startswith("ok "), final
        other = self.m.new_session()
        assert self.m.run(other, "echo other")[0] == b"other\n"


@pytest.fixture
def session(request):
    made = []

    def make(m):
        made.append(Session(m))
        return made[-1]

    yield make
    for s in made:
        s.close()


def shown(m, rel):
    return f"{m.cmd_ws}/{rel}"


# --- tests -------------------------------------------------------------------------------------


def test_sbxfs_git_runs_in_a_group_below_its_sessions(default, session):
    """Joined before exec: the whole process is in the session's subtree, for every
    controller the sandbox uses; the group goes once the checkout ended."""
    s = session(default)
    stall = socket.socket()  # connections wait in its backlog: the clone waits for a reply
    stall.bind(("127.0.0.1", 0))
    stall.listen(4)
    port = stall.getsockname()[1]
    try:
        line = f"git://127.0.0.1:{port}/x.git dir={uniq('stall')}\n"
        assert write_errno(s.s / "checkout", line) == 0
        pid = wait_until(lambda: procs_matching(f"127.0.0.1:{port}/"), 20, "sbxfs-git")[0]
        groups = cgroups_of(pid)
    finally:
        stall.close()  # resets the connection: the checkout ends
    assert groups.keys() == s.groups.keys(), (groups, s.groups)
    for ctrls, path in s.groups.items():
        assert re.fullmatch(re.escape(path) + r"/git[0-9]+", groups[ctrls]), (ctrls, groups)
    final = read_bytes(s.s / "checkout", timeout=60).decode().splitlines()[-1]
    assert final.startswith("error network: "), final
    for ctrls, path in groups.items():
        d = group_dir(ctrls, path)
        wait_until(lambda d=d: not os.path.exists(d), 10, f"{d} to be removed")


def source(base, name, form):
    """(the URL of repository base/name by path, file:// or git://, the git daemon or None)."""
    if form == "git":
        daemon = GitDaemon(base, git_env(base))
        return daemon.url(name), daemon
    return f"{'file://' if form == 'file' else ''}{base}/{name}", None


def checkout_from(s, base, name, form, rel, timeout=120):
    """A checkout of repository base/name by form into rel: (whole text, final line)."""
    url, daemon = source(base, name, form)
    try:
        return checkout(s.s, f"{url} dir={rel}", timeout=timeout)
    finally:
        if daemon:
            daemon.close()


@pytest.mark.parametrize("form", ["path", "file", "git"])
def test_blob_past_git_object_max_is_refused_before_it_is_read(default, session, base, form):
    """By a local path or file:// (libgit2 copies the object files) or from a git server
    (libgit2 indexes the pack as it comes): checked by its header before checkout reads it."""
    s = session(default)
    rel = uniq("big")
    text, final = checkout_from(s, base, "big", form, rel)
    assert final == (f"error too-large: {shown(default, rel)}/zeros is {BIG} bytes, more than "
                     f"the {OBJECT_MAX} a checkout takes ([session] git_object_max)"), text
    assert os.listdir(default.ws / rel) == []
    # sbxfs-git, the session's shell and the sleeper: far below the blob.
    assert s.peak() < 64 << 20, s.peak()
    s.still_works(base)


@pytest.mark.parametrize("form", ["path", "file", "git"])
def test_a_pack_that_is_a_decompression_bomb_is_refused(default, session, base, form):
    """A pack of a few kilobytes whose one delta makes a 1 GiB blob: refused by its size before
    it is made (the delta's header says it), or, where libgit2 must make it to index the pack
    (git://), ended at the checkout's memory limit; either way nothing is written, the host's
    memory is the session's bound, and the session goes on."""
    assert (base / "bomb" / "objects" / "pack").is_dir()
    s = session(default)
    rel = uniq("bomb")
    text, final = checkout_from(s, base, "bomb", form, rel, timeout=300)
    assert final in (
        f"error too-large: {shown(default, rel)}/bomb is {BOMB} bytes, more than the "
        f"{OBJECT_MAX} a checkout takes ([session] git_object_max)",
        "error too-large: out of memory: sbxfs-git was killed at the checkout's or the "
        "session's memory limit"), text
    assert not os.path.exists(default.ws / rel / "bomb")
    assert s.peak() <= SESSION_MAX, s.peak()
    print(f"{form}: {final}; the session's peak {s.peak() >> 20} MiB")
    s.still_works(base)


@pytest.mark.parametrize("ref", ["main", "other", "tg"])
def test_blob_past_git_object_max_is_refused_on_a_branch_or_tag(default, session, base, ref):
    """branch=: the remote's default branch, another one, a tag (each checked out its own
    way)."""
    s = session(default)
    rel = uniq("bigref")
    text, final = checkout(s.s, f"{base}/big branch={ref} dir={rel}")
    assert final == (f"error too-large: {shown(default, rel)}/zeros is {BIG} bytes, more than "
                     f"the {OBJECT_MAX} a checkout takes ([session] git_object_max)"), text
    assert os.listdir(default.ws / rel) == []
    assert s.peak() < 64 << 20, s.peak()


def no_swap():
    if Path("/proc/swaps").read_text().count("\n") > 1:
        pytest.skip("with swap, a memory limit swaps instead of killing")


@pytest.mark.heavy
@pytest.mark.parametrize("form", ["path", "file", "git"])
def test_repository_larger_than_the_sessions_memory_is_checked_out(default, session, base,
                                                                   form):
    """300 MiB of incompressible files under git_object_max: the limits bound what sbxfs-git
    holds at once, not the size of what it clones."""
    s = session(default)
    rel = uniq("wide")
    url, daemon = source(base, "wide", form)
    try:
        text, final = checkout(s.s, f"{url} dir={rel}", timeout=300)
    finally:
        if daemon:
            daemon.close()
    assert final.startswith("ok "), text
    assert sorted(os.listdir(default.ws / rel)) == [".git", *sorted(WIDE_FILES)]
    assert (default.ws / rel / "f0").stat().st_size == WIDE_FILE
    shutil.rmtree(default.ws / rel)


def test_checkout_past_the_sessions_memory_is_killed_and_reported(lax, session, base):
    """The blob is under git_object_max, but larger than the session's memory: sbxfs-git is
    OOM-killed, not a process of the session's."""
    no_swap()
    s = session(lax)
    _, final = checkout(s.s, f"{base}/big dir={uniq('bigk')}")
    assert final == ("error too-large: out of memory: sbxfs-git was killed at the checkout's "
                     "or the session's memory limit"), final
    assert s.peak() <= SESSION_MAX, s.peak()
    assert os.path.exists(f"/proc/{s.sleeper}"), "the OOM killer took a process of the session"
    s.still_works(base)


def test_file_past_git_file_max_is_refused(small_files, session, base):
    s = session(small_files)
    rel = uniq("medium")
    _, final = checkout(s.s, f"{base}/medium dir={rel}")
    assert final.startswith("error too-large: "), final
    assert final.endswith("File too large ([session] git_file_max)"), final
    assert os.listdir(small_files.ws / rel) == []
    s.still_works(base)
