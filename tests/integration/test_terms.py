"""Terminals: sessions/ID/terms/NAME/ (cmd, in, out, screen, size, ctl, exit, status), driven
only through the files, with real programs (vi, python3, top, less, stty, tput).

Every wait is on what the screen or the output shows, and bounded.
"""

import errno
import os
import pty
import re
import select
import subprocess
import tempfile
import time

import pytest

from sbxutil import (Background, ConfMount, bounded, errname, isolation_none, parse_status,
                     procs_matching, read_bytes, sleep_tag, started, stopped_cleanly, uniq,
                     wait_until, write_bytes, write_errno, exit_of)
from termutil import new_term, start, type_keys

# The module's mount keeps this much of a terminal's output (term_ring).
RING = 64 * 1024
WAIT_MS = 5000
STATUS_KEYS = ["name", "state", "pid", "rows", "cols", "cursor_row", "cursor_col", "bytes_out",
               "exit", "signal", "leftovers"]


@pytest.fixture(scope="module")
def sbx():
    """The module's sbxfs, with a small term_ring so that tests can wrap it, and a wait that
    times out after WAIT_MS."""
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-term-"),
                          f"[session]\nterm_ring = {RING}\nterm_wait_ms = {WAIT_MS}\n"))
    try:
        yield m
    finally:
        stopped_cleanly(m, "terminals' sbxfs")


# --- helpers -----------------------------------------------------------------------------------


def screen(t):
    return read_bytes(t / "screen", timeout=5).decode()


def term_status(t):
    return parse_status(read_bytes(t / "status", timeout=5))


def wait_screen(t, pattern, timeout=20):
    """Polls screen until the regex matches; the screen then."""
    rx = re.compile(pattern, re.M)
    return wait_until(lambda: (lambda s: s if rx.search(s) else None)(screen(t)), timeout,
                      f"{pattern!r} on the screen of {t.name}", show=lambda: screen(t))


def shell_term(sbx):
    """A terminal running the session's interactive shell, its prompt shown."""
    t = new_term(sbx.new_session())
    type_keys(t, "PS1='ready> '\r")
    wait_screen(t, r"^ready>$")
    return t


# --- layout, status, errors --------------------------------------------------------------------


def test_layout_and_idle_status(sbx):
    s = sbx.new_session()
    t = new_term(s)
    assert sorted(os.listdir(s / "terms")) == [t.name]
    assert sorted(os.listdir(t)) == ["cmd", "ctl", "exit", "in", "out", "screen", "size",
                                     "status", "wait"]
    st = term_status(t)
    assert list(st) == STATUS_KEYS
    assert (st["state"], st["pid"], st["rows"], st["cols"], st["bytes_out"]) == \
        ("idle", "0", "24", "80", "0")
    assert read_bytes(t / "size") == b"24 80\n"
    # nothing runs yet: the screen is 24 empty lines
    assert screen(t) == "\n" * 24


def test_bad_names_and_duplicates(sbx):
    s = sbx.new_session()
    for bad in ["a b", "x:y", "x" * 200]:
        assert errno_of_mkdir(s / "terms" / bad) in (errno.EINVAL, errno.ENAMETOOLONG)
    t = new_term(s)
    assert errno_of_mkdir(t) == errno.EEXIST
    bounded(os.rmdir, t)
    assert not (s / "terms" / t.name).exists()
    assert errno_of_rmdir(t) == errno.ENOENT


def errno_of_mkdir(p):
    try:
        bounded(os.mkdir, p)
    except OSError as exc:
        return exc.errno
    return 0


def errno_of_rmdir(p):
    try:
        bounded(os.rmdir, p)
    except OSError as exc:
        return exc.errno
    return 0


def test_bad_size_and_ctl_change_nothing(sbx):
    t = shell_term(sbx)
    for bad in ["0 80\n", "24\n", "24 80 1\n", "a b\n", "-1 80\n", "24 0\n", "24  80\n",
                "100000 80\n", "24 80\n\n"]:
        err = write_errno(t / "size", bad, flags=os.O_WRONLY)
        assert err == errno.EINVAL, f"size {bad!r}: {errname(err)}"
    assert read_bytes(t / "size") == b"24 80\n"
    for bad in ["bogus\n", "kill NOSUCHSIG\n", "interrupt now\n", "eof 1\n"]:
        err = write_errno(t / "ctl", bad, flags=os.O_WRONLY)
        assert err == errno.EINVAL, f"ctl {bad!r}: {errname(err)}"
    # a bad line in the same write as a good one applies neither
    err = write_errno(t / "ctl", "kill KILL\nbogus\n", flags=os.O_WRONLY)
    assert err == errno.EINVAL
    assert term_status(t)["state"] == "running"
    type_keys(t, "echo still-$((40+2))\r")
    wait_screen(t, r"^still-42$")


def test_cmd_after_start_is_busy(sbx):
    t = shell_term(sbx)
    err = write_errno(t / "cmd", "true\n", flags=os.O_WRONLY)
    assert err == errno.EBUSY, errname(err)


def test_ctl_on_idle_terminal(sbx):
    t = new_term(sbx.new_session())
    err = write_errno(t / "ctl", "kill\n", flags=os.O_WRONLY)
    assert err == errno.ESRCH, errname(err)
    assert term_status(t)["state"] == "idle"


# --- the terminal as programs see it -------------------------------------------------------------


def test_shell_sees_a_tty_with_session_env_and_cwd(sbx):
    s = sbx.new_session()
    write_bytes(s / "env", "GREETING=from-env\n")
    sub = uniq("dir")
    os.mkdir(sbx.workspace / sub)
    write_bytes(s / "cwd", f"{sbx.cmd_ws}/{sub}\n")
    t = new_term(s)
    type_keys(t, "PS1='ready> '\r")
    wait_screen(t, r"^ready>$")
    type_keys(t, "echo T=$TERM G=$GREETING; tty; pwd; [ -t 0 ] && echo is-tty\r")
    text = wait_screen(t, r"^is-tty$")
    assert "T=xterm-256color G=from-env" in text
    assert re.search(r"^/dev/pts/\d+$", text, re.M), text
    assert f"{sbx.cmd_ws}/{sub}" in text
    # the shell leads its own session with the pty as its controlling terminal
    type_keys(t, "ps -o sid=,tty= -p $$ | tr -s ' '; echo pid=$$\r")
    text = wait_screen(t, r"^pid=\d+$")
    pid = re.search(r"^pid=(\d+)$", text, re.M).group(1)
    assert re.search(rf"^ ?{pid} pts/\d+$", text, re.M), text
    st = term_status(t)
    assert st["state"] == "running" and int(st["pid"]) > 0
    assert int(st["bytes_out"]) > 0


def test_vi_writes_a_file(sbx):
    s = sbx.new_session()
    name = uniq("notes") + ".txt"
    t = new_term(s)
    start(t, f"vi {name}")
    wait_screen(t, r"^~")
    type_keys(t, "ihello\x1b:wq\r")
    assert exit_of(t) == 0
    assert (sbx.workspace / name).read_text() == "hello\n"
    assert term_status(t)["state"] == "completed"


def test_python_repl_keeps_state_and_survives_ctrl_c(sbx):
    t = new_term(sbx.new_session())
    start(t, "python3 -q")
    wait_screen(t, r"^>>>$")
    type_keys(t, "x = 41\r")
    type_keys(t, "while True: pass\r\r")
    time.sleep(0.3)
    type_keys(t, "\x03")
    wait_screen(t, r"^KeyboardInterrupt$")
    type_keys(t, "print(x + 1)\r")
    wait_screen(t, r"^42$")
    # ctl interrupt does the same
    type_keys(t, "import time\rwhile True: time.sleep(0.01)\r\r")
    time.sleep(0.3)
    write_bytes(t / "ctl", "interrupt\n", flags=os.O_WRONLY)
    wait_until(lambda: screen(t).count("KeyboardInterrupt") >= 2, 20, "a second interrupt",
               show=lambda: screen(t))
    type_keys(t, "print(x * 2)\r")
    wait_screen(t, r"^82$")
    assert term_status(t)["state"] == "running"
    write_bytes(t / "ctl", "eof\n", flags=os.O_WRONLY)
    assert exit_of(t) == 0


def test_top_renders_a_screen(sbx):
    t = new_term(sbx.new_session())
    start(t, "top -d 0.5")
    text = wait_screen(t, r"^top - ")
    assert re.search(r"^Tasks:", text, re.M), text
    type_keys(t, "q")
    assert exit_of(t) == 0


def test_less_pages(sbx):
    name = uniq("lines") + ".txt"
    (sbx.ws / name).write_text("".join(f"line {i:03d}\n" for i in range(1, 201)))
    os.chmod(sbx.ws / name, 0o644)
    t = new_term(sbx.new_session())
    start(t, f"less {name}")
    first = wait_screen(t, r"^line 023$")
    assert first.startswith("line 001\n"), first
    assert "line 024" not in first
    type_keys(t, " ")
    second = wait_screen(t, r"^line 046$")
    assert "line 001\n" not in second
    type_keys(t, "q")
    assert exit_of(t) == 0


def test_resize_seen_by_stty_and_tput(sbx):
    t = shell_term(sbx)
    write_bytes(t / "size", "30 100\n", flags=os.O_WRONLY)
    assert read_bytes(t / "size") == b"30 100\n"
    st = term_status(t)
    assert (st["rows"], st["cols"]) == ("30", "100")
    type_keys(t, "stty size; tput lines; tput cols\r")
    text = wait_screen(t, r"^100$")
    assert re.search(r"^30 100\n30\n100$", text, re.M), text
    assert len(screen(t).split("\n")) == 31  # 30 lines, each ended by a newline


def test_resize_sends_sigwinch(sbx):
    t = new_term(sbx.new_session())
    start(t, "trap 'echo got-winch $(stty size)' WINCH; echo trapped; "
             "while :; do sleep 0.05; done")
    wait_screen(t, r"^trapped$")
    write_bytes(t / "size", "20 60\n", flags=os.O_WRONLY)
    wait_screen(t, r"^got-winch 20 60$")


def test_resize_before_start(sbx):
    t = new_term(sbx.new_session())
    write_bytes(t / "size", "10 40", flags=os.O_WRONLY)  # applied at close without a newline
    start(t, "stty size")
    assert exit_of(t) == 0
    assert b"10 40" in read_bytes(t / "out")


# --- out: replay, wrap, follow, EOF ---------------------------------------------------------------


def test_out_replays_from_zero_and_ends_at_eof(sbx):
    t = new_term(sbx.new_session())
    start(t, "printf 'first\\n'; read line; printf 'got %s\\n' \"$line\"")
    wait_screen(t, r"^first$")
    # a reader at the end waits for what comes next
    with open(t / "out", "rb", buffering=0) as f:
        head = bounded(f.read, 100)
        assert head == b"first\r\n"
        later = Background(f.read, 100)
        time.sleep(0.3)
        assert not later.done(), "a read at the end returned while the terminal runs"
        type_keys(t, "typed\r")
        data = later.result()
        assert data.startswith(b"typed"), data
        rest = read_until_eof(f, data)
    assert rest.endswith(b"got typed\r\n"), rest
    assert exit_of(t) == 0
    # once it ended, a read from 0 replays everything, then EOF
    assert read_bytes(t / "out") == b"first\r\n" + rest
    assert int(term_status(t)["bytes_out"]) == len(b"first\r\n" + rest)


def read_until_eof(f, start=b""):
    def go():
        buf = start
        while True:
            chunk = f.read(65536)
            if not chunk:
                return buf
            buf += chunk
    return bounded(go)


def test_out_poll_follows(sbx):
    t = new_term(sbx.new_session())
    start(t, "read a; echo A=$a; read b; echo B=$b")
    fd = os.open(t / "out", os.O_RDONLY | os.O_NONBLOCK)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        wait_until(lambda: term_status(t)["state"] == "running", 10, "the terminal to run")
        type_keys(t, "one\r")
        got = b""
        deadline = time.monotonic() + 20
        while b"A=one" not in got and time.monotonic() < deadline:
            if p.poll(1000):
                try:
                    got += os.read(fd, 4096)
                except BlockingIOError:
                    pass
        assert b"A=one" in got, got
        # nothing more for now: poll says not ready, a nonblocking read says EAGAIN
        assert p.poll(200) == []
        with pytest.raises(BlockingIOError):
            os.read(fd, 4096)
        type_keys(t, "two\r")
        assert p.poll(20000), "poll did not wake for new output"
    finally:
        os.close(fd)
    assert exit_of(t) == 0


def test_tail_f_follows(sbx):
    """tail -f as a person runs it: its stdout a terminal (python's pty here)."""
    t = new_term(sbx.new_session())
    start(t, "echo start-line; read x; echo then-$x; read y")
    wait_screen(t, r"^start-line$")
    master, slave = pty.openpty()
    tail = subprocess.Popen(["tail", "-f", str(t / "out")], stdout=slave,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(slave)
    buf = b""
    try:
        def read_until(needle):
            nonlocal buf
            deadline = time.monotonic() + 20
            while needle not in buf and time.monotonic() < deadline:
                r, _, _ = select.select([master], [], [], 1)
                if r:
                    buf += os.read(master, 4096)
            assert needle in buf, buf
        read_until(b"start-line")
        type_keys(t, "more\r")
        read_until(b"then-more")
    finally:
        tail.kill()
        tail.wait()
        os.close(master)
    write_bytes(t / "ctl", "kill\n", flags=os.O_WRONLY)


def test_ring_wrap_reads_start_at_the_oldest(sbx):
    t = new_term(sbx.new_session())
    # 3 x RING of numbered lines, then an end marker; the ring keeps the last RING bytes
    lines = 3 * RING // 16
    start(t, f"seq -f '%014g' 1 {lines}; echo the-end")
    assert exit_of(t) == 0
    total = int(term_status(t)["bytes_out"])
    assert total == lines * 16 + len(b"the-end\r\n")
    data = read_bytes(t / "out")
    assert len(data) == RING
    assert data.endswith(b"the-end\r\n")
    # it is the stream's tail, contiguous: reads at offsets below the oldest continue from it
    tail = b"".join(b"%014d\r\n" % i for i in range(1, lines + 1)) + b"the-end\r\n"
    assert data == tail[-RING:]
    # an offset inside the held window reads exactly what is there
    with open(t / "out", "rb", buffering=0) as f:
        f.seek(total - 9)
        assert bounded(f.read, 100) == b"the-end\r\n"
        assert bounded(f.read, 100) == b""


# --- lifetime -------------------------------------------------------------------------------------


def test_exit_status_and_states(sbx):
    t = new_term(sbx.new_session())
    start(t, "exit 7")
    assert exit_of(t) == 7
    st = term_status(t)
    assert (st["state"], st["exit"]) == ("failed", "7")
    err = write_errno(t / "in", "x", flags=os.O_WRONLY)
    assert err == errno.EIO, errname(err)


def test_kill_ctl_and_signal(sbx):
    t = shell_term(sbx)
    write_bytes(t / "ctl", "kill KILL\n", flags=os.O_WRONLY)
    assert exit_of(t) == 128 + 9
    st = term_status(t)
    assert (st["state"], st["signal"]) == ("killed", "9")


def test_rmdir_kills_the_tree_with_setsid_children(sbx):
    tags = [sleep_tag() for _ in range(3)]
    s = sbx.new_session()
    t = new_term(s)
    start(t, f"setsid sleep {tags[0]} & setsid sh -c 'sleep {tags[1]}; :' & "
             f"(trap '' HUP TERM; exec sleep {tags[2]}) & wait")
    for tag in tags:
        wait_until(lambda: procs_matching(tag), 20, f"sleep {tag} to run")
    bounded(os.rmdir, t)
    for tag in tags:
        assert procs_matching(tag) == [], f"sleep {tag} survived rmdir"
    assert t.name not in os.listdir(s / "terms")


def test_session_removal_kills_terminals(sbx):
    tag = sleep_tag()
    s = sbx.new_session()
    t = new_term(s)
    start(t, f"setsid sleep {tag} & wait")
    wait_until(lambda: procs_matching(tag), 20, f"sleep {tag} to run")
    bounded(os.rmdir, s)
    wait_until(lambda: procs_matching(tag) == [], 10, f"sleep {tag} to die")


def test_tiocsti_and_tioclinux_refused_on_the_pty(sbx):
    if isolation_none():
        pytest.skip("--isolation none: commands run without the seccomp filter of bwrap")
    t = shell_term(sbx)
    type_keys(t, "python3 -c \"import fcntl, termios\ntry:\n"
                 "    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('sti-' + 'allowed')\n"
                 "except OSError as e:\n    print('sti-errno', e.errno)\"\r")
    text = wait_screen(t, r"^sti-(errno \d+|allowed)$")
    assert re.search(rf"^sti-errno {errno.EPERM}$", text, re.M), text
    # TIOCLINUX (0x541C) too: a pty is no console (ENOTTY), but the filter answers first
    type_keys(t, "python3 -c \"import fcntl\ntry:\n"
                 "    fcntl.ioctl(0, 0x541C, b'x'); print('linux-' + 'allowed')\n"
                 "except OSError as e:\n    print('linux-errno', e.errno)\"\r")
    text = wait_screen(t, r"^linux-(errno \d+|allowed)$")
    assert re.search(rf"^linux-errno {errno.EPERM}$", text, re.M), text


# --- wait ----------------------------------------------------------------------------------------


def test_wait_returns_the_matching_line(sbx):
    t = shell_term(sbx)
    write_bytes(t / "wait", "^result: [0-9]+$\n", flags=os.O_WRONLY)
    waiting = Background(read_bytes, t / "wait", timeout=25)
    time.sleep(0.3)
    assert not waiting.done(), "wait answered before the screen matched"
    type_keys(t, "sleep 0.2; echo result: $((6*7))\r")
    assert waiting.result() == b"result: 42\n"
    # a screen that matches already answers at once
    assert read_bytes(t / "wait", timeout=5) == b"result: 42\n"


def test_wait_sees_a_prompt_s_trailing_blank(sbx):
    """The cursor's line is matched with its blanks up to the cursor: a prompt that ends in a
    blank is found by a pattern that ends in one."""
    t = new_term(sbx.new_session())
    start(t, "python3 -q")
    write_bytes(t / "wait", "^>>> $\n", flags=os.O_WRONLY)
    assert read_bytes(t / "wait", timeout=25) == b">>> \n"
    s = new_term(sbx.new_session())
    # a prompt of its own, so that the shell's first prompt (user@host:~$ ) cannot match first
    type_keys(s, "PS1='sbx$ '\r")
    write_bytes(s / "wait", "^sbx\\$ $\n", flags=os.O_WRONLY)
    assert read_bytes(s / "wait", timeout=25) == b"sbx$ \n"
    # the screen itself still leaves the blank out
    assert "\nsbx$\n" in screen(s)
    write_bytes(t / "ctl", "eof\n", flags=os.O_WRONLY)
    assert exit_of(t) == 0


def test_wait_refuses_back_references(sbx):
    t = new_term(sbx.new_session())
    for bad in ["(a)\\1\n", "((a*)*)*\\2\\1b\n", "a" * 257 + "\n"]:
        err = write_errno(t / "wait", bad, flags=os.O_WRONLY)
        assert err == errno.EINVAL, f"pattern {bad!r}: {errname(err)}"
    # what glibc took stays as it was: intervals, classes, GNU's escapes
    for good in ["^a{2,3}[[:digit:]]\\>\n", "\\w+\\s*$\n", "(|x)\\.\n"]:
        write_bytes(t / "wait", good, flags=os.O_WRONLY)


def test_wait_bad_pattern_and_none(sbx):
    t = shell_term(sbx)
    err = errno_of_read(t / "wait")
    assert err == errno.EINVAL, f"wait read with no pattern: {errname(err)}"
    for bad in ["(unclosed\n", "\n", "a\nb\n"]:
        err = write_errno(t / "wait", bad, flags=os.O_WRONLY)
        assert err == errno.EINVAL, f"pattern {bad!r}: {errname(err)}"
    err = errno_of_read(t / "wait")
    assert err == errno.EINVAL, "a bad pattern was kept"


def test_wait_ends_with_the_terminal(sbx):
    t = new_term(sbx.new_session())
    start(t, "read x; echo bye")
    write_bytes(t / "wait", "never-shown", flags=os.O_WRONLY)
    waiting = Background(read_bytes, t / "wait", timeout=25)
    time.sleep(0.3)
    type_keys(t, "go\r")
    assert waiting.result() == b""
    assert exit_of(t) == 0


@pytest.mark.sbx_timeout(90)
def test_wait_times_out(sbx):
    t = shell_term(sbx)
    write_bytes(t / "wait", "never-shown", flags=os.O_WRONLY)
    t0 = time.monotonic()
    err = errno_of_read(t / "wait", timeout=60)
    took = time.monotonic() - t0
    assert err == errno.ETIMEDOUT, errname(err)
    assert WAIT_MS / 1000 - 0.5 < took < WAIT_MS / 1000 + 20, took


def errno_of_read(p, timeout=10):
    try:
        read_bytes(p, timeout=timeout)
    except OSError as exc:
        return exc.errno
    return 0
