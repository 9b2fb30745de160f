"""No set-id files from the sandbox, and bounded envs.

The seccomp filter refuses S_ISUID and S_ISGID modes (chmod and its variants, creating opens,
mknod) with EPERM, and openat2 with ENOSYS; host views of the workspace are nosuid. A session's
env and the root env refuse, with EFBIG from write(), a variable over [session] env_value_max
or an env over env_max, and apply nothing of that write."""

import errno
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from sbxutil import (ConfMount, isolation_none, read_bytes, uniq, write_bytes, write_errno)

needs_filter = pytest.mark.skipif(
    isolation_none(), reason="--isolation none runs commands without the seccomp filter")

SETID = stat.S_ISUID | stat.S_ISGID


def sh(m, s, cmd):
    out, err, code = m.run(s, cmd)
    return out.decode(), err.decode(), code


def py(m, s, code):
    """python3 -c code in the session: (stdout, stderr, exit)."""
    return sh(m, s, "python3 - <<'EOF'\n" + code + "\nEOF")


def mountinfo_options(path):
    """The per-mount options of the mount at path, from /proc/self/mountinfo."""
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[4] == str(path):
            return fields[5].split(",")
    raise AssertionError(f"{path} is not a mount point")


# --- set-id modes ------------------------------------------------------------------------------


@needs_filter
def test_chmod_install_and_chmod_variants_refuse_setid(sbx):
    s = sbx.new_session()
    d = uniq("setid")
    out, err, code = sh(sbx, s, f"mkdir {d} && cd {d} && touch f && mkdir sub; "
                                "chmod u+s f; echo $?; chmod g+s f; echo $?; chmod 4755 f; echo $?; "
                                "chmod g+s sub; echo $?; install -m 4755 /bin/true t; echo $?; "
                                "install -m 2755 /bin/true t2; echo $?; chmod 755 f; echo $?; "
                                "cd ..")
    assert out.split() == ["1", "1", "1", "1", "1", "1", "0"], (out, err)
    assert err.count("Operation not permitted") == 6, err
    out, err, code = py(sbx, s, f"""
import ctypes, errno, os
os.chdir({d!r})
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("f", os.O_RDONLY)
def e(fn, *a):
    try:
        fn(*a)
        return 0
    except OSError as x:
        return x.errno
def raw(nr, *a):
    r = libc.syscall(nr, *a)
    return 0 if r == 0 else ctypes.get_errno()
print(e(os.fchmod, fd, 0o4755), e(os.fchmod, fd, 0o2755), e(os.chmod, "f", 0o6755),
      raw(268, -100, b"f", 0o4755), raw(452, -100, b"f", 0o2755, 0),
      e(os.fchmod, fd, 0o1777), oct(os.stat("f").st_mode))
""")
    assert code == 0, err
    fchmod_u, fchmod_g, chmod_ug, fchmodat, fchmodat2, sticky, mode = out.split()
    assert [fchmod_u, fchmod_g, chmod_ug, fchmodat] == [str(errno.EPERM)] * 4, out
    assert fchmodat2 in (str(errno.EPERM), str(errno.ENOSYS)), out  # ENOSYS: kernel < 6.6
    assert sticky == "0" and int(mode, 8) & 0o7777 == 0o1777, out  # the other bits still work
    for name in ("f", "sub", "t", "t2"):
        p = sbx.ws / d / name
        if p.exists():
            assert os.stat(p).st_mode & SETID == 0, name
            assert os.stat(sbx.workspace / d / name).st_mode & SETID == 0, name


@needs_filter
def test_creating_opens_and_mknod_refuse_setid(sbx):
    s = sbx.new_session()
    d = uniq("setid-open")
    out, err, code = py(sbx, s, f"""
import ctypes, errno, os
os.mkdir({d!r})
os.chdir({d!r})
libc = ctypes.CDLL(None, use_errno=True)
def e(fn, *a):
    try:
        r = fn(*a)
        if isinstance(r, int) and fn is os.open:
            os.close(r)
        return 0
    except OSError as x:
        return x.errno
W = os.O_WRONLY | os.O_CREAT
print(e(os.open, "a", W, 0o4755), e(os.open, "b", W | os.O_EXCL, 0o2755),
      e(os.open, ".", os.O_TMPFILE | os.O_WRONLY, 0o4700),
      e(os.mknod, "c", 0o104755),
      e(os.mknod, "p", 0o012755),
      libc.creat(b"d", 0o4755), ctypes.get_errno(),
      libc.syscall(2, b"e", W, 0o4755), ctypes.get_errno(),
      libc.syscall(437, -100, b"g", 0, 0), ctypes.get_errno())
# the same calls without set-id bits work
print(e(os.open, "ok1", W, 0o755), e(os.open, ".", os.O_TMPFILE | os.O_WRONLY, 0o700),
      e(os.mknod, "ok2", 0o100644), e(os.mkfifo, "ok3", 0o644),
      e(os.open, "ok1", os.O_RDONLY, 0o4755))
print(sorted(os.listdir(".")))
""")
    assert code == 0, err
    refused, fine, names = out.splitlines()
    a, b, tmp, c, p, creat, creat_e, open_, open_e, openat2, openat2_e = refused.split()
    assert [a, b, tmp, c, p] == [str(errno.EPERM)] * 5, refused
    assert (creat, creat_e, open_, open_e) == ("-1", str(errno.EPERM), "-1", str(errno.EPERM))
    # openat2 hides its mode in a struct: refused as unknown, so callers fall back to openat
    assert (openat2, openat2_e) == ("-1", str(errno.ENOSYS)), refused
    assert fine.split() == ["0"] * 5, fine  # an open without O_CREAT ignores its mode
    assert names == "['ok1', 'ok2', 'ok3']", names


@needs_filter
def test_a_session_still_builds_and_runs_things(sbx):
    s = sbx.new_session()
    d = uniq("build")
    out, err, code = sh(sbx, s, f"mkdir {d} && cd {d} && printf '#!/bin/sh\\necho ran\\n' > x.sh "
                                "&& chmod +x x.sh && ./x.sh && install -m 755 x.sh y.sh && ./y.sh "
                                "&& cp -a x.sh z.sh && tar cf t.tar x.sh && tar xf t.tar && cd ..")
    assert (out, code) == ("ran\nran\n", 0), err


# --- host views are nosuid ---------------------------------------------------------------------


def test_host_views_of_the_workspace_are_nosuid(sbx):
    assert {"nosuid", "nodev"} <= set(mountinfo_options(sbx.mnt))
    if sbx.kernel_workspace():
        assert {"nosuid", "nodev"} <= set(mountinfo_options(sbx.workspace))
    # the staging binds a root daemon makes for bwrap are reachable from the host too
    staged = [line.split()[4] for line in open("/proc/self/mountinfo")
              if line.split()[3] == os.path.realpath(sbx.ws)
              and line.split()[4].startswith("/run/sbxfs-")]
    for path in staged:
        assert {"nosuid", "nodev"} <= set(mountinfo_options(path)), path


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a setuid file needs root")
def test_a_setuid_file_already_in_the_backing_dir_gives_nothing(sbx):
    """A set-id file that got into the backing directory (made before the filter, or by the
    host) runs without its bits through workspace/ and in the sandbox."""
    name = uniq("suid-id")
    shutil.copy("/usr/bin/id", sbx.ws / name)
    uid = 4242
    os.chown(sbx.ws / name, uid, uid)
    os.chmod(sbx.ws / name, 0o6755)
    res = subprocess.run([str(sbx.workspace / name), "-u"], capture_output=True, timeout=30)
    assert res.stdout == b"0\n", res  # root stays root: the bits are ignored, not 4242


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a setuid file needs root")
@pytest.mark.skipif(isolation_none(),
                    reason="--isolation none runs commands as root in the backing directory")
def test_a_setuid_root_file_gives_the_sandbox_nothing(sbx):
    name = uniq("suid-id")
    shutil.copy("/usr/bin/id", sbx.ws / name)
    s = sbx.new_session()
    os.chown(sbx.ws / name, 0, 0)
    os.chmod(sbx.ws / name, 0o6755)
    out, err, code = sh(sbx, s, f"./{name} -u; ./{name} -g")
    assert code == 0 and "0" not in out.split(), (out, err)


# --- env bounds --------------------------------------------------------------------------------


def test_a_2mb_env_value_fails_its_write_and_applies_nothing(sbx):
    s = sbx.new_session()
    before = read_bytes(s / "env")
    for data in (b"BIG=" + b"x" * (2 << 20) + b"\n",  # one write, larger than a FUSE request
                 b"BIG=" + b"x" * 200000 + b"\n",     # over 128K, one request
                 b"OK=1\nBIG=" + b"x" * 200000):       # still being written: refused already
        assert write_errno(s / "env", data) == errno.EFBIG
        assert read_bytes(s / "env") == before
    out, err, code = sh(sbx, s, "echo ${#BIG} ${OK:-unset}; /bin/true && ls -d / && env | wc -l")
    assert code == 0, err
    assert out.splitlines()[:2] == ["0 unset", "/"], out


def test_a_value_at_the_limit_passes_and_one_byte_more_does_not(sbx):
    s = sbx.new_session()
    # NAME=VALUE and its NUL: 131072 bytes is what execve takes in one string
    fits = b"V=" + b"y" * (131072 - 3)
    assert write_errno(s / "env", fits + b"\n") == 0
    out, err, code = sh(sbx, s, "/usr/bin/printenv V | wc -c")
    assert (out, code) == ("131070\n", 0), err
    assert write_errno(s / "env", b"W=" + b"y" * (131072 - 2) + b"\n") == errno.EFBIG
    # the escaped form counts as what it stands for
    assert write_errno(s / "env", b"W=$'" + b"\\x41" * 100000 + b"'\n") == 0
    assert sh(sbx, s, "echo ${#W}")[0] == "100000\n"


def test_the_whole_env_is_bounded(sbx):
    s = sbx.new_session()
    chunk = b"y" * 100000
    accepted = 0
    for i in range(12):
        rc = write_errno(s / "env", b"V%d=" % i + chunk + b"\n")
        if rc:
            assert rc == errno.EFBIG
            break
        accepted += 1
    assert 8 <= accepted <= 10, accepted  # 1M in all
    env = sbx.read_env(s)
    assert f"V{accepted}" not in env and f"V{accepted - 1}" in env
    out, err, code = sh(sbx, s, "/bin/true && echo runs")
    assert (out, code) == ("runs\n", 0), err
    # shrinking passes, growing stays refused
    assert write_errno(s / "env", b"-V0\n") == 0
    assert write_errno(s / "env", b"V0=" + chunk * 2 + b"\n") == errno.EFBIG


def test_the_root_env_is_bounded(sbx):
    before = read_bytes(sbx.mnt / "env")
    assert write_errno(sbx.mnt / "env", b"HUGE=" + b"z" * (2 << 20) + b"\n") == errno.EFBIG
    assert write_errno(sbx.mnt / "env", b"HUGE=" + b"z" * 200000 + b"\n") == errno.EFBIG
    assert read_bytes(sbx.mnt / "env") == before
    s = sbx.new_session()
    assert "HUGE" not in sbx.read_env(s)
    assert sh(sbx, s, "/bin/true && echo runs")[0] == "runs\n"


def test_an_export_past_the_bound_leaves_the_session_usable(sbx):
    """A command's own export cannot be refused: bash keeps it, programs then fail with E2BIG
    while builtins work, and unsetting it through env (a write that shrinks) recovers."""
    s = sbx.new_session()
    out, err, code = sh(sbx, s, "export BIG=$(head -c 300000 /dev/zero | tr '\\0' x); echo set")
    assert (out, code) == ("set\n", 0), err
    out, err, code = sh(sbx, s, "echo builtin; /bin/true")
    assert out == "builtin\n" and code == 126 and "Argument list too long" in err, (out, err)
    assert write_errno(s / "env", b"-BIG\n") == 0
    out, err, code = sh(sbx, s, "/bin/true && echo back")
    assert (out, code) == ("back\n", 0), err


def test_a_configured_env_past_the_bounds_stops_the_start():
    tmp = tempfile.mkdtemp(prefix="sbxfs-it-envcfg-")
    try:
        m = ConfMount(tmp, "[session]\nenv_value_max = 100\n[env]\nLONG = " + "l" * 120 + "\n")
        res = subprocess.run(m.command_line(), capture_output=True, timeout=30)
        assert res.returncode != 0
        assert b"LONG" in res.stderr and b"env_value_max" in res.stderr, res.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_smaller_bounds_from_the_config():
    # four values of 4000 bytes and the base env (the proxy variables included: about 600
    # bytes) fit in 17K; a fifth does not
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-envcfg-"),
                  "[session]\nenv_value_max = 4K\nenv_max = 17K\n")
    try:
        m.start()
        s = m.new_session()
        assert write_errno(s / "env", b"A=" + b"a" * 4000 + b"\n") == 0
        assert write_errno(s / "env", b"B=" + b"b" * 5000 + b"\n") == errno.EFBIG
        assert write_errno(m.mnt / "env", b"B=" + b"b" * 5000 + b"\n") == errno.EFBIG
        for i in range(3):
            assert write_errno(s / "env", b"C%d=" % i + b"c" * 4000 + b"\n") == 0
        assert write_errno(s / "env", b"D=" + b"d" * 4000 + b"\n") == errno.EFBIG
        write_bytes(s / "env", b"-C0\n")
        assert sh(m, s, "/bin/true && echo runs")[0] == "runs\n"
        assert m.stop() == []
    finally:
        m.abort()
        m.cleanup_tmp()
