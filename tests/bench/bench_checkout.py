#!/usr/bin/python3
"""bench_checkout.py: how long a git checkout through sbxfs takes, against `git clone`.

Builds a local repository of 10,000 files (100 directories of 100, two commits) in a temporary
directory, mounts a fresh sbxfs next to it (binary: $SBXFS_BIN, else build/sbxfs of this
checkout; default isolation, or $SBXFS_EXTRA_ARGS), then measures in one run:

  sbxfs:     the time from writing `file://REPO dir=runN` to a session's `checkout` until a
             read of `checkout` has returned its final line (`ok ...`), the clone done by
             sbxfs-git (libgit2) outside the sandbox;
  git clone: `git clone --no-local REPO DIR` into a native directory on the same file system
             as the workspace (the workspace's backing directory's parent);
  (extra)    sbxfs-git run directly, without the daemon, into a native directory: what
             libgit2 itself takes, to tell the daemon's share from libgit2's.

One warm-up clone, then the median of N runs each (default 3), interleaved so load
changes hit all alike, and the ratios. Every clone is checked (ok line / exit status, 10,000
files) and removed before the next. Unmounts at the end; takes well under 3 minutes; a watchdog
kills the daemon if a step hangs.

usage: tests/bench/bench_checkout.py [--files N] [--runs N]
"""

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, read_to_eof, sbxfs_binary, start_watchdog, \
    write_file  # noqa: E402

WATCHDOG_SECONDS = 170
GIT = "/usr/bin/git"


def git_env(home):
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@x", "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@x"}


def build_repo(path, nfiles, env):
    """A repository of nfiles small files in directories of 100, two commits."""
    subprocess.run([GIT, "init", "-q", "-b", "main", str(path)], env=env, check=True)
    for i in range(nfiles):
        d = path / "src" / f"d{i // 100:03}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"f{i:05}.txt").write_text(f"file {i}\n" + "x" * (i % 200) + "\n")
    subprocess.run([GIT, "-C", str(path), "add", "-A"], env=env, check=True)
    subprocess.run([GIT, "-C", str(path), "commit", "-q", "-m", "files"], env=env, check=True)
    (path / "README").write_text("bench\n")
    subprocess.run([GIT, "-C", str(path), "add", "README"], env=env, check=True)
    subprocess.run([GIT, "-C", str(path), "commit", "-q", "-m", "readme"], env=env, check=True)
    for p in [path, *path.rglob("*")]:  # the sandbox's user clones it
        p.chmod(0o755 if p.is_dir() else 0o644)
    head = subprocess.run([GIT, "-C", str(path), "rev-parse", "HEAD"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    return head


def count_files(path):
    """Files of the work tree (outside .git)."""
    n = 0
    for root, dirs, files in os.walk(path):
        if ".git" in dirs:
            dirs.remove(".git")
        n += len(files)
    return n


FINAL_RE = re.compile(rb"^ok ([0-9a-f]{40}) (\S+) (\S+)$")


def sbx_checkout(m, sdir, url, name, head, nfiles):
    """Seconds from writing the request to checkout until its final line has been read."""
    t0 = time.perf_counter_ns()
    write_file(str(sdir / "checkout"), f"{url} dir={name}\n".encode())
    out = read_to_eof(str(sdir / "checkout"))
    elapsed = (time.perf_counter_ns() - t0) / 1e9
    lines = out.splitlines()
    final = FINAL_RE.match(lines[-1]) if lines else None
    if not final or final.group(1).decode() != head:
        raise RuntimeError(f"checkout of {url}: {out[-500:]!r}")
    got = count_files(m.ws / name)
    if got != nfiles:
        raise RuntimeError(f"checkout of {url}: {got} files, expected {nfiles}")
    shutil.rmtree(m.ws / name)
    return elapsed, len(lines) - 1


def git_clone(repo, native, name, env, nfiles):
    dest = native / name
    t0 = time.perf_counter_ns()
    subprocess.run([GIT, "clone", "-q", "--no-local", str(repo), str(dest)], env=env,
                   check=True, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter_ns() - t0) / 1e9
    got = count_files(dest)
    if got != nfiles:
        raise RuntimeError(f"git clone: {got} files, expected {nfiles}")
    shutil.rmtree(dest)
    return elapsed


def helper_clone(helper, url, root, native, name, head, nfiles):
    """sbxfs-git run directly (as the caller), into native/name, reading below root."""
    t0 = time.perf_counter_ns()
    res = subprocess.run([str(helper), f"--local-root={root}", "--", str(native), name,
                          f"/native/{name}", url],
                         env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
                         capture_output=True, stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter_ns() - t0) / 1e9
    last = res.stdout.splitlines()[-1] if res.stdout else b""
    final = FINAL_RE.match(last)
    if res.returncode != 0 or not final or final.group(1).decode() != head:
        raise RuntimeError(f"sbxfs-git: status {res.returncode}, {res.stdout[-300:]!r}")
    got = count_files(native / name)
    if got != nfiles:
        raise RuntimeError(f"sbxfs-git: {got} files, expected {nfiles}")
    shutil.rmtree(native / name)
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=10000, help="files in the repository")
    ap.add_argument("--runs", type=int, default=3, help="measured runs of each")
    args = ap.parse_args()

    binary = sbxfs_binary()
    helper = binary.parent / "sbxfs-git"
    if not os.access(binary, os.X_OK) or not os.access(helper, os.X_OK):
        sys.exit(f"no sbxfs or sbxfs-git next to {binary} (build it, or set SBXFS_BIN)")
    t_start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="sbxfs-bench-co-"))
    # The checkout runs as the sandbox's user and must traverse the directories above the
    # workspace (mkdtemp makes this one 0700).
    tmp.chmod(0o755)
    env = git_env(tmp)
    m = None
    try:
        repo = tmp / "repo"
        t0 = time.monotonic()
        head = build_repo(repo, args.files, env)
        nfiles = args.files + 1  # and the README
        t_build = time.monotonic() - t0
        url = f"file://{repo}"
        native = tmp / "native"  # same file system as the workspace (tmp/ws)
        native.mkdir()
        same_fs = os.stat(native).st_dev == os.stat(tmp).st_dev

        conf = tmp / "sbxfs.ini"  # the repository is outside the workspace
        conf.write_text(f"[session]\ngit_local_roots = {repo}\n")
        m = Mount(binary, tmp, extra=["-c", str(conf),
                                      *shlex.split(os.environ.get("SBXFS_EXTRA_ARGS", ""))],
                  new_session=True, remove_tmp=False)
        timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
        sdir = m.mnt / "sessions" / "bench"
        os.mkdir(sdir)
        n = [0]

        def name():
            n[0] += 1
            return f"run{n[0]}"

        fns = [
            lambda: sbx_checkout(m, sdir, url, name(), head, nfiles),
            lambda: git_clone(repo, native, name(), env, nfiles),
            lambda: helper_clone(helper, url, repo, native, name(), head, nfiles),
        ]
        fns[1]()  # warm-up: the repository into the page cache
        samples = [[] for _ in fns]
        for _ in range(args.runs):
            for fn, out in zip(fns, samples):
                out.append(fn())
        os.rmdir(sdir)
        timer.cancel()
    finally:
        if m is not None:
            m.close()
        if m is None or not os.path.ismount(m.mnt):
            shutil.rmtree(tmp, ignore_errors=True)

    t_sbx = [t for t, _ in samples[0]]
    progress = [p for _, p in samples[0]]
    t_git, t_helper = samples[1], samples[2]
    s_sbx, s_git, s_helper = (statistics.median(v) for v in (t_sbx, t_git, t_helper))
    extra = os.environ.get("SBXFS_EXTRA_ARGS", "") or "default isolation"
    print(f"sbxfs checkout benchmark ({binary}; {extra})")
    print(f"repository: {nfiles} files ({args.files} in directories of 100, a README), "
          f"2 commits (built in {t_build:.1f} s); clones into {tmp} "
          f"(workspace and native dir on the same file system: {'yes' if same_fs else 'no'})")
    print()
    print(f"median of {args.runs} runs each after 1 warm-up clone, interleaved, seconds")
    print(f"    {'':58} {'median':>7}   runs")
    rows = [("sbxfs: file:// URL > checkout; read checkout to `ok`", s_sbx, t_sbx),
            ("git clone --no-local (native dir, same file system)", s_git, t_git),
            ("(extra) sbxfs-git run directly (libgit2, no daemon)", s_helper, t_helper)]
    for label, med, values in rows:
        print(f"    {label:58} {med:7.3f}   " + " ".join(f"{v:.3f}" for v in values))
    print(f"    {'ratio sbxfs / git clone':58} {s_sbx / s_git:7.2f}")
    print(f"    {'ratio sbxfs / sbxfs-git direct (the daemon share)':58} "
          f"{s_sbx / s_helper:7.2f}")
    print(f"    progress lines per sbxfs checkout: {', '.join(map(str, progress))}")
    print()
    print(f"total time {time.monotonic() - t_start:.1f} s")


if __name__ == "__main__":
    main()
