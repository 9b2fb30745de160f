"""sbxfs installed like a real filesystem: -o options and their precedence, mount.fuse3 (what
`mount -t fuse.sbxfs` and fstab run), daemon mode (the starting process's exit code, detaching),
`sbxfs -u` in both workspace modes; the install tree, man pages, systemd unit and deployment
recipes are checked offline at the end of this file."""

import contextlib
import json
import os
import pwd
import re
import stat
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import (REPO_ROOT, all_pids, bounded, is_mounted, isolation_none, kill_quietly,
                     procs_matching, run_proc, sbxfs_binary, uniq, wait_until)


class Instance:
    """A daemon-mode sbxfs started by the test as a user would (no -f), in its own tmp dir."""

    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.ws, self.mnt, self.state = (self.tmp / n for n in ("ws", "mnt", "state"))
        self.ws.mkdir()
        self.mnt.mkdir()

    def isolation_opts(self):
        return ["isolation=none"] if isolation_none() else []

    def pids(self):
        """The daemon (and its launcher): processes naming this instance's mount point."""
        return procs_matching(str(self.mnt))

    def unmount(self):
        return run_proc([str(sbxfs_binary()), "-u", str(self.mnt)], timeout=30)

    def cleanup(self):
        if is_mounted(self.mnt):
            self.unmount()
        try:
            wait_until(lambda: not self.pids(), 10, "the daemon to end")
        finally:
            kill_quietly(self.pids())
            if not is_mounted(self.mnt):
                shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cmd):
        """A command in a new session: its stdout."""
        session = self.mnt / "sessions" / uniq("s")
        bounded(os.mkdir, session)
        bounded((session / "cmd").write_bytes, cmd.encode())
        return bounded((session / "stdout").read_bytes)


@pytest.fixture
def inst():
    i = Instance(tempfile.mkdtemp(prefix="sbxfs-install-"))
    yield i
    i.cleanup()


def daemon_pid(inst):
    """The daemon: of the processes naming the mount point, the one no other one started."""
    pids = inst.pids()
    parents = {}
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            parents[pid] = int(f.read().rsplit(")", 1)[1].split()[1])
    roots = [p for p in pids if parents[p] not in pids]
    assert len(roots) == 1, f"processes of the mount: {pids}"
    return roots[0]


def test_mount_fuse3_runs_sbxfs_with_source_and_options(inst):
    """`mount -t fuse.sbxfs SRC MNT -o ...` and fstab run `mount.fuse3 SRC MNT -t fuse.sbxfs
    -o ...`, which runs `sbxfs` from PATH: the real mount.fuse3 returns once the mount answers,
    config keys, fstab's own options and FUSE's pass, SOURCE is the workspace."""
    mount_fuse3 = shutil.which("mount.fuse3", path="/usr/sbin:/sbin")
    if not mount_fuse3:
        pytest.skip("mount.fuse3 is not installed (package fuse3)")
    bindir = inst.tmp / "bin"
    bindir.mkdir()
    (bindir / "sbxfs").symlink_to(sbxfs_binary())
    (inst.ws / "marker").write_text("from the source\n")
    opts = ",".join(["rw", "nosuid", "nofail", "_netdev", "x-systemd.requires=x", "defaults",
                     f"state_dir={inst.state}", "env.SBX_OPT=given", "session.lang=C",
                     *inst.isolation_opts()])
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    t0 = time.monotonic()
    res = run_proc([mount_fuse3, str(inst.ws), str(inst.mnt), "-t", "fuse.sbxfs", "-o", opts],
                   env=env, timeout=60)
    took = time.monotonic() - t0
    assert res.returncode == 0, res.stderr.decode()
    # The mount answers as soon as mount.fuse3 returned: no waiting.
    assert {"sessions", "workspace"} <= set(bounded(os.listdir, inst.mnt))
    with open("/proc/self/mounts") as f:
        line = next(ln for ln in f if f" {inst.mnt} " in ln)
    assert line.split()[0] == str(inst.ws) and line.split()[2] == "fuse.sbxfs", line
    assert "nosuid" in line.split()[3]
    assert inst.run("echo $SBX_OPT $LANG; cat marker") == b"given C\nfrom the source\n"
    assert took < 30
    res = inst.unmount()
    assert res.returncode == 0, res.stderr.decode()
    assert not is_mounted(inst.mnt)
    wait_until(lambda: not inst.pids(), 10, "the daemon to end after sbxfs -u")


def test_fstab_line_through_mount(inst):
    """A real fstab line (in a file of its own, `mount --fstab`) through mount(8), which drops
    its own options and runs mount.fuse3. mount(8) runs the helper with a fixed PATH, so the
    line names the binary under test in the type#source form mount.fuse3 also takes."""
    if not shutil.which("mount.fuse3", path="/usr/sbin:/sbin") or os.geteuid() != 0:
        pytest.skip("needs root and mount.fuse3 (package fuse3)")
    opts = ",".join([f"state_dir={inst.state}", "env.FROM=fstab", "nofail", "noauto",
                     "x-systemd.automount", *inst.isolation_opts()])
    fstab = inst.tmp / "fstab"
    fstab.write_text(f"{sbxfs_binary()}#{inst.ws} {inst.mnt} fuse {opts} 0 0\n")
    res = run_proc(["mount", "--fstab", str(fstab), str(inst.mnt)], timeout=60)
    assert res.returncode == 0, res.stderr.decode()
    assert inst.run("echo $FROM") == b"fstab\n"
    res = inst.unmount()
    assert res.returncode == 0 and not is_mounted(inst.mnt), res.stderr.decode()


@pytest.mark.parametrize("mode", ["kernel", "fuse"])
def test_daemon_outlives_its_shell_and_sbxfs_u_stops_it(inst, mode):
    """Started without -f from a shell in its own session that then exits: exit code 0 with the
    mount answering, the daemon in a session of its own, in /, stdio on /dev/null; sbxfs -u
    unmounts cleanly whether workspace/ is the kernel's mount or FUSE's."""
    rcfile = inst.tmp / "rc"
    cmd = [str(sbxfs_binary()), "--workspace", str(inst.ws), "--state-dir", str(inst.state),
           "-o", ",".join([f"workspace.mount={mode}", *inst.isolation_opts()]), str(inst.mnt)]
    script = " ".join(f"'{a}'" for a in cmd) + f"; echo $? > '{rcfile}'"
    res = run_proc(["setsid", "--wait", "bash", "-c", script], timeout=60)
    assert res.returncode == 0 and rcfile.read_text() == "0\n", res.stderr.decode()
    assert "sessions" in bounded(os.listdir, inst.mnt)  # answers at once
    pid = daemon_pid(inst)
    assert (inst.state / "sbxfs.pid").read_text() == f"{pid}\n"  # systemd's PIDFile=
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    assert int(fields[3]) == pid, "the daemon leads a session of its own"
    assert int(fields[4]) == 0, "no controlling terminal"
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
    assert inst.run("echo alive") == b"alive\n"
    if mode == "kernel" and os.geteuid() == 0:
        wait_until(lambda: is_mounted(inst.mnt / "workspace"), 10, "the kernel workspace")
    log = (inst.state / "sbxfs.log").read_text()
    assert "mounted on" in log
    res = inst.unmount()
    assert res.returncode == 0, res.stderr.decode()
    assert not is_mounted(inst.mnt / "workspace") and not is_mounted(inst.mnt)
    wait_until(lambda: not inst.pids(), 10, "the daemon to end after sbxfs -u")
    assert not (inst.state / "sbxfs.pid").exists()


def start(inst, *args, timeout=60):
    return run_proc([str(sbxfs_binary()), *args], timeout=timeout)


def test_bad_option_or_mount_point_fails_with_the_reason(inst):
    """A bad -o, an unknown key, a bad value, a mount point that cannot be made: exit status
    non-zero, the reason on stderr naming what was wrong, nothing left mounted or running."""
    base = ["--workspace", str(inst.ws), "--state-dir", str(inst.state)]
    cases = [
        (["-o", "frobnicate"], "frobnicate"),
        (["-o", "no_such_key=1"], "no_such_key"),
        (["-o", "memory_max=lots"], "memory_max"),
        (["-o", "session.network=host"], "network"),
        (["-o", "ro"], "ro"),
        (["--network", "bridge"], "network"),
    ]
    for extra, needle in cases:
        res = start(inst, *base, *extra, str(inst.mnt))
        assert res.returncode != 0 and needle in res.stderr.decode(), (extra, res)
    (inst.tmp / "file").write_text("")
    res = start(inst, *base, str(inst.tmp / "file" / "mnt"))
    assert res.returncode != 0 and "file/mnt" in res.stderr.decode(), res
    assert not is_mounted(inst.mnt) and not inst.pids()


def test_memory_max_alone_mounts_and_a_tmpfs_size_that_does_not_fit_is_refused(inst):
    """`-o memory_max=1G` and nothing else: /tmp and /dev/shm follow it (256M and 64M), so it
    mounts and a command runs; a tmp_size set too large for it is still refused, naming both
    sizes and where the unset one came from."""
    base = ["--workspace", str(inst.ws), "--state-dir", str(inst.state)]
    res = start(inst, *base, "-o", ",".join(["memory_max=1G", *inst.isolation_opts()]),
                str(inst.mnt))
    assert res.returncode == 0, res.stderr.decode()
    try:
        out = inst.run("df -k --output=size /tmp /dev/shm | tail -n 2 | tr -d ' '; echo ran")
        assert out.endswith(b"ran\n"), out
        if not isolation_none():
            assert out == b"262144\n65536\nran\n", out
    finally:
        assert inst.unmount().returncode == 0
    res = start(inst, *base, "-o", "memory_max=1G,tmp_size=1000M", str(inst.mnt))
    err = res.stderr.decode()
    assert res.returncode == 1, err
    assert "[sandbox] tmp_size (1000M) + shm_size (64M, from memory_max) must stay below " \
           "memory_max (1G)" in err, err
    assert not is_mounted(inst.mnt)


def test_failure_after_the_fork_reaches_the_starting_process(inst):
    """The daemon fails once detached (its sandbox cannot start: a launcher that exits at
    once): the starting process prints why and exits non-zero, with nothing left mounted."""
    res = start(inst, "--workspace", str(inst.ws), "--state-dir", str(inst.state), "-o",
                ",".join(["launcher=/bin/false", *inst.isolation_opts()]), str(inst.mnt))
    assert res.returncode != 0, res
    assert "launcher" in res.stderr.decode(), res.stderr.decode()
    assert not is_mounted(inst.mnt)


@contextlib.contextmanager
def fresh_user():
    """A user made for the test (useradd -m), and removed with its home afterwards; the
    processes it may have left are killed by pid first, as userdel requires."""
    name = uniq("sbxu")[:16]
    subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True, timeout=30)
    pw = pwd.getpwnam(name)
    try:
        yield pw
    finally:
        def owned():
            return [p for p in all_pids() if os.path.exists(f"/proc/{p}")
                    and _uid_of(p) == pw.pw_uid]
        kill_quietly(owned())
        wait_until(lambda: not owned(), 10, f"the processes of {name} to end")
        subprocess.run(["userdel", "-r", name], capture_output=True, timeout=30)


def _uid_of(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def test_a_normal_user_mounts_with_nothing_but_the_mount_point():
    """A newcomer's first mount as a normal user: `sbxfs ~/sbx`, no option. With /dev/fuse
    closed to them (mode 0600), it fails saying what access it needs and how to give it; with
    /dev/fuse open as Debian has it (0666), it mounts with its workspace and state under the
    user's XDG directories, runs a command as that user, and `sbxfs -u` unmounts."""
    if os.geteuid() != 0:
        pytest.skip("makes a user: needs root")
    sbxfs = str(sbxfs_binary())
    fuse_mode = stat.S_IMODE(os.stat("/dev/fuse").st_mode)
    with fresh_user() as pw:
        home = Path(pw.pw_dir)
        mnt = home / "sbx"
        as_user = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups",
                   "env", "-i", f"HOME={home}", f"USER={pw.pw_name}",
                   "PATH=/usr/local/bin:/usr/bin:/bin"]
        assert run_proc(as_user + ["mkdir", str(mnt)]).returncode == 0
        try:
            os.chmod("/dev/fuse", fuse_mode & ~0o066)
            res = run_proc(as_user + [sbxfs, str(mnt)])
            err = res.stderr.decode(errors="replace")
            assert res.returncode == 1, err
            assert "/dev/fuse: Permission denied: mounting as a normal user needs read and " \
                   "write access to it" in err, err
            assert "chmod 0666 /dev/fuse" in err, err
            os.chmod("/dev/fuse", 0o666)
            res = run_proc(as_user + [sbxfs, str(mnt)])
            err = res.stderr.decode(errors="replace")
            assert res.returncode == 0, err
            res = run_proc(as_user + ["sh", "-c", "cd ~/sbx && echo 'echo hi; id -u' > "
                                      "sessions/default/cmd && cat sessions/default/stdout"])
            assert res.stdout == f"hi\n{pw.pw_uid}\n".encode(), res.stderr
            assert (home / ".local/state/sbxfs/state/sbxfs.pid").is_file()
            assert (home / ".local/share/sbxfs/workspace").is_dir()
            res = run_proc(as_user + [sbxfs, "-u", str(mnt)])
            assert res.returncode == 0, res.stderr
            assert not is_mounted(mnt)
        finally:
            if is_mounted(mnt):
                run_proc(["fusermount3", "-u", "-z", str(mnt)])
            os.chmod("/dev/fuse", fuse_mode)


def test_precedence_file_then_o_then_flags(inst):
    """The ini file < -o < dedicated flags: [env] from the file overridden by -o env.NAME,
    the workspace from -o overridden by --workspace, and -o config=PATH as -c."""
    other_ws = inst.tmp / "other"
    other_ws.mkdir()
    (inst.ws / "which").write_text("flag\n")
    (other_ws / "which").write_text("option\n")
    ini = inst.tmp / "sbxfs.ini"
    ini.write_text(f"[sbxfs]\nworkspace = {other_ws}\n[env]\nA = file\nB = file\n")
    res = start(inst, "--state-dir", str(inst.state), "-o",
                ",".join([f"config={ini}", "env.B=option", f"workspace={other_ws}",
                          *inst.isolation_opts()]),
                "--workspace", str(inst.ws), str(inst.mnt))
    assert res.returncode == 0, res.stderr.decode()
    assert inst.run("echo $A $B; cat which") == b"file option\nflag\n"


def test_syslog_option_leaves_the_state_log_alone(inst):
    """-o syslog: the daemon logs to syslog, not to STATE/sbxfs.log."""
    res = start(inst, "--workspace", str(inst.ws), "--state-dir", str(inst.state), "-o",
                ",".join(["syslog", *inst.isolation_opts()]), str(inst.mnt))
    assert res.returncode == 0, res.stderr.decode()
    assert inst.run("echo ok") == b"ok\n"
    assert not (inst.state / "sbxfs.log").exists()


# ---------------------------------------------------------------------------------------------
# The install tree, man pages, systemd unit and deployment recipes, checked offline.

PREFIX_FILES = ["bin/sbxfs", "bin/sbxfs-fleet", "libexec/sbxfs-launcher", "libexec/sbxfs-git",
                "libexec/sbxfs-pydriver", "libexec/sbxfs-jsdriver", "share/man/man1/sbxfs.1",
                "share/man/man5/sbxfs.ini.5", "lib/systemd/system/sbxfs@.service",
                "lib/systemd/system/sbxfs-fleet.service"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`meson install --destdir` of the build the binary under test comes from: the tree."""
    build = sbxfs_binary().parent
    if not (build / "meson-info").is_dir():
        pytest.skip(f"{build} is not a meson build directory")
    prefix = subprocess.run(["meson", "introspect", "--buildoptions", str(build)],
                            capture_output=True, text=True, check=True).stdout
    prefix = next(o["value"] for o in json.loads(prefix) if o["name"] == "prefix")
    dest = tmp_path_factory.mktemp("destdir")
    res = run_proc(["meson", "install", "-C", str(build), "--no-rebuild", "--destdir",
                    str(dest)], timeout=120)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return dest, dest / prefix.lstrip("/")


@pytest.mark.no_daemon
def test_meson_install_tree(installed):
    """sbxfs, its helpers in libexec, the man pages, the unit, and /etc/sbxfs/sbxfs.ini, which
    a second install leaves as the admin edited it."""
    dest, prefix = installed
    for rel in PREFIX_FILES:
        assert (prefix / rel).is_file(), rel
    for rel in ("bin/sbxfs", "libexec/sbxfs-launcher", "libexec/sbxfs-git"):
        assert os.access(prefix / rel, os.X_OK), rel
    ini = dest / "etc/sbxfs/sbxfs.ini"
    assert ini.read_text() == (REPO_ROOT / "conf/sbxfs.ini").read_text()
    ini.write_text("[sandbox]\nnetwork = host\n")
    build = sbxfs_binary().parent
    res = run_proc(["meson", "install", "-C", str(build), "--no-rebuild", "--destdir",
                    str(dest)], timeout=120)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert ini.read_text() == "[sandbox]\nnetwork = host\n"
    assert b"-o OPTS" in run_proc([str(prefix / "bin/sbxfs"), "-h"]).stdout


def test_installed_sbxfs_finds_its_helpers_in_libexec(installed, inst):
    """The installed tree at its real prefix (bound there in a mount namespace of the test's
    own, so nothing else sees it): with no helper next to bin/sbxfs, the launcher comes from
    libexec, and a session runs."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    dest, prefix = installed
    real = "/" + str(prefix.relative_to(dest))
    assert not (prefix / "bin/sbxfs-launcher").exists()
    sbx = f"{real}/bin/sbxfs"
    session = inst.mnt / "sessions/a"
    script = (f"mount --bind '{prefix}' '{real}' && "
              f"'{sbx}' '{inst.ws}' '{inst.mnt}' -o "
              f"'{','.join([f'state_dir={inst.state}', *inst.isolation_opts()])}' && "
              f"mkdir '{session}' && echo 'echo installed' > '{session}/cmd' && "
              f"cat '{session}/stdout'; rc=$?; '{sbx}' -u '{inst.mnt}'; exit $rc")
    res = run_proc(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                   timeout=60)
    assert res.returncode == 0 and res.stdout == b"installed\n", res.stderr.decode()


@pytest.mark.no_daemon
@pytest.mark.parametrize("page", ["sbxfs.1", "sbxfs.ini.5"])
def test_man_pages_render_without_warnings(page):
    path = REPO_ROOT / "conf/man" / page
    if not shutil.which("groff") or not shutil.which("man"):
        pytest.skip("groff and man are not installed (packages groff-base, man-db)")
    res = run_proc(["groff", "-ww", "-mandoc", "-Tutf8", "-z", str(path)])
    assert res.returncode == 0 and res.stderr == b"", res.stderr.decode()
    res = run_proc(["man", "--warnings", "-l", str(path)], env=dict(os.environ, MANWIDTH="80"))
    assert res.returncode == 0 and res.stderr == b"", res.stderr.decode()
    assert b"SYNOPSIS" in res.stdout or b"DESCRIPTION" in res.stdout


@pytest.mark.no_daemon
def test_man_page_names_every_config_key():
    """sbxfs.ini(5) lists every key conf/sbxfs.ini documents."""
    page = (REPO_ROOT / "conf/man/sbxfs.ini.5").read_text()
    section = None
    for line in (REPO_ROOT / "conf/sbxfs.ini").read_text().splitlines():
        if m := re.fullmatch(r"\[(\w+)\]", line):
            section = m.group(1)
        elif section != "env" and (m := re.match(r"([a-z_]+) *=", line)):
            assert re.search(rf"^\.Ss \[{section}\]", page, re.M), section
            assert re.search(rf"\b{m.group(1)}\b", page), m.group(1)


@pytest.mark.no_daemon
def test_systemd_unit_verifies(installed, tmp_path):
    """systemd-analyze verify on the installed unit as an instance, its ExecStart pointed at
    the destdir's binary and man at the destdir's pages: no complaint at all."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not installed (package systemd)")
    dest, prefix = installed
    unit = (prefix / "lib/systemd/system/sbxfs@.service").read_text()
    installed_bin = "/" + str((prefix / "bin/sbxfs").relative_to(dest))
    assert f"ExecStart={installed_bin} " in unit and f"ExecStop={installed_bin} -u %f" in unit
    instance = subprocess.run(["systemd-escape", "--path", "/mnt/sbx"], capture_output=True,
                              text=True, check=True).stdout.strip()
    path = tmp_path / f"sbxfs@{instance}.service"
    path.write_text(unit.replace(installed_bin, str(prefix / "bin/sbxfs")))
    res = run_proc(["systemd-analyze", "verify", str(path)],
                   env=dict(os.environ, MANPATH=str(prefix / "share/man")))
    assert res.returncode == 0 and res.stderr == b"", res.stderr.decode()
    for key in ("Type=forking", "PIDFile=/var/lib/sbxfs/%i/state/sbxfs.pid", "NoNewPrivileges=yes",
                "Delegate=yes", "CapabilityBoundingSet="):
        assert key in unit, key
    # Options that would give the service a mount namespace of its own hide the mount.
    for key in ("ProtectSystem=", "ProtectHome=", "PrivateTmp=", "PrivateDevices=",
                "RestrictNamespaces="):
        assert f"\n{key}" not in unit, key


def containerfile_instructions(text):
    """(INSTRUCTION, arguments) of each logical line, continuations joined, comments out."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            word, _, args = cur.partition(" ")
            out.append((word, args.strip()))
            cur = ""
    assert not cur, "a continuation at the end"
    return out


@pytest.mark.no_daemon
def test_containerfile_is_well_formed():
    """Every instruction valid, Debian 12, built with meson, the runtime packages all known to
    Debian 12's apt (when this machine has its lists), sbxfs in the foreground."""
    valid = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
             "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK",
             "SHELL"}
    ins = containerfile_instructions((REPO_ROOT / "examples/container/Containerfile").read_text())
    assert all(w in valid for w, _ in ins), [w for w, _ in ins if w not in valid]
    froms = [a for w, a in ins if w == "FROM"]
    assert froms and all(a.split()[0] == "debian:12" for a in froms)
    runs = " ".join(a for w, a in ins if w == "RUN")
    assert "meson setup" in runs and "meson install" in runs
    entry = json.loads(next(a for w, a in ins if w == "ENTRYPOINT"))
    assert entry[0] == "/usr/bin/sbxfs" and "-f" in entry
    json.loads(next(a for w, a in ins if w == "CMD"))
    pkgs = set()
    for w, a in ins:
        if w == "RUN" and "apt-get install" in a:
            tail = a.split("apt-get install", 1)[1].split("&&")[0].split()
            pkgs |= {p for p in tail if not p.startswith("-")}
    assert {"fuse3", "bubblewrap", "libfuse3-dev"} <= pkgs
    if Path("/etc/debian_version").read_text().startswith("12") and shutil.which("apt-cache"):
        policy = run_proc(["apt-cache", "policy", *sorted(pkgs)]).stdout.decode()
        known = {name for name, cand in re.findall(
            r"^(\S+):\n\s+Installed: .*\n\s+Candidate: (.*)$", policy, re.M)
            if cand != "(none)"}
        assert pkgs <= known, f"not in Debian 12: {sorted(pkgs - known)}"


def yaml_load(path):
    yaml = pytest.importorskip("yaml", reason="python3-yaml is not installed")
    return list(yaml.safe_load_all(path.read_text()))


@pytest.mark.no_daemon
def test_compose_shares_the_mount_with_least_privilege():
    (doc,) = yaml_load(REPO_ROOT / "examples/container/compose.yaml")
    sbx, agent = doc["services"]["sbxfs"], doc["services"]["agent"]
    assert sbx["devices"] == ["/dev/fuse"] and sbx["cap_drop"] == ["ALL"]
    assert "SYS_ADMIN" in sbx["cap_add"] and "NET_ADMIN" not in sbx["cap_add"]
    assert not sbx.get("privileged")
    prop = {v["target"]: v["bind"]["propagation"] for v in sbx["volumes"] if v["type"] == "bind"}
    assert prop == {"/srv/sbx": "rshared"}
    prop = {v["target"]: v["bind"]["propagation"] for v in agent["volumes"]}
    assert prop == {"/srv/sbx": "rslave"}
    assert agent["depends_on"]["sbxfs"]["condition"] == "service_healthy"
    # The unit's capability list and the container's are the same measured set.
    unit = (REPO_ROOT / "conf/systemd/sbxfs@.service.in").read_text()
    caps = next(ln for ln in unit.splitlines() if ln.startswith("CapabilityBoundingSet="))
    assert {c.removeprefix("CAP_") for c in caps.split("=", 1)[1].split()} == set(sbx["cap_add"])


def quantity(q):
    """A Kubernetes memory quantity or an sbxfs size, in bytes."""
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1 << 10, "M": 1 << 20,
             "G": 1 << 30}
    for suffix, mult in units.items():
        if q.endswith(suffix):
            return int(q[:-len(suffix)]) * mult
    return int(q)


@pytest.mark.no_daemon
def test_kubernetes_recipe_required_fields():
    """A StatefulSet whose pod shares an emptyDir between sbxfs (Bidirectional, privileged,
    as Kubernetes requires) and an agent (HostToContainer), with a readiness probe on the
    mount and the sandbox's limits (-o) within the container's."""
    (doc,) = yaml_load(REPO_ROOT / "examples/kubernetes/sbxfs-statefulset.yaml")
    assert doc["apiVersion"] == "apps/v1" and doc["kind"] == "StatefulSet"
    spec = doc["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    for c in pod["containers"]:
        assert c["name"] and c["image"]
    sbx = next(c for c in pod["containers"] if c["name"] == "sbxfs")
    agent = next(c for c in pod["containers"] if c["name"] == "agent")
    shared = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    mounts = {m["name"]: m for m in sbx["volumeMounts"]}
    amounts = {m["name"]: m for m in agent["volumeMounts"]}
    (name,) = shared & set(mounts) & set(amounts)
    assert mounts[name]["mountPropagation"] == "Bidirectional"
    assert amounts[name]["mountPropagation"] == "HostToContainer"
    assert sbx["securityContext"]["privileged"] is True
    mnt = sbx["args"][1]
    assert mnt.startswith(mounts[name]["mountPath"] + "/")
    assert mnt in " ".join(sbx["readinessProbe"]["exec"]["command"])
    assert sbx["lifecycle"]["preStop"]["exec"]["command"][-2:] == ["-u", mnt]
    opts = dict(o.split("=", 1) for o in sbx["args"][sbx["args"].index("-o") + 1].split(","))
    limits = sbx["resources"]["limits"]
    assert quantity(opts["memory_max"]) < quantity(limits["memory"])
    assert float(opts["cpu_max"]) <= float(limits["cpu"])
    claims = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
    assert set(mounts) - {name} <= claims


FLEET_K8S = REPO_ROOT / "examples/kubernetes/fleet"


def fleet_manifests():
    kust = yaml_load(FLEET_K8S / "kustomization.yaml")[0]
    docs = [d for name in kust["resources"] for d in yaml_load(FLEET_K8S / name)]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


@pytest.mark.no_daemon
def test_kubernetes_fleet_recipe_fits_together():
    """The fleet across nodes: PEERS names every replica through the headless Service the
    StatefulSet names, in ordinal order (the ordinal is the node's place); the fleet container
    is privileged and shares its mount Bidirectional, the bridge sees it HostToContainer and
    is not privileged; the tokens Secret is mounted 0400 where --tokens reads it; the Ingress
    and the NetworkPolicy reach the bridge's port."""
    m = fleet_manifests()
    sts = m[("StatefulSet", "sbxfs-fleet")]
    spec, pod = sts["spec"], sts["spec"]["template"]["spec"]
    headless = m[("Service", spec["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    for svc in (headless, m[("Service", "sbxfs-bridge")]):
        assert svc["spec"]["selector"].items() <= labels.items()
    fleet_c = next(c for c in pod["containers"] if c["name"] == "fleet")
    bridge_c = next(c for c in pod["containers"] if c["name"] == "bridge")
    assert fleet_c["securityContext"]["privileged"] is True
    assert "securityContext" not in bridge_c or not bridge_c["securityContext"].get("privileged")
    shared = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    fm = {v["name"]: v for v in fleet_c["volumeMounts"]}
    bm = {v["name"]: v for v in bridge_c["volumeMounts"]}
    (name,) = shared & set(fm) & set(bm)
    assert fm[name]["mountPropagation"] == "Bidirectional"
    assert bm[name]["mountPropagation"] == "HostToContainer"
    fleet_mnt = fleet_c["args"][-1]
    assert fleet_mnt.startswith(fm[name]["mountPath"] + "/")
    script = bridge_c["args"][0]
    assert f"sbxfs-bridge.js {fleet_mnt} " in script and "--behind-proxy" in script
    env = {e["name"]: e["value"] for e in bridge_c["env"]}
    peers = env["PEERS"].split(",")
    port = bridge_c["ports"][0]["containerPort"]
    assert peers == [f"http://{sts['metadata']['name']}-{i}.{headless['metadata']['name']}:{port}"
                     for i in range(spec["replicas"])]
    assert '--self "${HOSTNAME##*-}"' in script and f"0.0.0.0:{port}" in script
    tokens = next(v for v in pod["volumes"] if "secret" in v)
    assert tokens["secret"]["defaultMode"] == 0o400
    tdir = next(v for v in bridge_c["volumeMounts"] if v["name"] == tokens["name"])["mountPath"]
    assert f"--tokens {tdir}/tokens " in script
    ing = m[("Ingress", "sbxfs-bridge")]
    backend = ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == "sbxfs-bridge" and backend["port"]["name"] == bridge_c["ports"][0]["name"]
    assert ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    pol = m[("NetworkPolicy", "sbxfs-bridge")]
    assert pol["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert pol["spec"]["ingress"][0]["ports"] == [{"port": port}]


@pytest.mark.no_daemon
@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl is not installed (scripts/bootstrap --test installs Debian's "
                           "kubernetes-client)")
def test_kubernetes_fleet_recipe_builds_with_kustomize():
    """kubectl kustomize builds the recipe offline (no cluster is reachable here, so nothing is
    applied): every resource comes out, with the kinds the recipe names."""
    res = subprocess.run(["kubectl", "kustomize", str(FLEET_K8S)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    yaml = pytest.importorskip("yaml", reason="python3-yaml is not installed")
    built = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(res.stdout)}
    assert built == set(fleet_manifests()), built
