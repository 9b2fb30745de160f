"""What the fast paths change under the hood, checked from outside: an exec costs
the FUSE requests tests/bench/bench_speed.py counts on; the env a session reports comes from
`declare -px` and keeps every value byte for byte across a restart; spool files are unnamed,
reused, and gone with their runs; directories keep fixed attributes while files keep true
sizes; output streams advertise large reads; a kill lands quickly. Figures themselves are in
tests/bench/bench_speed.py.
"""

import os
import re
import time
from pathlib import Path

from collections import Counter

from sbxutil import (SbxMount, nonempty_spools, read_bytes, spool_stats, started, stopped_cleanly,
                     wait_until, write_bytes)

# Values that need each kind of quoting in `declare -px`: "..." escapes, $'...' escapes
# (controls, DEL, a byte that is not UTF-8), UTF-8 text, and the empty string.
TRICKY = {
    "SPD_NL": "a\nb",
    "SPD_QUOTES": "q\"$`\\x'y",
    "SPD_CTRL": "\x01\t\x1b\x7f",
    "SPD_UTF8": "é€",
    "SPD_EMPTY": "",
    "SPD_BACKSLASH_N": "\\n\\t\\001",
    "_SPD_UNDER": "u",
}


def bash_quote(value):
    """value as one bash $'...' word, byte by byte."""
    return "$'" + "".join(f"\\x{b:02x}" for b in value.encode("utf-8", "surrogateescape")) + "'"


def show(sbx, s, names):
    """The values of names as the session's shell has them, NUL-separated, read back."""
    script = "printf '%s\\0' " + " ".join(f'"${{{n}-UNSET}}"' for n in names)
    out, err, code = sbx.run(s, script)
    assert code == 0, err
    return out.split(b"\0")[:-1]


def test_exported_values_survive_a_restart_byte_for_byte(sbx):
    s = sbx.new_session()
    names = sorted(TRICKY)
    script = "; ".join(f"export {n}={bash_quote(v)}" for n, v in TRICKY.items())
    script += "; export SPD_NOVALUE; declare -ax SPD_ARR=(1 2); declare -ix SPD_INT=7"
    script += "; SPD_TARGET=t; declare -n SPD_REF=SPD_TARGET; export SPD_REF"
    assert sbx.run(s, script)[2] == 0
    want = [TRICKY[n].encode() for n in names]
    assert show(sbx, s, names) == want
    env = read_bytes(s / "env").decode()
    assert "SPD_INT=7\n" in env
    # bash gives children neither arrays nor a nameref itself (export of a nameref exports its
    # target), nor a name without a value: neither does the env file
    for absent in ("SPD_ARR=", "SPD_REF=", "SPD_NOVALUE="):
        assert not re.search(rf"^{absent}", env, re.M), env
    assert re.search(r"^SPD_TARGET=t$", env, re.M), env
    # the names starting with _ come after the others, as before
    lines = [line.split("=", 1)[0] for line in env.splitlines()]
    assert lines.index("_SPD_UNDER") > lines.index("SPD_UTF8")
    # a new shell starts from the reported env: every byte came through
    write_bytes(s / "ctl", "restart\n")
    assert show(sbx, s, names + ["SPD_INT"]) == want + [b"7"]


def test_spool_files_are_unnamed_and_reused(sbx):
    s = sbx.new_session()
    before = nonempty_spools(sbx)
    empty_before = sum(1 for st in spool_stats(sbx) if st.st_size == 0)
    for i in range(120):  # past the history of 100: runs leave, their files are reused
        sbx.submit(s, f"echo r{i}; echo e{i} >&2")
    assert sbx.exit_status(s, timeout=60) == 0
    assert sbx.read(s, "stdout") == b"r119\n"
    assert sbx.read(s, "stderr") == b"e119\n"
    assert read_bytes(s / "runs" / "120" / "stdout") == b"r119\n"
    # run 21's own bytes, in the order the daemon read its two pipes (docs/files.md): when
    # both hold a line by the time it looks, either may come first
    assert read_bytes(s / "runs" / "21" / "output") in (b"r20\ne20\n", b"e20\nr20\n")
    # no name in the state dir: nothing to rename per command, nothing left by a crash
    assert os.listdir(sbx.state / "spool") == []
    # the 100 runs kept hold their three spools; of the 20 that left, at most 12 files are
    # kept, emptied, for new runs
    assert nonempty_spools(sbx) == before + 3 * 100
    empty = sum(1 for st in spool_stats(sbx) if st.st_size == 0)
    assert empty - empty_before <= 12, (empty, empty_before)
    os.rmdir(s)
    wait_until(lambda: nonempty_spools(sbx) == before, 10, "the session's spool files to go")


class DebugMount(SbxMount):
    """A mount whose daemon logs every FUSE request (-d) to its stderr."""

    def command_line(self):
        cmd = super().command_line()
        return [cmd[0], "-d", *cmd[1:]]


def opcodes(text):
    return re.findall(r"^unique: \d+, opcode: (\w+) ", text, re.M)


def test_an_exec_costs_eight_fuse_round_trips(tmp_path):
    m = started(DebugMount(tmp_path))
    try:
        s = m.sessions / "rt"
        os.mkdir(s)

        def execute():
            fd = os.open(s / "cmd", os.O_WRONLY | os.O_TRUNC)
            os.write(fd, b"true\n")
            os.close(fd)
            fd = os.open(s / "exit", os.O_RDONLY)
            try:
                assert os.read(fd, 64) == b"0\n"
                assert os.read(fd, 64) == b""
            finally:
                os.close(fd)

        for _ in range(3):  # the path's directories get known
            execute()
        time.sleep(0.3)  # RELEASEs are asynchronous
        mark = m.stderr_log.stat().st_size
        for _ in range(5):
            execute()
        time.sleep(0.3)
        with open(m.stderr_log, "rb") as f:
            f.seek(mark)
            seen = Counter(opcodes(f.read().decode(errors="replace")))
        # per exec: GETATTR and OPEN of cmd and of exit, WRITE, FLUSH, two READs (the second
        # one says EOF), and two RELEASEs the client does not wait for; no LOOKUP (names are
        # kept), and no GETXATTR before the write where no file of the mount has attributes
        want = Counter({"GETATTR": 10, "OPEN": 10, "WRITE": 5, "FLUSH": 5, "READ": 10,
                        "RELEASE": 10})
        if not m.kernel_workspace():
            want["GETXATTR"] = 5
        assert seen == want, seen
    finally:
        stopped_cleanly(m)


def test_a_command_reaches_the_shell_byte_for_byte(sbx):
    """The request framing: an ASCII block is read by length, any other by bytes up to a NUL
    (bash's read -N counts characters of the session's locale)."""
    s = sbx.new_session()
    assert sbx.run(s, "export LC_ALL=C.UTF-8")[2] == 0
    raw = b"\xc3\xa9\xe2\x9c\x93\xff\xfe \\ \t$"
    assert sbx.run(s, b"x='" + raw + b"'; printf %s \"$x\"") == (raw, b"", 0)
    # blank lines and blanks first, a line continued by a backslash, text like a header
    text = b"  \n\t\n  echo a\\\nb\nprintf '%s\\n' 'ar1          12'  \n\n"
    assert sbx.run(s, text) == (b"ab\nar1          12\n", b"", 0)
    # long ones, ASCII and not: lengths are bytes, nothing is left behind in the pipe
    assert sbx.run(s, ": '" + "x" * 300000 + "'; echo ascii") == (b"ascii\n", b"", 0)
    assert sbx.run(s, ": '" + "\u00e9" * 300000 + "'; echo utf8") == (b"utf8\n", b"", 0)
    # a locale bash does not have: non-ASCII commands run without a warning
    out, err, code = sbx.run(s, "export LC_ALL=xx_YY.UTF-8")
    assert code == 0 and b"setlocale" in err  # bash's own, once, at the export
    assert sbx.run(s, "echo \u00e9t\u00e9") == ("\u00e9t\u00e9\n".encode(), b"", 0)
    assert sbx.run(s, "echo next") == (b"next\n", b"", 0)


def test_directories_cache_fixed_attributes_and_files_keep_true_sizes(sbx):
    s = sbx.new_session()
    st1 = os.stat(s)
    assert sbx.run(s, "echo one")[2] == 0
    st2 = os.stat(s)
    assert (st1.st_mode, st1.st_ino, st1.st_mtime_ns) == (st2.st_mode, st2.st_ino, st2.st_mtime_ns)
    assert os.stat(s / "exit").st_size == 2
    assert os.stat(s / "stdout").st_size == 4
    sbx.submit(s, "echo three; sleep 0.3; echo more")
    assert sbx.exit_status(s) == 0
    assert os.stat(s / "stdout").st_size == 11
    assert os.stat(s / "cmd").st_size == len("echo three; sleep 0.3; echo more")
    # a removed session is gone for a path walk at once, cached directory attributes or not
    os.rmdir(s)
    assert not os.path.exists(s)
    assert not os.path.exists(s / "cmd")


def test_output_streams_advertise_large_reads(sbx):
    s = sbx.new_session()
    assert sbx.run(s, "head -c 3000000 /dev/zero")[2] == 0
    assert os.stat(s / "stdout").st_blksize == 512 << 10
    assert os.stat(s / "stderr").st_blksize == 512 << 10
    assert os.stat(s / "exit").st_blksize == 4096
    fd = os.open(s / "stdout", os.O_RDONLY)
    try:
        sizes = []
        while chunk := os.read(fd, 1 << 20):
            sizes.append(len(chunk))
    finally:
        os.close(fd)
    assert sum(sizes) == 3000000
    # one read returns up to a whole request's worth (max_pages), not 128 KiB
    assert max(sizes) >= 512 << 10, sizes


def test_a_kill_lands_quickly(sbx):
    s = sbx.new_session()
    sbx.submit(s, "sleep 1000")
    wait_until(lambda: b"run_state running" in read_bytes(s / "status"), 10, "sleep to run")
    t0 = time.monotonic()
    write_bytes(Path(s) / "ctl", "kill\n")
    assert sbx.exit_status(s) == 143
    # loosely: the freeze is polled in microseconds now, the whole kill took ~2 ms here
    assert time.monotonic() - t0 < 1.0
