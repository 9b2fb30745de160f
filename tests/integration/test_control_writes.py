"""Exact answers from control files: an open is applied whole at close or not at all; values
that hold newlines or control bytes read back encoded and can never forge a line; every
readable control file stats with its true size, so copies made with sendfile, copy_file_range
or splice (shutil.copy, node's fs.copyFileSync, cp) hold what cat shows."""

import errno
import os
import shutil
import signal
import subprocess
import time

from sbxutil import bounded, errname, status, uniq, write_errno

SHELL_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def open_writes(path, chunks, flags=SHELL_WRITE):
    """One open, one write() per chunk; returns ([errno of each write], errno of close)."""
    def go():
        fd = os.open(path, flags, 0o644)
        errs = []
        for c in chunks:
            try:
                os.write(fd, c)
                errs.append(0)
            except OSError as exc:
                errs.append(exc.errno)
        try:
            os.close(fd)
            cerr = 0
        except OSError as exc:
            cerr = exc.errno
        return errs, cerr

    return bounded(go, what=f"writes to {path}")


def bytewise(data):
    return [data[i:i + 1] for i in range(len(data))]


def settle(sbx, s):
    """Waits until everything queued in the session before this point is done."""
    assert sbx.run(s, "true")[2] == 0


def absent(sbx, name):
    return not (sbx.ws / name).exists()


# --- cmd: all or nothing ----------------------------------------------------------------------

def test_cmd_over_1mib_never_runs(sbx):
    s = sbx.new_session()
    keep, marker = uniq("keep"), uniq("ran")
    (sbx.ws / keep).mkdir()
    script = f"touch {marker}\n: " + "x" * (1 << 20) + f"\nrm -rf {keep}/\n"
    errs, cerr = open_writes(s / "cmd", [script[i:i + 65536].encode()
                                         for i in range(0, len(script), 65536)])
    assert errno.EFBIG in errs, errs
    assert all(e in (0, errno.EFBIG) for e in errs), errs
    assert cerr == errno.EFBIG, errname(cerr)
    settle(sbx, s)
    assert absent(sbx, marker), "a cut command ran"
    assert (sbx.ws / keep).is_dir()


def test_cmd_nul_in_a_later_write_discards_the_earlier_ones(sbx):
    s = sbx.new_session()
    marker = uniq("ran")
    errs, cerr = open_writes(s / "cmd", [f"touch {marker}\n".encode(), b"echo a\0b\n"])
    assert errs == [0, errno.EINVAL], errs
    assert cerr == errno.EINVAL
    settle(sbx, s)
    assert absent(sbx, marker)


def test_cmd_poisoned_open_refuses_further_writes(sbx):
    s = sbx.new_session()
    marker = uniq("ran")
    errs, cerr = open_writes(s / "cmd", [b"\0", f"touch {marker}\n".encode()])
    assert errs == [errno.EINVAL, errno.EINVAL] and cerr == errno.EINVAL
    settle(sbx, s)
    assert absent(sbx, marker)


def test_cmd_written_a_byte_at_a_time_runs_once_whole(sbx):
    s = sbx.new_session()
    marker = uniq("bw")
    errs, cerr = open_writes(s / "cmd", bytewise(f"echo one >> {marker}\necho two >> {marker}\n"
                                                 .encode()))
    assert set(errs) == {0} and cerr == 0
    settle(sbx, s)
    assert (sbx.ws / marker).read_bytes() == b"one\ntwo\n"


def test_proc_cmd_nul_never_starts(sbx):
    s = sbx.new_session()
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    marker = uniq("pran")
    errs, cerr = open_writes(p / "cmd", [f"touch {marker}\n".encode(), b"\0"])
    assert errs == [0, errno.EINVAL] and cerr == errno.EINVAL
    settle(sbx, s)
    time.sleep(0.2)
    assert absent(sbx, marker)
    assert status(p)["state"] == "idle"


# --- env ----------------------------------------------------------------------------------------

def test_env_bad_line_after_a_good_one_applies_nothing(sbx):
    s = sbx.new_session()
    name = "EXACT_" + uniq("c").replace("-", "_")
    errs, cerr = open_writes(s / "env", [f"{name}=3\n".encode(), b"bad line\n"])
    assert errs == [0, errno.EINVAL] and cerr == errno.EINVAL
    assert name not in sbx.read_env(s)
    assert sbx.run(s, f'echo "${{{name}-unset}}"')[0] == b"unset\n"


def test_env_printf_line_by_line_bad_line_applies_nothing(sbx):
    s = sbx.new_session()
    r = subprocess.run(["sh", "-c", f"printf 'C=3\\nbad line\\n' > {s}/env"],
                       capture_output=True, timeout=30)
    assert r.returncode != 0
    assert "C" not in sbx.read_env(s)


def test_env_byte_at_a_time(sbx):
    s = sbx.new_session()
    errs, cerr = open_writes(s / "env", bytewise(b"BW_A=1\nBW_B=two words\n-BW_A\nBW_C=3"))
    assert set(errs) == {0} and cerr == 0
    env = sbx.read_env(s)
    assert "BW_A" not in env and env["BW_B"] == "two words" and env["BW_C"] == "3"


def test_env_bad_partial_last_line_fails_the_close(sbx):
    s = sbx.new_session()
    errs, cerr = open_writes(s / "env", [b"PL_A=1\n", b"no equals sign"])
    assert errs == [0, 0] and cerr == errno.EINVAL
    assert "PL_A" not in sbx.read_env(s)


def test_env_abuse(sbx):
    s = sbx.new_session()
    before = sbx.read(s, "env")
    for data in [b"\0", b"A=\0\n", b"=x\n", b"1A=x\n", b"A B=c\n", b"-\n", b"-1\n",
                 b"\xff\xfe=1\n"]:
        assert write_errno(s / "env", data) == errno.EINVAL, data
    big = b"BIG=" + b"x" * (1 << 20) + b"\n"
    errs, cerr = open_writes(s / "env", [big[i:i + 65536] for i in range(0, len(big), 65536)])
    assert errno.EFBIG in errs and cerr == errno.EFBIG
    assert sbx.read(s, "env") == before


# --- checkout, timeout, cwd, ctl --------------------------------------------------------------

def test_checkout_two_lines_queue_nothing(sbx):
    s = sbx.new_session()
    ck = s / "checkout"
    assert write_errno(ck, "https://example.invalid/a.git\nhttps://example.invalid/b.git\n") \
        == errno.EINVAL
    errs, cerr = open_writes(ck, bytewise(b"https://example.invalid/a.git\nhttps://x/b.git\n"))
    assert errno.EINVAL in errs and cerr == errno.EINVAL
    assert not any(errs[:30])
    assert sbx.read(s, "checkout") == b"", "a checkout was queued"


def test_checkout_abuse(sbx):
    s = sbx.new_session()
    ck = s / "checkout"
    for data in [b"\0", b"https://x/a.git\0\n", b"-oops\n", b"https://x/a.git dir=/etc\n",
                 b"https://x/a.git bogus=1\n"]:
        assert write_errno(ck, data) == errno.EINVAL, data
    huge = b"https://x/" + b"a" * (1 << 17) + b".git\n"
    assert write_errno(ck, huge) in (errno.EFBIG, errno.EINVAL)
    assert sbx.read(s, "checkout") == b""


def test_timeout_byte_at_a_time_and_bad_input(sbx):
    s = sbx.new_session()
    errs, cerr = open_writes(s / "timeout", bytewise(b"1234\n"))
    assert set(errs) == {0} and cerr == 0
    assert sbx.read(s, "timeout") == b"1234\n"
    for data in [b"12\n34\n", b"x", b" 5", b"99999999999\n", b"4294967296\n", b"5\0",
                 b"1" * 100]:
        assert write_errno(s / "timeout", data) == errno.EINVAL, data
    errs, cerr = open_writes(s / "timeout", [b"77\n", b"x"])
    assert errs == [0, errno.EINVAL] and cerr == errno.EINVAL
    assert sbx.read(s, "timeout") == b"1234\n"
    assert write_errno(s / "timeout", "0\n") == 0


def test_cwd_byte_at_a_time_and_two_lines(sbx):
    s = sbx.new_session()
    d = uniq("cwdbw")
    (sbx.ws / d / "x").mkdir(parents=True)
    (sbx.ws / d / "y").mkdir()
    errs, cerr = open_writes(s / "cwd", bytewise(f"{d}/x\n".encode()))
    assert set(errs) == {0} and cerr == 0
    assert sbx.read(s, "cwd").endswith(f"/{d}/x\n".encode())
    before = sbx.read(s, "cwd")
    assert write_errno(s / "cwd", "../y\n/etc\n") == errno.EINVAL
    assert sbx.read(s, "cwd") == before
    # no newline at all: the cd goes at close
    errs, cerr = open_writes(s / "cwd", [b"../y"])
    assert errs == [0] and cerr == 0
    assert sbx.read(s, "cwd").endswith(f"/{d}/y\n".encode())
    errs, cerr = open_writes(s / "cwd", [b"missing-dir"])
    assert errs == [0] and cerr == errno.ENOENT


def test_cwd_abuse(sbx):
    s = sbx.new_session()
    before = sbx.read(s, "cwd")
    assert write_errno(s / "cwd", b"a\0b\n") == errno.EINVAL
    assert write_errno(s / "cwd", b"x" * 70000) == errno.ENAMETOOLONG
    assert sbx.read(s, "cwd") == before


def test_ctl_signal_and_proc_cmd_abuse(sbx):
    s = sbx.new_session()
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    for data in [b"\0", b"kill\0\n", b"\xff\xfe\n", b"timeout -1\n", b"timeout 1e3\n",
                 b"kill SIGNOPE\n", b"restart now\n", b"x" * 100000]:
        assert write_errno(s / "ctl", data) in (errno.EINVAL, errno.EFBIG), data
    for data in [b"\0", b"TERM\0", b"SIG" + b"K" * 5000, b"\n", b"99999\n"]:
        assert write_errno(p / "signal", data) in (errno.EINVAL, errno.ESRCH), data
    marker = uniq("big")
    big = f"touch {marker}\n".encode() + b"#" * (1 << 20)
    errs, cerr = open_writes(p / "cmd", [big[i:i + 65536] for i in range(0, len(big), 65536)])
    assert errno.EFBIG in errs and cerr == errno.EFBIG
    assert status(p)["state"] == "idle"
    assert sbx.run(s, "echo alive")[0] == b"alive\n"
    assert absent(sbx, marker)


# --- ctl: each line checked as written, all applied at close ------------------------------------

def exit_of(p):
    return bounded(lambda: (p / "exit").read_bytes())


def start_sleeper(sbx, p):
    """Starts procs/NAME with a sleep and waits until it runs."""
    started = uniq("started")
    errs, cerr = open_writes(p / "cmd", [f"touch {started}; exec sleep 1000\n".encode()])
    assert errs == [0] and cerr == 0
    sbx.wait_ws_file(started)


def test_ctl_byte_at_a_time(sbx):
    s = sbx.new_session()
    errs, cerr = open_writes(s / "ctl", bytewise(b"timeout 500\n"))
    assert set(errs) == {0} and cerr == 0
    settle(sbx, s)
    assert status(s)["command_timeout"] == "500"
    # nothing to kill: every byte is taken, and the close that applies the line says so
    errs, cerr = open_writes(s / "ctl", bytewise(b"kill\n"))
    assert set(errs) == {0} and cerr == errno.ESRCH
    started = uniq("started")
    sbx.submit(s, f"touch {started}; sleep 1000; echo never")
    sbx.wait_ws_file(started)
    errs, cerr = open_writes(s / "ctl", bytewise(b"kill"))  # the line completes at close
    assert set(errs) == {0} and cerr == 0
    assert sbx.exit_status(s, timeout=15) == 128 + signal.SIGTERM
    assert sbx.read(s, "stdout") == b""


def test_ctl_bad_line_poisons_the_open(sbx):
    s = sbx.new_session()
    assert write_errno(s / "ctl", "timeout 500\nbogus\n") == errno.EINVAL
    errs, cerr = open_writes(s / "ctl", bytewise(b"timeout 500\nbogus\n"))
    assert errs == [0] * 17 + [errno.EINVAL] and cerr == errno.EINVAL
    errs, cerr = open_writes(s / "ctl", [b"timeout 500\n", b"bogus\n", b"kill\n"])
    assert errs == [0, errno.EINVAL, errno.EINVAL] and cerr == errno.EINVAL
    errs, cerr = open_writes(s / "ctl", [b"timeout 500\n", b"bogus"])  # checked at close
    assert errs == [0, 0] and cerr == errno.EINVAL
    # applied in order until one fails: after the kill's ESRCH the timeout is not set
    errs, cerr = open_writes(s / "ctl", [b"kill\ntimeout 500\n"])
    assert errs == [0] and cerr == errno.ESRCH
    settle(sbx, s)
    assert status(s)["command_timeout"] == "0"


def test_proc_ctl_byte_at_a_time_and_poisoned(sbx):
    s = sbx.new_session()
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    errs, cerr = open_writes(p / "ctl", bytewise(b"timeout 500\n"))
    assert set(errs) == {0} and cerr == 0
    assert status(p)["timeout"] == "500"
    errs, cerr = open_writes(p / "ctl", bytewise(b"timeout 700\nbogus\n"))
    assert errs == [0] * 17 + [errno.EINVAL] and cerr == errno.EINVAL
    assert status(p)["timeout"] == "500"
    errs, cerr = open_writes(p / "ctl", bytewise(b"kill\n"))
    assert set(errs) == {0} and cerr == errno.ESRCH
    assert write_errno(p / "ctl", "timeout 0\n") == 0
    start_sleeper(sbx, p)
    errs, cerr = open_writes(p / "ctl", bytewise(b"kill\n"))
    assert set(errs) == {0} and cerr == 0
    assert exit_of(p) == b"143\n"


def test_procs_ctl_byte_at_a_time_and_poisoned(sbx):
    s = sbx.new_session()
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    start_sleeper(sbx, p)
    for ctl in (s / "procs" / "ctl", sbx.mnt / "procs" / "ctl"):
        errs, cerr = open_writes(ctl, bytewise(b"kill\nbogus\n"))
        assert errs == [0] * 10 + [errno.EINVAL] and cerr == errno.EINVAL
    assert status(p)["state"] == "running"
    for ctl in (s / "procs" / "ctl", sbx.mnt / "procs" / "ctl"):
        errs, cerr = open_writes(ctl, bytewise(b"kill\n"))
        assert set(errs) == {0} and cerr == 0
        assert exit_of(p) == b"143\n"
        start_sleeper(sbx, p)
    assert write_errno(p / "ctl", "kill KILL\n") == 0


# --- the $'...' form: env and cwd ---------------------------------------------------------------

def shell_value(sbx, s, name):
    out, _, code = sbx.run(s, f'printf %s "${name}" | od -An -tx1 -v')
    assert code == 0
    return bytes.fromhex(out.decode())


def test_env_value_with_a_newline_cannot_forge_a_line(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "export FORGE=$'a\\nLD_PRELOAD=/workspace/evil.so'")[2] == 0
    text = sbx.read(s, "env")
    lines = text.split(b"\n")
    assert b"FORGE=$'a\\nLD_PRELOAD=/workspace/evil.so'" in lines, text
    assert not any(line.startswith(b"LD_PRELOAD=") for line in lines), text


NASTY = [b"a\nb", b"tab\there", b"\\n literal", b"$'quoted'", b"it's", b"\x1b[31mred\x7f",
         b"\r\n\r", b"trailing\\", b"caf\xc3\xa9 \xff", b"", b"$'", b"$", b"a\\'b\n"]


def test_env_round_trip_is_exact(sbx):
    s = sbx.new_session()
    names = [f"RT_{i}" for i in range(len(NASTY))]
    script = "".join(f"export {n}=$'" + "".join(f"\\x{c:02x}" for c in v) + "'\n"
                     for n, v in zip(names, NASTY) if v)
    script += "export RT_%d=\n" % NASTY.index(b"")
    assert sbx.run(s, script)[2] == 0
    text = sbx.read(s, "env")
    for n, v in zip(names, NASTY):
        assert shell_value(sbx, s, n) == v
    # write it back to a fresh session: identical file, identical values in the shell
    t = sbx.new_session()
    lines = [line for line in text.split(b"\n") if line.startswith(b"RT_")]
    assert len(lines) == len(NASTY), text
    assert write_errno(t / "env", b"\n".join(lines) + b"\n") == 0
    got = [line for line in sbx.read(t, "env").split(b"\n") if line.startswith(b"RT_")]
    assert got == lines
    for n, v in zip(names, NASTY):
        assert shell_value(sbx, t, n) == v, n


def test_env_write_of_quoted_forms(sbx):
    s = sbx.new_session()
    assert write_errno(s / "env", b"Q_A=$'x\\ny'\nQ_B=$'\\x41\\t'\nQ_C=plain $ \\ ok\n") == 0
    assert shell_value(sbx, s, "Q_A") == b"x\ny"
    assert shell_value(sbx, s, "Q_B") == b"A\t"
    assert shell_value(sbx, s, "Q_C") == b"plain $ \\ ok"
    for bad in [b"Q_D=$'open\n", b"Q_D=$'a'b'\n", b"Q_D=$'\\x00'\n", b"Q_D=$'\\q'\n",
                b"Q_D=$'\\'\n"]:
        assert write_errno(s / "env", bad) == errno.EINVAL, bad
    assert "Q_D" not in sbx.read_env(s)


def test_cwd_with_a_newline_reads_as_one_line_and_writes_back(sbx):
    s = sbx.new_session()
    d = uniq("nl")
    assert sbx.run(s, f"mkdir -p $'{d}\\n/etc' && cd $'{d}\\n/etc'")[2] == 0
    text = sbx.read(s, "cwd")
    assert text.count(b"\n") == 1 and text.startswith(b"$'"), text
    assert text == b"$'" + sbx.cmd_ws.encode() + f"/{d}\\n/etc'\n".encode()
    assert write_errno(s / "cwd", "/\n") == 0
    assert write_errno(s / "cwd", text) == 0
    assert sbx.read(s, "cwd") == text
    assert sbx.run(s, "pwd")[0] == f"{sbx.cmd_ws}/{d}\n/etc\n".encode()
    assert write_errno(s / "cwd", b"$'/nope\n") == errno.EINVAL


# --- true sizes: copies made with sendfile, copy_file_range, splice -----------------------------

def copy_ways(src, tmp):
    """What each copier makes of src: {way: bytes}."""
    out = {}
    dst = tmp / "copy"
    shutil.copy(src, dst)
    out["shutil.copy"] = dst.read_bytes()
    with open(src, "rb") as f, open(dst, "wb") as g:
        n, total = 1, 0
        while n:
            n = os.sendfile(g.fileno(), f.fileno(), None, 1 << 20)
            total += n
    out["sendfile"] = dst.read_bytes()
    # across filesystems the kernel answers EXDEV and copiers fall back (cp, shutil do)
    xdev = False
    with open(src, "rb") as f, open(dst, "wb") as g:
        size = os.fstat(f.fileno()).st_size
        try:
            while size > 0:
                n = os.copy_file_range(f.fileno(), g.fileno(), size)
                if n == 0:
                    break
                size -= n
        except OSError as exc:
            assert exc.errno == errno.EXDEV, exc
            xdev = True
    if not xdev:
        out["copy_file_range"] = dst.read_bytes()
    r, w = os.pipe()
    try:
        with open(src, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            got = b""
            while len(got) < size:
                n = os.splice(f.fileno(), w, size - len(got))
                if n == 0:
                    break
                got += os.read(r, n)
        out["splice"] = got
    finally:
        os.close(r)
        os.close(w)
    subprocess.run(["cp", str(src), str(dst)], check=True, timeout=30)
    out["cp"] = dst.read_bytes()
    if shutil.which("node"):
        js = "require('fs').copyFileSync(process.argv[1], process.argv[2])"
        subprocess.run(["node", "-e", js, str(src), str(dst)], check=True, timeout=30)
        out["node"] = dst.read_bytes()
    return out


def test_every_readable_control_file_copies_whole(sbx, tmp_path):
    s = sbx.new_session()
    assert sbx.run(s, "export SZ=$'x\\ny'; echo out; echo err >&2")[2] == 0
    write_errno(s / "timeout", "4321\n")
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    assert write_errno(p / "cmd", "echo bg") == 0
    assert bounded(lambda: (p / "exit").read_bytes()) == b"0\n"
    n = str(max(int(x) for x in os.listdir(s / "runs")))
    files = [sbx.mnt / "README", sbx.mnt / "limits"]
    files += [s / f for f in ("env", "cwd", "status", "timeout", "cmd", "stdout", "stderr", "exit",
                              "result")]
    files += [s / "runs" / n / f for f in ("cmd", "status", "stdout", "stderr", "exit", "result")]
    files += [p / f for f in ("status", "ports", "cmd", "stdout", "exit")]
    for f in files:
        want = bounded(lambda: f.read_bytes())
        # limits and status move on their own (memory, durations): same keys, not same bytes
        volatile = f.name in ("limits", "status")
        assert volatile or os.stat(f).st_size == len(want), f
        for way, got in bounded(copy_ways, f, tmp_path).items():
            if volatile:
                keys = [line.split(b" ")[0] for line in want.splitlines()]
                assert keys == [line.split(b" ")[0] for line in got.splitlines()], (way, f, got)
            else:
                assert got == want, f"{way} of {f}: {got!r} != {want!r}"


def test_an_open_reads_its_snapshot_whatever_changes_after(sbx):
    s = sbx.new_session()
    with open(s / "env", "rb") as f:
        size = os.fstat(f.fileno()).st_size
        write_errno(s / "env", "GROWN=" + "g" * 5000 + "\n")
        assert f.seek(0, os.SEEK_END) == size  # a stat through the handle: its snapshot
        f.seek(0)
        assert len(f.read()) == size
    assert os.stat(s / "env").st_size == len(sbx.read(s, "env")) >= size + 5000


def test_checkout_error_line_is_one_line(sbx):
    s = sbx.new_session()
    d = uniq("co")
    # a URL with a carriage return and an "ok" after it: the final line stays one error line
    assert write_errno(s / "checkout", f"file:///nonexistent/a\rok.git dir={d}\n") == 0
    text = bounded(lambda: (s / "checkout").read_bytes(), timeout=60)
    lines = text.split(b"\n")
    assert lines[-1] == b"", text
    final = lines[-2]
    assert final.startswith(b"error ") and b"\r" not in final, text
    assert status(s)["state"] == "idle"


def test_shell_writers_line_by_line(sbx):
    s = sbx.new_session()
    marker = uniq("sh")
    script = f"{{ printf 'touch {marker}\\n'; printf 'x\\0y\\n'; }} > {s}/cmd"
    r = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
    assert r.returncode != 0 and b"Invalid argument" in r.stderr, r
    p = s / "procs" / uniq("p")
    bounded(os.mkdir, p)
    errs, cerr = open_writes(p / "cmd", bytewise(f"echo a > {marker}.p\n".encode()))
    assert set(errs) == {0} and cerr == 0
    assert bounded(lambda: (p / "exit").read_bytes()) == b"0\n"
    assert (sbx.ws / f"{marker}.p").read_bytes() == b"a\n"
    settle(sbx, s)
    assert absent(sbx, marker)


def test_a_poisoned_handle_submits_nothing(sbx):
    s = sbx.new_session()
    marker = uniq("h")

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, f"touch {marker}\n".encode())
            try:
                os.write(fd, b"\0")
            except OSError as exc:
                assert exc.errno == errno.EINVAL
            try:
                os.read(fd, 16)
                return 0
            except OSError as exc:
                return exc.errno
        finally:
            try:
                os.close(fd)
            except OSError:
                pass

    assert bounded(go) == errno.EINVAL
    settle(sbx, s)
    assert absent(sbx, marker)
