"""Several sbxfs instances on one host: each mount's sandbox runs as its own uid and gid, taken
from [sandbox] uid_range for its state dir, so one mount's commands and checkouts cannot read
another mount's files; a restart of a mount keeps its uid."""

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from sbxutil import (Background, ConfMount, SbxMount, isolation_none, read_bytes, run_proc,
                     write_bytes)

pytestmark = pytest.mark.skipif(
    isolation_none() or os.geteuid() != 0,
    reason="per-instance uids are for sandboxes a root daemon runs with bwrap; "
           "--isolation none (or a daemon that is not root) runs commands as its own user")

REGISTRY = Path("/var/lib/sbxfs/uids")
DEFAULT_RANGE = range(2000000000, 2000065536)
FINAL_RE = re.compile(r"(ok \S+ .+)|(error [a-z-]+: .*)")


def sh(m, s, cmd):
    out, err, code = m.run(s, cmd)
    return out.decode(), err.decode(), code


def as_uid(uid, *argv):
    """argv run on the host with uid (and a gid of the same number), no groups."""
    return run_proc(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv],
                    timeout=30)


def checkout(s, line, timeout=60):
    write_bytes(Path(s) / "checkout", line + "\n")
    text = read_bytes(Path(s) / "checkout", timeout=timeout).decode()
    final = text.splitlines()[-1]
    assert FINAL_RE.fullmatch(final), text
    return final


def traversable(m):
    """Opens the mount's temp dir to everybody, so only the modes inside the workspace decide
    who reaches its files (mkdtemp makes it 0700)."""
    os.chmod(m.tmp, 0o755)


def test_two_mounts_run_as_two_uids(fresh_mount):
    m1, m2 = fresh_mount(), fresh_mount()
    (u1, g1), (u2, g2) = m1.sandbox_ids(), m2.sandbox_ids()
    assert u1 != u2 and g1 != g2
    for m, uid, gid in ((m1, u1, g1), (m2, u2, g2)):
        assert uid in DEFAULT_RANGE and gid == uid
        s = m.new_session()
        out, err, code = sh(m, s, "id -u; id -g; id -G; whoami; getent passwd $(id -u)")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[:3] == [str(uid), str(gid), str(gid)], out
        # the sandbox has an account for it: tools that look the uid up find a name and a home
        assert lines[3] == "sbxfs", out
        assert lines[4] == f"sbxfs:x:{uid}:{gid}:sbxfs sandbox:/home/sbxfs:/bin/bash", out
        assert sh(m, s, "touch made")[2] == 0
        assert os.stat(m.ws / "made").st_uid == uid
        assert os.stat(m.ws).st_uid == uid
        # recorded in the state dir and claimed in the host-wide registry for that state dir
        assert (m.state / "uid").read_text() == f"{uid}\n"
        entry = (REGISTRY / str(uid)).read_text().splitlines()
        assert entry == [os.path.realpath(m.state), os.path.realpath(m.ws)]


def test_a_mounts_private_files_are_closed_to_the_other(fresh_mount):
    m2 = fresh_mount()
    traversable(m2)
    # mount 1's checkout policy lets it read mount 2's workspace: only the uids are in the way
    m1 = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-"),
                   f"[session]\ngit_local_roots = {m2.ws}\n")
    try:
        m1.start()
        closed_to_the_other(m1, m2)
        assert m1.stop() == []
    finally:
        m1.abort()
        m1.cleanup_tmp()


def closed_to_the_other(m1, m2):
    u1, u2 = m1.sandbox_ids()[0], m2.sandbox_ids()[0]
    s2 = m2.new_session()
    out, err, code = sh(m2, s2, "mkdir -m 700 priv && echo secret > priv/note && "
                                "git init -q priv/repo && cd priv/repo && echo x > f && "
                                "git add f && git -c user.email=t@t -c user.name=t "
                                "commit -qm one && git rev-parse HEAD")
    assert code == 0, err
    head = out.strip()
    note, repo = m2.ws / "priv" / "note", m2.ws / "priv" / "repo"

    # mount 1's uid (what its commands and its checkout's helper run as on the host)
    res = as_uid(u1, "cat", str(note))
    assert res.returncode != 0 and b"Permission denied" in res.stderr, res
    assert as_uid(u2, "cat", str(note)).stdout == b"secret\n"  # the same path is readable

    s1 = m1.new_session()
    final = checkout(s1, f"{repo} dir=stolen")
    # refused as a missing one is: the error does not tell the other mount's files exist
    missing = checkout(s1, f"{repo}-missing dir=stolen")
    assert final.startswith("error not-found: "), final
    assert final == missing.replace(f"{repo}-missing", str(repo)), (final, missing)
    assert not (m1.ws / "stolen" / "f").exists()
    assert not (m1.ws / "stolen").exists() or not any((m1.ws / "stolen").iterdir())
    # mount 2 clones its own repository: the refusal is the uid's, not the path's
    final = checkout(s2, f"{repo} dir=/workspace/mine")
    assert final.startswith(f"ok {head} "), final
    assert (m2.ws / "mine" / "f").read_text() == "x\n"


def test_a_restart_keeps_the_uid(fresh_mount):
    m = fresh_mount()
    uid, gid = m.sandbox_ids()
    s = m.new_session()
    assert sh(m, s, "mkdir -m 700 keep && echo one > keep/f")[2] == 0
    assert m.stop() == []
    m.start()
    assert m.sandbox_ids() == (uid, gid)
    s = m.new_session()
    out, err, code = sh(m, s, "echo two >> keep/f && cat keep/f && id -u")
    assert (out, code) == (f"one\ntwo\n{uid}\n", 0), err


def test_mounts_started_at_once_get_distinct_uids(fresh_mount):
    mounts = [SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-")) for _ in range(3)]
    try:
        starts = [Background(m.start, what=f"starting {m.mnt}") for m in mounts]
        for b in starts:
            b.result(timeout=30)
        uids = [m.sandbox_ids()[0] for m in mounts]
        assert len(set(uids)) == 3, uids
    finally:
        for m in mounts:
            if m.alive():
                assert m.stop() == []
            m.abort()
            m.cleanup_tmp()


def test_a_uid_held_by_another_state_dir_is_refused(fresh_mount):
    m1 = fresh_mount()
    uid = m1.sandbox_ids()[0]
    m2 = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-"))
    try:
        (m2.state / "uid").write_text(f"{uid}\n")  # a copied state dir
        res = subprocess.run(m2.command_line(), capture_output=True, timeout=30)
        assert res.returncode != 0
        assert b"held by another state dir" in res.stderr, res.stderr
        assert (REGISTRY / str(uid)).read_text().splitlines()[0] == os.path.realpath(m1.state)
        assert m1.sandbox_ids()[0] == uid
    finally:
        m2.cleanup_tmp()


def test_a_named_user_is_every_mounts_user():
    """[sandbox] user = NAME keeps the old way: every mount with it runs as that one user."""
    import pwd
    mounts = [ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-"),
                        "[sandbox]\nuser = sbxfs\n") for _ in range(2)]
    try:
        for m in mounts:
            m.start()
        pw = pwd.getpwnam("sbxfs")  # created by the first start if it was missing
        for m in mounts:
            assert m.sandbox_ids() == (pw.pw_uid, pw.pw_gid)
            s = m.new_session()
            out, err, code = sh(m, s, "id -un; id -u")
            assert (out, code) == (f"sbxfs\n{pw.pw_uid}\n", 0), err
            assert not (m.state / "uid").exists()
    finally:
        for m in mounts:
            if m.alive():
                assert m.stop() == []
            m.abort()
            m.cleanup_tmp()


def test_a_uid_is_free_again_once_its_state_dir_and_workspace_are_gone():
    import random
    uid = random.randrange(2100000000, 2101000000)
    while (REGISTRY / str(uid)).exists():
        uid += 1
    conf = f"[sandbox]\nuid_range = {uid}-{uid}\n"
    a = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-"), conf)
    b = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-inst-"), conf)
    try:
        a.start()
        assert a.sandbox_ids() == (uid, uid)
        assert a.stop() == []
        # a's state dir still records it: stopped is not gone
        res = subprocess.run(b.command_line(), capture_output=True, timeout=30)
        assert res.returncode != 0 and b"no free uid left" in res.stderr, res.stderr
        a.cleanup_tmp()
        b.start()
        assert b.sandbox_ids() == (uid, uid)
        entry = (REGISTRY / str(uid)).read_text().splitlines()
        assert entry == [os.path.realpath(b.state), os.path.realpath(b.ws)]
        assert b.stop() == []
    finally:
        for m in (a, b):
            m.abort()
            m.cleanup_tmp()
        claim = REGISTRY / str(uid)  # stale by now: no need to keep it
        if claim.exists() and not b.state.exists():
            claim.unlink()
