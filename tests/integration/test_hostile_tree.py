"""The hostile-tree test (issue 30): whatever the sandbox plants wherever it can write, the host's
own tools run over every tree of the mount read no file outside it, change none, and block on
nothing past a bound, in every workspace mode and after a refused `sbxfs -u`.

A command plants, in the workspace: links to a canary file and to a host directory (absolute,
and relative ones climbing out), a link loop, a FIFO, a socket, a 1 TiB sparse file (16 MiB on
the fallback's ramfs, which keeps no holes), and names
with a newline, an escape sequence and bytes that are not UTF-8; a snapshot then holds them all
in snapshots/NAME/files/. As root, the test runs cat, head, cp -a, cp -rL, diff -r, grep -r and
-R, tar -c and -ch, find -exec and find -L, du and du -L, rsync -a and -L (if installed), and
the Python and Node clients' file calls over the planted tree, and writes through every planted
link. No canary's text may show in any output or copy, the host directory keeps its files, and
every tool returns within its bound.

Every tree at the mount's root is in TREES, with what the sandbox can name in it: a tree added
to the mount and not to TREES fails test_every_tree_of_the_mount_is_known, so a new tree cannot
skip this test (docs/sandbox.md, "One rule for every tree")."""

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sbxutil import (REPO_ROOT, SbxMount, bounded, errno_of, isolation_none, limits, mounts_on,
                     run_proc, sbxfs_binary, uniq)
from test_client_safety import node
from test_fleet import fleet
from test_host_safety import hm  # noqa: F401 (the fixture: a mount in each mode)

sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

import sbxfs as sdk  # noqa: E402

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox has a user of its own as root"),
    pytest.mark.skipif(isolation_none(), reason="without bwrap commands run as the host's root"),
    pytest.mark.sbx_timeout(600),
]

# Each tree at the mount's root: "hostile" where the sandbox names files and links (its
# workspace, and snapshots of it), "control" where every name and link is the daemon's.
TREES = {
    "README": "control", "env": "control", "errors": "control", "limits": "control",
    "network": "control", "ports": "control", "procs": "control", "sessions": "control",
    "contexts": "control", "snapshots": "hostile", "workspace": "hostile",
    # what the sandbox did, in the daemon's JSON lines: its text is escaped there, never a name
    "journal": "control", "metrics": "control",
}
CANARY = "canary-text-the-host-must-not-read"
# A tool's bound: a walk of these small trees takes well under a second.
BOUND = 60
SPARSE = "sparse-1T"


def sparse_size(m):
    """1 TiB where the backing filesystem keeps holes; ramfs (the fallback's) keeps none, and
    pins every page read there in memory, so it gets a small one."""
    return "16M" if m.ramfs else "1T"


def plant(m):
    """The sandbox's plants in the workspace, under hostile/."""
    canary, outdir = m.outside / "canary", m.outside / "dir"
    script = f"""
set -e
cd /workspace && rm -rf hostile && mkdir -p hostile/sub && cd hostile
ln -s {canary} canarylink
ln -s {outdir} dirlink
ln -s ../../../../../../../../{str(canary).lstrip('/')} climb
ln -s sub/../../../../../../../../{str(outdir).lstrip('/')} climbdir
ln -s loop loop
ln -s /etc/shadow shadowlink
ln -s / rootlink
mkfifo fifo
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'
truncate -s {sparse_size(m)} {SPARSE}
echo plain > plain
printf x > $'new\\nline'
printf x > $'esc\\e[31mred'
printf x > $'bytes\\xff\\xfe'
ln -s canarylink sub/chained
"""
    s = m.new_session()
    out, err, code = m.run(s, script, timeout=60)
    assert code == 0, err


def trees_of(m, snap):
    """Every tree of the mount, and the planted tree as each hostile tree shows it."""
    return {name: m.mnt / name for name in TREES}, [
        m.workspace / "hostile", m.mnt / "snapshots" / snap / "files" / "hostile"]


def no_canary(text, what):
    assert CANARY not in text, f"{what} read the canary"


def scan_copy(root):
    """A copy the host made holds no canary: every small regular file in it, links not
    followed."""
    for dirpath, dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size < 1 << 20:
                with open(path, "rb") as f:
                    no_canary(f.read().decode(errors="replace"), f"a copy ({path})")


def tool(args, what, cwd=None):
    """Runs a host tool within BOUND seconds; its output must not hold the canary."""
    try:
        res = subprocess.run(args, capture_output=True, timeout=BOUND, cwd=cwd,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: still running after {BOUND}s: {args}", pytrace=False)
    no_canary(res.stdout.decode(errors="replace") + res.stderr.decode(errors="replace"), what)
    return res


def run_tools_over_hostile(m, tree, scratch):
    """The tools people run on trees, over one hostile tree."""
    t = str(tree)
    # Reading a 1 TiB file is not a hang, but takes its time: the content-reading tools that
    # read whole files leave it out, the copying ones keep it (they skip its holes).
    tool(["sh", "-c", 'for f in "$1"/* "$1"/sub/*; do case "$f" in *' + SPARSE + ') continue;; '
          'esac; [ -p "$f" ] && continue; cat "$f"; head -c 100 "$f"; done; true', "sh", t],
         "cat/head of every entry")
    for i, args in enumerate((["cp", "-a"], ["cp", "-rL"])):
        dest = scratch / f"cp{i}"
        tool([*args, t, str(dest)], " ".join(args))
        scan_copy(dest)
    tool(["diff", "-r", "-x", SPARSE, t, t], "diff -r")
    tool(["diff", "-r", "--no-dereference", "-x", SPARSE, t, t], "diff -r --no-dereference")
    tool(["grep", "-r", "--exclude", SPARSE, "-e", "canary", t], "grep -r")
    # grep -R opens a FIFO it meets, and waits for a writer there as on any filesystem:
    # -D skip is how one greps a tree someone else wrote (plain -r skips them itself).
    tool(["grep", "-R", "-D", "skip", "--exclude", SPARSE, "-e", "canary", t], "grep -R")
    for flag in ("-c", "-ch"):
        out = scratch / f"t{flag}.tar"
        tool(["tar", flag + "Sf", str(out), "-C", t, "."], f"tar {flag}")
        if out.exists():
            no_canary(out.read_bytes().decode(errors="replace"), f"tar {flag}'s archive")
    tool(["find", t, "-type", "f", "!", "-name", SPARSE, "-exec", "cat", "{}", "+"],
         "find -exec cat")
    tool(["find", "-L", t, "-name", "*link*"], "find -L")
    tool(["du", "-a", t], "du")
    tool(["du", "-aL", t], "du -L")
    if shutil.which("rsync"):
        for i, flag in enumerate(("-a", "-aL")):
            dest = scratch / f"rsync{i}"
            tool(["rsync", flag, "--exclude", SPARSE, t + "/", str(dest)], f"rsync {flag}")
            scan_copy(dest)
    tool(["ls", "-laR", t], "ls -laR")


def write_through_links(m, tree):
    """Every planted link refuses a write through it, and creates nothing outside."""
    for name in ("canarylink", "climb", "shadowlink", "sub/chained"):
        for flags in (os.O_WRONLY | os.O_APPEND, os.O_WRONLY | os.O_TRUNC, os.O_RDWR):
            got = errno_of(os.open, tree / name, flags)
            assert got in (errno.ELOOP, errno.EROFS), (tree / name, flags, got)
    for name in ("dirlink", "climbdir", "rootlink"):
        got = errno_of(os.open, tree / name / uniq("new"), os.O_WRONLY | os.O_CREAT, 0o644)
        assert got in (errno.ELOOP, errno.EROFS), (tree / name, got)
        assert errno_of(os.listdir, tree / name) == errno.ELOOP


def run_tools_over_control(tree):
    """Metadata walks over a control tree: they follow its own links (procs/ holds some) and
    must return within their bound."""
    t = str(tree)
    if tree.is_dir():
        tool(["find", t, "-maxdepth", "3"], f"find {t}")
        tool(["du", "-s", t], f"du {t}")
        tool(["ls", "-laR", t], f"ls -laR {t}")
    else:
        tool(["head", "-c", "4096", t], f"head {t}")


def client_calls(m):
    """The Python and Node clients' file calls over the planted tree."""
    box = sdk.get_sandbox(m.mnt)
    session = box.create_session()
    calls = [{"on": {"session": session.id}, "method": method, "args": [f"hostile/{name}"]}
             for name in ("canarylink", "climb", "sub/chained", "shadowlink", "dirlink")
             for method in ("readFile", "exists")]
    calls.append({"on": {"session": session.id}, "method": "listFiles",
                  "args": ["hostile", {"recursive": True}]})
    outcomes, _ = node(m, calls)
    no_canary(json.dumps(outcomes), "the Node client")
    refused = [o["ok"] is False for o, c in zip(outcomes, calls) if c["method"] == "readFile"]
    assert refused and all(refused), outcomes
    for name in ("canarylink", "climb", "sub/chained", "shadowlink"):
        try:
            got = session.read_file(f"hostile/{name}")
        except sdk.SandboxError as e:
            no_canary(str(e), f"read_file {name}'s error")
        else:
            no_canary(str(got), f"read_file {name}")
    listing = session.list_files("hostile", recursive=True)
    no_canary(repr(listing), "list_files")


def assert_host_untouched(m):
    assert (m.outside / "canary").read_text() == CANARY + "\n"
    assert sorted(os.listdir(m.outside / "dir")) == ["kept"]
    assert not m.hit.exists()


def hostile_round(m, snap):
    all_trees, planted = trees_of(m, snap)
    scratch = Path(tempfile.mkdtemp(prefix="sbxfs-hostile-copy-"))
    try:
        for i, tree in enumerate(planted):
            assert stat.S_ISLNK(os.lstat(tree / "canarylink").st_mode), tree
            run_tools_over_hostile(m, tree, scratch / str(i))
            write_through_links(m, tree)
        for name, kind in TREES.items():
            if kind == "control":
                run_tools_over_control(all_trees[name])
        client_calls(m)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert_host_untouched(m)
    assert limits(m)["host_symlinks"] == "nofollow", limits(m)


def prepare(m):
    (m.outside / "canary").write_text(CANARY + "\n")
    plant(m)
    snap = uniq("snap")
    bounded(os.mkdir, m.mnt / "snapshots" / snap, what="mkdir snapshots/NAME")
    return snap


def test_every_tree_of_the_mount_is_known(hm):
    assert sorted(os.listdir(hm.mnt)) == sorted(TREES), \
        "a tree of the mount is not in TREES: add it, with what the sandbox names in it"


def test_host_tools_over_every_tree_follow_nothing_the_sandbox_planted(hm):
    snap = prepare(hm)
    hostile_round(hm, snap)


def test_after_a_refused_unmount_nothing_follows_either(hm):
    """A file held open makes -u refuse, naming its holder; the mount stays whole (every cover
    still on), and the hostile round holds; once it is closed, -u unmounts."""
    snap = prepare(hm)
    before = mounts_on(hm.mnt)
    fd = os.open(hm.mnt / "README", os.O_RDONLY)
    try:
        res = run_proc([str(sbxfs_binary()), "-u", str(hm.mnt)], timeout=30)
        err = res.stderr.decode(errors="replace")
        assert res.returncode == 1, err
        assert f"held by {os.getpid()} (" in err and "nothing was unmounted" in err, err
        assert mounts_on(hm.mnt) == before
        hostile_round(hm, snap)
    finally:
        os.close(fd)


# The fleet's own tree (sbxfs-fleet): every name in it is the supervisor's; each sandbox's fs/
# is a whole mount, whose trees are TREES.
FLEET_TREES = {"clone": "control", "status": "control"}
FLEET_SANDBOX_TREES = {"fs": "mount", "status": "control", "keep_alive": "control",
                       "config": "control"}


class FleetSandbox(SbxMount):
    """A sandbox of a fleet, as the hostile round drives a mount: its tree at FLEET/ID/fs, and
    a directory outside for the sandbox's tricks to aim at."""

    def __init__(self, f, id):
        super().__init__(f.tmp / "hostile")
        self.mnt = f.mnt / id / "fs"
        self.sessions = self.mnt / "sessions"
        self.workspace = self.mnt / "workspace"
        self.ramfs = False
        self.outside = self.tmp / "outside"
        self.outside.mkdir(mode=0o777)
        os.chmod(self.outside, 0o1777)
        (self.outside / "dir").mkdir()
        (self.outside / "dir" / "kept").write_text("kept\n")
        self.hit = self.outside / "hit"


def test_a_fleets_trees_follow_nothing_the_sandbox_planted():
    with fleet() as f:
        os.mkdir(f.mnt / "h")
        assert sorted(os.listdir(f.mnt)) == sorted([*FLEET_TREES, "h"]), \
            "a tree of the fleet is not in FLEET_TREES"
        assert sorted(os.listdir(f.mnt / "h")) == sorted(FLEET_SANDBOX_TREES)
        m = FleetSandbox(f, "h")
        snap = prepare(m)
        hostile_round(m, snap)
        # the fleet's own files, and metadata walks over the whole fleet (the planted tree in
        # it: reading a sandbox's control files would wait for its commands, as in a mount)
        for path in (f.mnt / "status", f.mnt / "h" / "status", f.mnt / "h" / "keep_alive",
                     f.mnt / "h" / "config", f.mnt):
            run_tools_over_control(path)
        assert_host_untouched(m)
