"""Safe for the host: nothing the sandbox writes is trusted or followed outside it, in every
workspace mode (the kernel mount, the FUSE workspace, the fallback to FUSE), as an attacker in the
sandbox would try it:

- git run on the host (as root, and as another user through allow_other) in a repository a
  command set up refuses it as of dubious ownership: its fsmonitor, pager, aliases, external
  diff, hooks and a .git file pointing at a gitdir of its own never run (the canary they would
  write stays absent). The same commands with git told to trust the repository do run them:
  the attacks are real, and the refusal is what stops them.
- files the host puts into the workspace are the sandbox's commands' to change (idmap =
  handover: handed over before the next command starts).
- symlinks a command planted (to a file or a directory outside) are not followed by the host,
  for reads or writes; FIFOs, sockets and sparse files do not hang or flood the host."""

import errno
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading

import pytest

from posixutil import AllowOtherMount
from sbxutil import (errno_of, isolation_none, is_mounted, limits, run_proc, started,
                     stopped_cleanly, uniq, wait_until)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox has a user of its own as root"),
    pytest.mark.skipif(isolation_none(), reason="without bwrap commands run as the host's root"),
    pytest.mark.sbx_timeout(180),
]

# The modes of workspace/. The fallback: a ramfs backing directory cannot be idmapped, so with
# the (opt-in) idmap = user the kernel mount fails and workspace/ is the FUSE workspace.
MODES = {
    "kernel": ("", False),
    "fuse": ("[workspace]\nmount = fuse\n", False),
    "fuse-fallback": ("[workspace]\nmount = kernel\n[sandbox]\nidmap = user\n", True),
}
NOBODY = 65534


class Mount(AllowOtherMount):
    """A mount others can reach, with a directory outside its workspace that the sandbox's
    tricks aim at: `canary` (a file) and `dir` (a directory with a file), and `hit`, which a
    command run where it must not be appends its uid to."""

    def __init__(self, tmp, config_text, ramfs):
        super().__init__(tmp, config_text)
        self.ramfs = ramfs
        self.outside = self.tmp / "outside"
        self.outside.mkdir(mode=0o777)
        os.chmod(self.outside, 0o1777)
        self.canary = self.outside / "canary"
        self.canary.write_text("untouched\n")
        (self.outside / "dir").mkdir()
        (self.outside / "dir" / "kept").write_text("kept\n")
        self.hit = self.outside / "hit"
        self.home = self.tmp / "home"
        self.home.mkdir(mode=0o755)

    def untouched(self):
        assert self.canary.read_text() == "untouched\n"
        assert sorted(os.listdir(self.outside / "dir")) == ["kept"]


def make_mount(mode):
    config, ramfs = MODES[mode]
    m = Mount(tempfile.mkdtemp(prefix="sbxfs-safe-"), config, ramfs)
    if ramfs:
        subprocess.run(["mount", "-t", "ramfs", "ramfs", str(m.ws)], check=True)
        m.kernel_workspace = lambda: False
    try:
        return started(m)
    except BaseException:
        if ramfs:
            subprocess.run(["umount", str(m.ws)], check=False)
        raise


def end_mount(m):
    try:
        assert m.stop() == [], m.daemon_log()
    finally:
        if m.ramfs:
            wait_until(lambda: not is_mounted(m.mnt), 10, "the mount to go")
            subprocess.run(["umount", str(m.ws)], check=True)
        m.cleanup_tmp()


@pytest.fixture(scope="module", params=list(MODES))
def hm(request):
    m = make_mount(request.param)
    m.mode = request.param
    try:
        yield m
    finally:
        end_mount(m)


def sh(m, cmd, session=None):
    s = session or m.new_session()
    out, err, code = m.run(s, f"cd /workspace && {cmd}", timeout=60)
    return out.decode(errors="replace"), err.decode(errors="replace"), code


def must(m, cmd):
    out, err, code = sh(m, cmd)
    assert code == 0, f"{cmd!r}: {err}"
    return out


def test_limits_and_log_say_which_workspace_this_is(hm):
    lim = limits(hm)
    assert lim["host_symlinks"] == "nofollow", lim
    if hm.mode == "fuse-fallback":
        assert lim["workspace"].startswith("fuse-fallback "), lim
        assert "cannot be idmapped" in lim["workspace"], lim
        assert "workspace/ is served through FUSE: " in hm.daemon_log()
    else:
        assert lim["workspace"] == hm.mode, lim


# ---- git on the host ---------------------------------------------------------------------


def commit(repo):
    """Shell: a repository with one commit of f, and f changed since."""
    return (f"git init -q {repo} && cd {repo} && echo a > f && git add f && "
            f"git -c user.email=s@b -c user.name=s commit -qm one && echo b > f && cd ..")


def hit_cmd(m):
    # Trailing `true` takes the arguments git appends to a shell command.
    return f"id -u >> {m.hit}; true"


def fsmonitor(m, r):
    return commit(r) + f" && git -C {r} config core.fsmonitor '{hit_cmd(m)}'", ["status"]


def pager(m, r):
    return commit(r) + f" && git -C {r} config core.pager '{hit_cmd(m)}; cat'", ["log", "-p"]


def alias(m, r):
    return commit(r) + f" && git -C {r} config alias.st '!{hit_cmd(m)}'", ["st"]


def diff_external(m, r):
    return commit(r) + f" && git -C {r} config diff.external '{hit_cmd(m)}'", ["diff"]


def pre_commit_hook(m, r):
    hook = f"{r}/.git/hooks/pre-commit"
    return (commit(r) + f" && printf '#!/bin/sh\\n{hit_cmd(m)}\\n' > {hook} && chmod +x {hook}",
            ["-c", "user.email=h@b", "-c", "user.name=h", "commit", "-qam", "host"])


def hooks_path(m, r):
    hook = f"{r}/.hooks/post-checkout"
    return (commit(r) + f" && mkdir {r}/.hooks && printf '#!/bin/sh\\n{hit_cmd(m)}\\n' > {hook}"
            f" && chmod +x {hook} && git -C {r} config core.hooksPath .hooks",
            ["checkout", "-q", "-b", "other"])


def gitfile(m, r):
    # A worktree whose .git is a file naming a gitdir elsewhere in the workspace.
    return (commit(f"{r}-src") + f" && mv {r}-src/.git {r}-store && mv {r}-src {r} && "
            f"echo 'gitdir: ../{r}-store' > {r}/.git && "
            f"git -C {r} config core.fsmonitor '{hit_cmd(m)}'", ["status"])


ATTACKS = {f.__name__: f for f in (fsmonitor, pager, alias, diff_external, pre_commit_hook,
                                   hooks_path, gitfile)}


def host_git(m, repo, args, uid=None, trust=False):
    """git ARGS in workspace/REPO on the host, as root or uid, on a pty (so the pager runs),
    with nothing but the repository's own config; trust: with safe.directory=*."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(m.home), "GIT_CONFIG_NOSYSTEM": "1",
           "TERM": "xterm", "LANG": "C"}
    argv = ["git", "-C", str(m.workspace / repo)]
    if trust:
        argv += ["-c", "safe.directory=*"]
    argv += args
    if uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    master, slave = os.openpty()
    try:
        res = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=slave,
                             stderr=subprocess.PIPE, env=env, timeout=30, cwd="/")
    finally:
        os.close(slave)
        os.close(master)
    return res


REFUSALS = (b"dubious ownership", b"Not a git repository", b"is not a git command")


def hits(m):
    return m.hit.read_text().split() if m.hit.exists() else []


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("runner", ["root", "other-user"])
def test_host_git_refuses_a_repository_the_sandbox_wrote(hm, attack, runner):
    if hm.mode == "fuse-fallback":
        pytest.skip("the fallback here runs with idmap = user, whose risk is documented")
    repo = uniq("repo")
    setup, args = ATTACKS[attack](hm, repo)
    must(hm, setup)
    assert hits(hm) == []  # the sandbox's own git ran nothing of it
    res = host_git(hm, repo, args, uid=None if runner == "root" else NOBODY)
    # Refused, or the repository not taken as one (git diff falls back to --no-index, an
    # alias is looked up before the repository is, and is just not known).
    assert res.returncode != 0 and any(r in res.stderr for r in REFUSALS), res
    assert hits(hm) == [], f"{attack} ran on the host"


# What the other user can do in a repository it cannot write (no commit, no checkout).
READ_ONLY = ("fsmonitor", "pager", "alias", "diff_external", "gitfile")


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("runner", ["root", "other-user"])
def test_the_attacks_are_real_when_git_is_told_to_trust_the_repository(hm, attack, runner):
    if hm.mode == "fuse-fallback":
        pytest.skip("shown in the kernel and fuse modes")
    if runner == "other-user" and attack not in READ_ONLY:
        pytest.skip("git stops before the hook: the other user cannot write the repository")
    uid = 0 if runner == "root" else NOBODY
    repo = uniq("repo")
    setup, args = ATTACKS[attack](hm, repo)
    must(hm, setup)
    hm.hit.unlink(missing_ok=True)
    host_git(hm, repo, args, uid=uid or None, trust=True)
    assert hits(hm) and set(hits(hm)) == {str(uid)}, f"{attack} did not run even when trusted"
    hm.hit.unlink()


def test_a_repository_the_host_made_is_untrusted_once_the_sandbox_had_it(hm):
    if hm.mode == "fuse-fallback":
        pytest.skip("the fallback here runs with idmap = user, whose risk is documented")
    repo = uniq("hostrepo")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(hm.home), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(hm.workspace / repo)], check=True, env=env)
    # root's own repository: trusted by root's git until a command may have changed it
    assert host_git(hm, repo, ["status"]).returncode == 0
    must(hm, f"git -C {repo} config core.fsmonitor '{hit_cmd(hm)}'")
    res = host_git(hm, repo, ["status"])
    assert res.returncode != 0 and b"dubious ownership" in res.stderr, res
    assert hits(hm) == []


def test_idmap_user_lets_roots_git_run_the_sandboxs_config_as_documented():
    # The risk written next to idmap = user: files of the sandbox's show as root's.
    m = Mount(tempfile.mkdtemp(prefix="sbxfs-safe-"), "[sandbox]\nidmap = user\n", False)
    started(m)
    try:
        repo = uniq("repo")
        setup, args = fsmonitor(m, repo)
        must(m, setup)
        host_git(m, repo, args)
        assert hits(m) and set(hits(m)) == {"0"}
    finally:
        stopped_cleanly(m)


# ---- the host's files stay the sandbox's to change ---------------------------------------


def test_files_the_host_puts_in_are_writable_by_the_next_command(hm):
    d = uniq("host")
    w = hm.workspace
    must(hm, f"mkdir {d} && echo sandbox > {d}/edited")
    subprocess.run(["cp", "/etc/hostname", str(w / d / "copied")], check=True)
    subprocess.run(["cp", "-p", "/etc/hostname", str(w / d / "copied-p")], check=True)
    with open(w / d / "opened", "w") as f:
        f.write("python\n")
    os.makedirs(w / d / "made" / "deep")
    (w / d / "made" / "deep" / "f").write_text("deep\n")
    os.mkdir(w / d / "empty")
    # an editor's save: a new file renamed over the sandbox's
    (w / d / ".edited.swp").write_text("host\n")
    os.rename(w / d / ".edited.swp", w / d / "edited")
    out = must(hm, f"cd {d} && for f in copied copied-p opened made/deep/f edited; do "
                   f"echo x >> $f || exit 1; done && touch empty/new made/new && "
                   f"mkdir made/deep/sub && rm copied && echo ok")
    assert out == "ok\n"
    assert (w / d / "edited").read_text() == "host\nx\n"
    uid, gid = hm.sandbox_ids()
    for rel in ("copied-p", "opened", "made", "made/deep/f", "empty", "edited"):
        st = os.stat(hm.ws / d / rel)
        assert (st.st_uid, st.st_gid) == (uid, gid), rel


def test_a_background_process_can_write_what_the_host_just_wrote(hm):
    name = uniq("bg")
    (hm.workspace / name).write_text("host\n")
    s = hm.new_session()
    proc = s / "procs" / "w"
    os.mkdir(proc)
    (proc / "cmd").write_text(f"cd /workspace && echo bg >> {name}")
    assert (proc / "exit").read_text() == "0\n"
    assert (hm.workspace / name).read_text() == "host\nbg\n"


def test_hard_links_and_device_nodes_of_the_host_are_not_handed_over(hm):
    if hm.mode == "fuse-fallback":
        pytest.skip("idmap = user hands nothing over: it swaps")
    d = uniq("keep")
    os.mkdir(hm.workspace / d)
    # A file with another link may be one outside the workspace (a local clone's objects).
    (hm.outside / f"{d}-obj").write_text("object\n")
    os.link(hm.outside / f"{d}-obj", hm.ws / d / "obj")
    os.mknod(hm.ws / d / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    out, _, code = sh(hm, f"echo x >> {d}/obj; touch {d}/new && echo ok")
    assert out == "ok\n" and code == 0
    assert os.stat(hm.outside / f"{d}-obj").st_uid == 0
    assert os.stat(hm.ws / d / "null").st_uid == 0
    assert (hm.outside / f"{d}-obj").read_text() == "object\n"
    assert os.stat(hm.ws / d).st_uid == hm.sandbox_ids()[0]


def test_a_directory_moved_out_of_the_workspace_is_not_the_sandboxs(hm):
    if hm.ramfs:
        pytest.skip("the workspace is a filesystem of its own: nothing moves out of it")
    d = uniq("leaves")
    must(hm, f"mkdir {d}")
    # The host moves it out through the backing directory, then writes in it: the watch that
    # followed it there hands nothing over.
    os.rename(hm.ws / d, hm.outside / d)
    (hm.outside / d / "host").write_text("host\n")
    must(hm, "true")
    assert os.stat(hm.outside / d / "host").st_uid == 0


# ---- links, FIFOs, sockets, sparse files ---------------------------------------------------


def test_a_planted_link_to_a_file_outside_is_neither_read_nor_written(hm):
    name = uniq("report")
    must(hm, f"ln -s {hm.canary} {name}.txt && ln -s {name}.txt {name}.rel")
    for link in (hm.workspace / f"{name}.txt", hm.workspace / f"{name}.rel"):
        assert stat.S_ISLNK(os.lstat(link).st_mode)
        assert errno_of(os.stat, link) == errno.ELOOP
        for flags in (os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND,
                      os.O_WRONLY | os.O_CREAT, os.O_RDWR):
            assert errno_of(os.open, link, flags, 0o644) == errno.ELOOP, (link, flags)
        assert errno_of(shutil.copyfile, "/etc/hostname", link) == errno.ELOOP
    assert os.readlink(hm.workspace / f"{name}.txt") == str(hm.canary)
    hm.untouched()
    # The sandbox's own view follows its links, as usual; the host's follows none, even one
    # that stays inside the workspace (the price: see docs/workspace.md).
    assert must(hm, f"echo in > {name}.in && ln -s {name}.in {name}.inrel && cat {name}.inrel") \
        == "in\n"
    assert errno_of(os.open, hm.workspace / f"{name}.inrel", os.O_RDONLY) == errno.ELOOP


def test_a_planted_link_to_a_directory_outside_is_not_entered(hm):
    name = uniq("outdir")
    must(hm, f"ln -s {hm.outside / 'dir'} {name} && mkdir {name}-real && "
             f"ln -s {name}-real {name}-rel")
    link = hm.workspace / name
    assert errno_of(os.listdir, link) == errno.ELOOP
    assert errno_of(os.open, link / "kept", os.O_RDONLY) == errno.ELOOP
    assert errno_of(os.open, link / "new", os.O_WRONLY | os.O_CREAT, 0o644) == errno.ELOOP
    assert errno_of(os.mkdir, link / "newdir") == errno.ELOOP
    assert errno_of(os.rename, hm.workspace / f"{name}-real", link / "moved") == errno.ELOOP
    assert errno_of(os.open, hm.workspace / f"{name}-rel" / "x", os.O_WRONLY | os.O_CREAT,
                    0o644) == errno.ELOOP
    hm.untouched()
    assert os.listdir(hm.workspace / f"{name}-real") == []


def test_a_planted_fifo_hangs_only_its_opener(hm):
    name = uniq("fifo")
    must(hm, f"mkfifo {name}")
    path = hm.workspace / name
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # at once
    assert os.read(fd, 10) == b""
    os.close(fd)
    assert errno_of(os.open, path, os.O_WRONLY | os.O_NONBLOCK) == errno.ENXIO
    # A blocking open waits for a writer, as on any filesystem; the daemon does not.
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("fd", os.open(path, os.O_RDONLY)),
                              daemon=True)
    reader.start()
    reader.join(0.3)
    assert reader.is_alive()
    assert must(hm, "echo still answering") == "still answering\n"
    wfd = os.open(path, os.O_WRONLY)
    reader.join(10)
    assert not reader.is_alive()
    os.write(wfd, b"x")
    assert os.read(got["fd"], 1) == b"x"
    os.close(wfd)
    os.close(got["fd"])


def test_a_planted_socket_opens_and_connects_to_nothing(hm):
    name = uniq("sock")
    must(hm, f"python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"{name}\")'")
    path = hm.workspace / name
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert errno_of(os.open, path, os.O_RDONLY) == errno.ENXIO
    with socket.socket(socket.AF_UNIX) as c:
        assert errno_of(c.connect, str(path)) == errno.ECONNREFUSED


def test_a_planted_sparse_file_is_read_and_written_by_range(hm):
    name = uniq("sparse")
    tib, gib = 1 << 40, 1 << 30
    must(hm, f"truncate -s 1T {name} && printf x | dd of={name} bs=1 seek={gib} conv=notrunc "
             f"status=none")
    path = hm.workspace / name
    st = os.stat(path)
    assert st.st_size == tib and st.st_blocks * 512 < 64 << 20, st
    fd = os.open(path, os.O_RDWR)
    try:
        assert os.lseek(fd, 0, os.SEEK_DATA) <= gib
        assert os.pread(fd, 1, gib) == b"x"
        assert os.pread(fd, 4096, tib // 2) == bytes(4096)
        assert os.pwrite(fd, b"y", 1 << 35) == 1
    finally:
        os.close(fd)
    assert os.stat(path).st_blocks * 512 < 64 << 20
    assert must(hm, f"dd if={name} bs=1 skip={1 << 35} count=1 status=none") == "y"
