"""`sbxfs attach PATH`: a person's terminal on a sandbox terminal (sessions/ID/terms/NAME).

Driven in a real terminal: the attach runs in a tmux pane (a private tmux server per test),
keys go in with `send-keys` and the pane is read with `capture-pane -p`. Every wait is on text
showing up in the pane or in a file, and bounded.
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import (bounded, read_bytes, run_proc, sbxfs_binary, status, uniq,
                     wait_until, write_bytes)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (scripts/bootstrap --test installs it)")

WAIT = 20


class Pane:
    """A tmux session of its own server, running a plain bash with a known prompt."""

    def __init__(self, tmp, name, width=100, height=30):
        self.sock = str(Path(tmp) / f"tmux-{name}")
        self.name = name
        env = dict(os.environ, TERM="xterm-256color")
        env.pop("TMUX", None)
        subprocess.run(["tmux", "-S", self.sock, "-f", "/dev/null", "new-session", "-d",
                        "-s", name, "-x", str(width), "-y", str(height),
                        "PS1='pane$ ' HISTFILE=/dev/null exec bash --norc --noprofile"],
                       env=env, check=True, timeout=WAIT)
        # One window whose size follows what the tests ask for, not a client's.
        self.tmux("set-option", "-g", "status", "off")
        self.tmux("set-option", "-g", "window-size", "manual")
        self.wait_for(r"^pane\$ ")

    def tmux(self, *args):
        res = subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True,
                             timeout=WAIT)
        assert res.returncode == 0, f"tmux {args}: {res.stderr}"
        return res.stdout

    def text(self):
        return self.tmux("capture-pane", "-p", "-J", "-t", self.name)

    def type(self, text, enter=True):
        self.tmux("send-keys", "-t", self.name, "-l", text)
        if enter:
            self.tmux("send-keys", "-t", self.name, "Enter")

    def keys(self, *names):
        self.tmux("send-keys", "-t", self.name, *names)

    def wait_for(self, pattern, timeout=WAIT):
        """Waits until the pane shows pattern (a regular expression); the match."""
        found = {}

        def seen():
            found["m"] = re.search(pattern, self.text(), re.M)
            return found["m"]
        wait_until(seen, timeout, f"{pattern!r} in the pane", interval=0.1, show=self.text)
        return found["m"]

    def size(self):
        h, w = self.tmux("display-message", "-p", "-t", self.name,
                         "#{pane_height} #{pane_width}").split()
        return int(h), int(w)

    def shell_pid(self):
        return int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}"))

    def kill(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True,
                       timeout=WAIT)


@pytest.fixture
def panes():
    tmp = tempfile.mkdtemp(prefix="sbxfs-attach-")
    made = []

    def make(width=100, height=30):
        p = Pane(tmp, f"p{len(made)}", width, height)
        made.append(p)
        return p
    yield make
    for p in made:
        p.kill()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def term(sbx):
    """The path of a new terminal (not yet made) of a new session."""
    s = sbx.new_session()
    if not (s / "terms").is_dir():
        pytest.skip("this sbxfs has no sessions/ID/terms/ (the terminal core is not built in)")
    return s / "terms" / uniq("t")


def attach_line(path, before="", after="; echo attach-rc=$?"):
    return f"{before}{shlex.quote(str(sbxfs_binary()))} attach {shlex.quote(str(path))}{after}"


def stty_file(pane, tag):
    """The pane's tty modes, as `stty -a` prints them (the shell writes them to a file)."""
    out = Path(tempfile.mkdtemp(prefix="sbxfs-stty-")) / tag
    pane.type(f"stty -a > {out}; echo stty-$((1+1))-{tag}")
    pane.wait_for(rf"^stty-2-{tag}")
    text = out.read_text()
    shutil.rmtree(out.parent)
    return text


def term_state(t):
    return status(t)["state"]


def attach(pane, t):
    """Runs sbxfs attach in the pane and waits until keys reach the terminal's shell."""
    pane.type(attach_line(t))
    wait_until(lambda: (t / "status").exists() and term_state(t) == "running", WAIT,
               f"{t} to run", interval=0.1, show=pane.text)
    marker = uniq("up")
    pane.type(f"echo {marker}-$((20+3))")
    pane.wait_for(rf"^{marker}-23")


def detach(pane):
    pane.keys("C-]")
    pane.keys("d")
    pane.wait_for(r"\[detached: .* runs on\]")
    pane.wait_for(r"^attach-rc=0$")


# --- without a terminal core --------------------------------------------------------------


def test_usage_errors(sbx, tmp_path):
    """Anything but MOUNT/sessions/ID/terms/NAME is a usage error (status 2), and standard
    input must be a terminal."""
    binary = str(sbxfs_binary())
    for bad in [[], [str(tmp_path)], [str(sbx.sessions / "default")],
                [str(sbx.sessions / "default" / "terms")], ["a", "b"]]:
        res = run_proc([binary, "attach", *bad], stdin=subprocess.DEVNULL)
        assert res.returncode == 2, f"attach {bad}: {res.returncode} {res.stderr!r}"
        assert b"sessions/ID/terms/NAME" in res.stderr, res.stderr
    res = run_proc([binary, "attach", str(sbx.sessions / "default" / "terms" / "x")],
                   stdin=subprocess.DEVNULL)
    assert res.returncode == 1 and b"not a terminal" in res.stderr, res
    res = run_proc([binary, "-h"])
    assert b"attach" in res.stdout


# --- in tmux -------------------------------------------------------------------------------


def test_replay_type_detach(sbx, term, panes):
    """What was on the screen before the attach shows; typed keys run; Ctrl-] d detaches and
    leaves the terminal running, and the pane's shell gets its modes back."""
    t = term
    os.mkdir(t)
    write_bytes(t / "in", "echo before-$((40+2))\r")
    wait_until(lambda: b"before-42" in read_bytes(t / "screen"), WAIT, "the echo on screen")
    pane = panes()
    modes = stty_file(pane, "before")
    attach(pane, t)
    assert re.search(r"^before-42", pane.text(), re.M), pane.text()
    pane.type("echo attach-ok")
    pane.wait_for(r"^attach-ok$")
    detach(pane)
    assert term_state(t) == "running"
    assert stty_file(pane, "after") == modes
    pane.type("echo shell-$((1+2))")
    pane.wait_for(r"^shell-3$")


def test_attach_makes_the_terminal(sbx, term, panes):
    """A missing terminal is made and started, with the pane's size."""
    pane = panes(90, 25)
    attach(pane, term)
    h, w = pane.size()
    assert read_bytes(term / "size").split() == [str(h).encode(), str(w).encode()]
    pane.type("stty size")
    pane.wait_for(rf"^{h} {w}$")
    detach(pane)


def test_two_attachers_see_the_same(sbx, term, panes):
    one, two = panes(), panes()
    attach(one, term)
    attach(two, term)
    one.type("echo shared-$((6*7))")
    one.wait_for(r"^shared-42$")
    two.wait_for(r"^shared-42$")
    detach(two)
    one.type("echo still-$((6*8))")
    one.wait_for(r"^still-48$")
    detach(one)


def test_terminal_exit_ends_the_attach(sbx, term, panes):
    """The terminal exiting ends the attach with its status, and the modes come back."""
    pane = panes()
    modes = stty_file(pane, "before")
    attach(pane, term)
    pane.type("exit 3")
    pane.wait_for(r"^\[.* exited: status 3\]$")
    pane.wait_for(r"^attach-rc=3$")
    assert stty_file(pane, "after") == modes
    assert read_bytes(term / "exit").strip() == b"3"


def test_resize_reaches_the_terminal(sbx, term, panes):
    pane = panes(100, 30)
    attach(pane, term)
    pane.tmux("resize-window", "-t", pane.name, "-x", "72", "-y", "21")
    wait_until(lambda: read_bytes(term / "size").split() == [b"21", b"72"], WAIT,
               "size to follow the window", interval=0.1,
               show=lambda: read_bytes(term / "size"))
    pane.type("stty size")
    pane.wait_for(r"^21 72$")
    detach(pane)


def test_double_ctrl_bracket_sends_one(sbx, term, panes):
    """Ctrl-] Ctrl-] sends one Ctrl-] through and does not detach."""
    pane = panes()
    attach(pane, term)
    pane.type("cat -v")
    time.sleep(0.5)  # cat may not have switched the tty's modes yet; the keys would still go
    pane.keys("C-]", "C-]")
    pane.type("x")
    pane.wait_for(r"^\^\]x$")
    pane.keys("C-c")
    marker = uniq("m")
    pane.type(f"echo {marker}-$((2+2))")
    pane.wait_for(rf"^{marker}-4$")
    detach(pane)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_restores_modes(sbx, term, panes, sig):
    """A signal to the attach ends it, restores the modes and leaves the terminal running."""
    pane = panes()
    modes = stty_file(pane, "before")
    attach(pane, term)
    shell = pane.shell_pid()
    children = [int(p) for p in
                Path(f"/proc/{shell}/task/{shell}/children").read_text().split()]
    assert len(children) == 1, children
    os.kill(children[0], sig)
    pane.wait_for(r"^\[detached \(.*\): .* runs on\]$")
    pane.wait_for(rf"^attach-rc={128 + sig}$")
    assert stty_file(pane, "after") == modes
    assert term_state(term) == "running"


def test_rmdir_of_the_terminal_ends_the_attach(sbx, term, panes):
    """The terminal removed under the attach (its program killed) ends it, modes restored."""
    pane = panes()
    modes = stty_file(pane, "before")
    attach(pane, term)
    bounded(os.rmdir, term, what=f"rmdir {term}")
    pane.wait_for(r"^\[.* (exited: status \d+|is gone)\]$")
    m = pane.wait_for(r"^attach-rc=(\d+)$")
    assert m.group(1) != "0", pane.text()
    assert stty_file(pane, "after") == modes


# What the sandbox prints: an OSC 52 clipboard write, titles, queries (title report, cursor
# position, DA1/DA2, XTVERSION, a colour, ENQ) and a DCS (XTGETTCAP). "cHduZWQ=" is "pwned".
HOSTILE = (r"printf '\e]52;c;cHduZWQ=\a\e]0;evil0\a\e]2;evil2\e\\\e[21t\e[6n\e[c\e[>c\e[>q"
           r"\e]10;?\a\005\eP+q544e\e\\'")


def test_sandbox_output_does_not_control_the_pane(sbx, term, panes):
    """Nothing the sandbox prints sets the pane's clipboard or title, or makes tmux answer:
    the command reads its input for a while afterwards and gets nothing."""
    pane = panes()
    pane.tmux("set-option", "-g", "set-clipboard", "on")  # OSC 52 would make a buffer
    pane.tmux("set-buffer", "known-buffer")
    pane.tmux("select-pane", "-t", pane.name, "-T", "known-title")
    buffers = pane.tmux("list-buffers", "-F", "#{buffer_name} #{buffer_sample}")
    attach(pane, term)
    got = uniq("got")
    # Raw, so that a reply without a newline reaches read; %q shows any byte of it.
    pane.type(f"stty raw -echo; {HOSTILE}; IFS= read -r -d '' -t 3 x; stty sane; "
              f"printf '%s=%d[%q]\\n' {got} \"${{#x}}\" \"$x\"")
    m = pane.wait_for(rf"^{got}=(\d+)\[(.*)\]$")
    assert m.group(1) == "0", f"a reply reached the sandbox: {m.group(2)}"
    assert pane.tmux("show-buffer") == "known-buffer"
    assert pane.tmux("list-buffers", "-F", "#{buffer_name} #{buffer_sample}") == buffers
    assert pane.tmux("display-message", "-p", "-t", pane.name,
                     "#{pane_title}").strip() == "known-title"
    detach(pane)
    assert pane.tmux("show-buffer") == "known-buffer"


def test_keys_with_the_detach_stay_out_of_the_shell(sbx, term, panes):
    """Keys that come with or right after Ctrl-] d are dropped, not run by the pane's shell."""
    pane = panes()
    attach(pane, term)
    pane.keys("C-]", "d", "echo leaked-$((1+1))", "Enter")
    pane.wait_for(r"\[detached: .* runs on\]")
    pane.wait_for(r"^attach-rc=0$")
    pane.type("echo after-$((2+2))")
    pane.wait_for(r"^after-4$")
    assert "leaked-2" not in pane.text(), pane.text()
