"""Helpers of the terminal tests: make a terminal, start its command, type into it."""

import os
from pathlib import Path

from sbxutil import bounded, uniq, write_bytes


def new_term(session, name=None):
    t = Path(session) / "terms" / (name or uniq("t"))
    bounded(os.mkdir, t, what=f"mkdir {t}")
    return t


def start(t, cmd):
    write_bytes(t / "cmd", cmd, flags=os.O_WRONLY)


def type_keys(t, keys):
    write_bytes(t / "in", keys, flags=os.O_WRONLY)
