"""Terminals against a hostile sandbox and heavy users: what a program prints into its pty (or
into any pty it can open) must not stop the daemon, crash it or grow it without bound, and
neither may a wait pattern.

Each attack runs while a neighbour session's `echo` is timed, and its times are compared with
the same echo measured without the attack in the same test.
"""

import errno
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import (Background, ConfMount, bounded, errname, is_mounted, put_script,
                     read_bytes, sbxfs_binary, sh, started, stopped_cleanly, wait_until,
                     write_bytes, write_errno)
from termutil import new_term, start, type_keys

WAIT_MS = 4000
ECHOES = 5


def screen(t):
    return read_bytes(t / "screen", timeout=10).decode(errors="replace")


def wait_screen(t, needle, timeout=20):
    return wait_until(lambda: (lambda s: s if needle in s else None)(screen(t)), timeout,
                      f"{needle!r} on the screen of {t.name}", show=lambda: screen(t))


def echo_times(m, s, n=ECHOES):
    """n runs of `echo` in session s: each one's seconds (each bounded: a frozen daemon fails
    the test instead of hanging it)."""
    times = []
    for i in range(n):
        t0 = time.monotonic()
        out, _, code = sh(m, s, f"echo n{i}", timeout=20)
        times.append(time.monotonic() - t0)
        assert (out, code) == (f"n{i}\n", 0)
    return times


def assert_still_fast(base, under, what):
    """Each echo under the attack within 1 s, or 10 times the slowest without it if the machine
    is that slow anyway."""
    bound = max(1.0, 10 * max(base))
    print(f"{what}: echo without {statistics.median(base) * 1000:.1f} ms (max "
          f"{max(base) * 1000:.1f}), with {statistics.median(under) * 1000:.1f} ms (max "
          f"{max(under) * 1000:.1f})")
    assert max(under) < bound, f"{what}: echo took {under} s, without it {base} s"


def out_now(t):
    """What out holds now (a nonblocking read: at its end, out waits for more)."""
    fd = os.open(t / "out", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.fixture
def mount():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-termabuse-"),
                          f"[session]\nterm_wait_ms = {WAIT_MS}\n"))
    try:
        yield m
    finally:
        if m.alive():
            stopped_cleanly(m, "terminal abuse sbxfs")
        else:
            m.discard()


# --- what a program prints ------------------------------------------------------------------

# Inputs that hang or corrupt libvterm 0.1.4 when they reach it: REP before any printable
# character, REP after a lone combining mark, C1 code points as UTF-8 (the cursor walks left
# of column 0), a CSI with more than 16 parameters (written over the parser's callbacks), and
# combining marks without end (a buffer grows and is rescanned for each). POISON prints them
# (to stdout, or with `spray` once into each pty it finds, for as long as it runs).
POISON = """
import glob, os, sys, time
data = (b"\\x1b[b" + b"\\xcc\\x81\\x1b[3b" + b"x" + b"\\xc2\\x80" * 40 + b"\\xc2\\n\\x80\\x1b[5b"
        + b"\\x1b[" + b";".join(b"%d" % i for i in range(1, 40)) + b"m"
        + b"a" + b"\\xcc\\x81\\x00" * int(sys.argv[2]) + b"\\r\\n")
if sys.argv[1] == "print":
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    sys.exit(0)
seen = set()
while True:
    for p in glob.glob("/dev/pts/[0-9]*"):
        if p in seen:
            continue
        seen.add(p)
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
            os.write(fd, data)
            os.close(fd)
        except OSError:
            pass
    time.sleep(0.02)
"""


def test_rep_first_keeps_the_daemon_answering(mount):
    neighbour = mount.new_session()
    base = echo_times(mount, neighbour)
    poison = put_script(mount, POISON)
    s = mount.new_session()
    t = new_term(s)
    # REP with nothing to repeat as the terminal's first bytes, then the rest
    start(t, f"printf '\\033[b'; python3 {poison} print 20000; echo survived-$((6*7)); "
             "sleep 1000")
    under = echo_times(mount, neighbour)
    assert_still_fast(base, under, "REP as a terminal's first bytes")
    text = wait_screen(t, "survived-42")
    assert len(text.split("\n")) == 25, text
    # REP after a printable character still repeats it
    t2 = new_term(s)
    start(t2, "printf 'ab\\033[4bc\\n'; sleep 1000")
    wait_screen(t2, "abbbbbc")
    for d in (t, t2):
        bounded(os.rmdir, d)


def test_rep_written_into_every_pty_by_a_background_process(mount):
    neighbour = mount.new_session()
    base = echo_times(mount, neighbour)
    attacker = mount.new_session()
    poison = put_script(mount, POISON)
    _, err, code = sh(mount, attacker, f"python3 {poison} spray 2000 >/dev/null 2>&1 &")
    assert code == 0, err
    victim = mount.new_session()
    terms = [new_term(victim) for _ in range(3)]
    for t in terms:
        type_keys(t, "sleep 0.5; echo typed-$((6*7))\r")
    for t in terms:
        wait_screen(t, "typed-42")
    under = echo_times(mount, neighbour)
    assert_still_fast(base, under, "REP written into every pty")
    # SIGTERM still unmounts, attack and all
    os.kill(mount.proc.pid, signal.SIGTERM)
    rc = mount.wait_exit(10)
    assert rc is not None, "the daemon still runs 10 s after SIGTERM"
    assert rc == 0, f"the daemon exited with {rc}"
    assert not is_mounted(mount.mnt)


# --- an emulator that never returns ---------------------------------------------------------------

STUCK_S = 10  # TERMEMU_STUCK_MS


def hang_shim():
    """The LD_PRELOAD shim built with the daemon (tests/shim/vterm_hang.c), or None."""
    shim = sbxfs_binary().parent / "tests" / "libvterm_hang.so"
    return shim if shim.exists() else None


def preload(shim):
    """LD_PRELOAD for the daemon with the shim: after ASan's runtime when the daemon is a
    sanitizer build, which refuses to start unless that runtime comes first."""
    out = subprocess.run(["ldd", str(sbxfs_binary())], capture_output=True, text=True).stdout
    asan = [line.split("=>")[1].split()[0] for line in out.splitlines()
            if "libasan.so" in line and "=>" in line]
    return ":".join(asan + [str(shim)])


@pytest.mark.heavy
@pytest.mark.sbx_timeout(120)
def test_a_stuck_emulator_is_given_up_on(monkeypatch):
    """What the filter keeps away from libvterm cannot hang the mount anyway: with a libvterm
    whose call never returns on a marker (an LD_PRELOAD shim), that terminal's screen freezes
    under a notice, the others and the sessions go on, and SIGTERM unmounts."""
    shim = hang_shim()
    if shim is None:
        pytest.skip("no tests/libvterm_hang.so next to the daemon under test")
    monkeypatch.setenv("LD_PRELOAD", preload(shim))
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-termstuck-"), "[session]\n"))
    monkeypatch.delenv("LD_PRELOAD")
    try:
        neighbour = m.new_session()
        base = echo_times(m, neighbour)
        s = m.new_session()
        stuck = new_term(s)
        start(stuck, "echo before; sleep 0.5; printf '\\001SBXFS-HANG\\n'; echo after; "
                     "sleep 1000")
        wait_screen(stuck, "before")
        time.sleep(1)
        under = echo_times(m, neighbour)
        assert_still_fast(base, under, "an emulator stuck in libvterm")
        other = new_term(s)
        type_keys(other, "echo other-$((6*7))\r")
        wait_screen(other, "other-42")
        # given up on after STUCK_S: the screen says so, out has everything
        text = wait_screen(stuck, "emulator stopped responding", timeout=STUCK_S + 20)
        assert "before" in text and "after" not in text
        wait_until(lambda: b"after" in out_now(stuck), 10, "out to go on")
        t0 = time.monotonic()
        os.kill(m.proc.pid, signal.SIGTERM)
        rc = m.wait_exit(10)
        assert rc is not None, "the daemon still runs 10 s after SIGTERM"
        print(f"SIGTERM to exit with a thread stuck in libvterm: {time.monotonic() - t0:.2f} s")
        assert rc == 0 and not is_mounted(m.mnt)
    finally:
        m.discard()


# --- caps -------------------------------------------------------------------------------------


@pytest.mark.sbx_timeout(300)
def test_terminal_and_cell_caps(mount):
    pid = mount.proc.pid
    before = rss_kb(pid)
    sessions = [mount.new_session() for _ in range(4)]
    made, refused = [], []
    for i in range(100):
        t = Path(sessions[i % 4]) / "terms" / f"big{i}"
        try:
            bounded(os.mkdir, t)
            made.append(t)
        except OSError as exc:
            refused.append(exc.errno)
    # [session] terms_max (64) counts the terminals of every session
    assert len(made) == 64, len(made)
    assert set(refused) == {errno.ENOSPC}, [errname(e) for e in set(refused)]
    grown, errs = [], []
    for t in made:
        err = write_errno(t / "size", "1000 1000\n", flags=os.O_WRONLY)
        (grown if err == 0 else errs).append(t if err == 0 else err)
    # [session] term_cells_max (2M cells): one terminal of 1000x1000 fits with the 63 of 24x80
    assert len(grown) == 1, len(grown)
    assert set(errs) == {errno.ENOSPC}, [errname(e) for e in set(errs)]
    assert read_bytes(made[-1] / "size") == b"24 80\n"  # a refused size changes nothing
    # every cell of every screen written
    for t in made:
        start(t, "n=$(( $(stty size | tr ' ' '*') )); yes abcdefghij | tr -d '\\n' | "
                 "head -c $n; echo; echo filled; sleep 1000")
    for t in made:
        wait_screen(t, "filled", timeout=120)
    assert screen(grown[0]).count("abcdefghij") >= 99000
    after = rss_kb(pid)
    print(f"daemon RSS {before // 1024} MiB before, {after // 1024} MiB with 64 terminals "
          f"(one of 1000x1000)")
    assert after - before < 512 * 1024, f"RSS grew from {before} to {after} kB"
    # a terminal removed gives its room back
    bounded(os.rmdir, made[1])
    bounded(os.mkdir, made[1])
    write_bytes(made[2] / "size", "1000 900\n", flags=os.O_WRONLY)
    err = write_errno(made[3] / "size", "300 300\n", flags=os.O_WRONLY)
    assert err == errno.ENOSPC, errname(err)


# --- wait patterns ------------------------------------------------------------------------------


def test_backtracking_wait_patterns_are_refused_or_linear(mount):
    neighbour = mount.new_session()
    base = echo_times(mount, neighbour)
    s = mount.new_session()
    t = new_term(s)
    write_bytes(t / "size", "100 1000\n", flags=os.O_WRONLY)
    start(t, "for i in $(seq 100); do printf '%0999d' 0 | tr 0 a; echo; done; sleep 1000")
    wait_until(lambda: screen(t).count("a" * 999) >= 99, 30, "a screen of a's",
               show=lambda: screen(t)[:300])
    # back-references make a match exponential: refused
    for bad in ["((a*)*)*\\2\\1b", "^(.*)(.*)\\2\\1$", "(a)\\1"]:
        err = write_errno(t / "wait", bad + "\n", flags=os.O_WRONLY)
        assert err == errno.EINVAL, f"{bad}: {errname(err)}"
    err = write_errno(t / "wait", "a" * 300 + "\n", flags=os.O_WRONLY)
    assert err == errno.EINVAL, f"a 300-byte pattern: {errname(err)}"
    # the same shapes without them match in linear time, off the loop thread
    for pattern in ["((a*)*)*b", "^(.*)(.*)(.*)(.*)x$", "(a|a)*(a|aa)*(a*)*c"]:
        write_bytes(t / "wait", pattern + "\n", flags=os.O_WRONLY)
        t0 = time.monotonic()
        err = wait_errno(t)
        assert err == errno.ETIMEDOUT, errname(err) if err else "matched"
        print(f"{pattern}: ETIMEDOUT after {time.monotonic() - t0:.2f} s")
    waiting = [Background(wait_errno, t) for _ in range(3)]
    under = echo_times(mount, neighbour)
    assert [w.result(WAIT_MS / 1000 + 30) for w in waiting] == [errno.ETIMEDOUT] * 3
    assert_still_fast(base, under, "wait patterns over a 100x1000 screen")


def wait_errno(t):
    try:
        read_bytes(t / "wait", timeout=WAIT_MS / 1000 + 20)
    except OSError as exc:
        return exc.errno
    return 0


def test_an_rmdir_gives_a_terminals_room_back_before_it_returns():
    """The room of a removed terminal is the next mkdir's at once, not once its program's end
    has been reported (which lags under load)."""
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-termroom-"),
                          "[session]\nterms_max = 1\n"))
    try:
        s = Path(m.new_session()) / "terms"
        for i in range(30):
            t = s / f"t{i}"
            bounded(os.mkdir, t)
            start(t, "trap '' TERM HUP; sleep 1000")
            bounded(os.rmdir, t)
    finally:
        stopped_cleanly(m, "terminal room sbxfs")
