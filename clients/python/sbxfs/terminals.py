"""Terminals: sessions/ID/terms/NAME/, a program on a pty driven through in, size, ctl,
wait."""

import os
import random
import string

from . import osio
from .commands import env_cwd_prefix
from .errors import TerminalError, map_error
from .fsio import parse_status, read_snapshot, read_text, shell_quote, write_control
from .names import check_name


class Terminal:
    def __init__(self, session, id):
        self.session = session
        self.id = check_name(id, "terminal")
        self.dir = os.path.join(session.dir, "terms", id)

    def _fail(self, exc):
        return map_error(exc, "terminal", f"terminal {self.id}")

    def _write(self, name, data):
        try:
            write_control(os.path.join(self.dir, name), data)
        except OSError as exc:
            raise self._fail(exc) from None

    def _read(self, name):
        try:
            return read_text(os.path.join(self.dir, name))
        except OSError as exc:
            raise self._fail(exc) from None

    def write(self, data):
        """Bytes as typed: \\r is Enter, \\x03 Ctrl-C. The first write starts an interactive
        shell when no command was given."""
        self._write("in", data)

    def resize(self, cols, rows):
        self._write("size", f"{rows} {cols}\n")

    def interrupt(self):
        self._write("ctl", "interrupt\n")

    def terminate(self, signal=None):
        try:
            self._write("ctl", f"kill {str(signal).removeprefix('SIG')}\n" if signal else "kill\n")
        except TerminalError:
            raise
        except Exception as exc:  # nothing running any more
            if getattr(exc, "errno", None) != "ESRCH":
                raise

    def output(self):
        """The raw output held now (the last [session] term_ring bytes), without waiting."""
        try:
            return read_snapshot(os.path.join(self.dir, "out")).decode("utf-8", "replace")
        except OSError as exc:
            raise self._fail(exc) from None

    def screen(self):
        return self._read("screen")

    def wait_for(self, pattern):
        """Waits until a line of the screen matches the extended regular expression."""
        self._write("wait", f"{pattern}\n")
        line = self._read("wait")
        if not line:
            raise TerminalError(f"terminal {self.id} ended before a line matched {pattern}")
        return line.removesuffix("\n")

    def get_status(self):
        return parse_status(self._read("status"))

    def wait_for_exit(self):
        return {"exit_code": int(self._read("exit"))}

    def close(self):
        """Ends the program with its whole tree and removes the terminal."""
        try:
            osio.rmdir(self.dir)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._fail(exc) from None


def create_terminal(session, command=None, cwd=None, env=None, cols=None, rows=None, id=None):
    """command: an argv list or a shell line; none starts the session's interactive shell."""
    tail = "".join(random.choices(string.ascii_lowercase + string.digits, k=8))
    term = Terminal(session, f"term-{tail}" if id is None else id)
    try:
        osio.mkdir(term.dir)
    except OSError as exc:
        raise term._fail(exc) from None
    if cols or rows:
        term.resize(cols or 80, rows or 24)
    line = command
    if isinstance(command, (list, tuple)):
        line = "exec " + " ".join(shell_quote(a) for a in command)
    if env or cwd:
        line = env_cwd_prefix(env, cwd) + (line or "exec bash -i")
    if line:
        term._write("cmd", f"{line}\n")
    return term
