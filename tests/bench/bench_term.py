#!/usr/bin/python3
"""bench_term.py: keystroke-to-screen latency of a terminal (sessions/ID/terms/NAME).

Mounts a fresh sbxfs in a temporary directory (binary: $SBXFS_BIN, else build/sbxfs of this
checkout), makes a terminal running `cat` (the pty echoes what is typed), then for each of N
keystrokes: one character written to `in` (open, write, close), then `screen` read (open, read,
close) again and again until its line shows it. Lines are started with an untimed marker and
ended after 40 characters, so every keystroke has a distinct expected line.

Floor: the same keystrokes through a plain pty in this process (python's pty module, `cat` on
its slave): one write to the master, then reads of the master until the echo came back.

Prints median and p90 of both, in milliseconds. Unmounts at the end; a watchdog kills the daemon
if a step hangs.

usage: tests/bench/bench_term.py [--keys N] [--warmup N]
"""

import argparse
import os
import pty
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, med_p90, read_to_eof, sbxfs_binary, start_watchdog, \
    write_file  # noqa: E402

WATCHDOG_SECONDS = 170
STUCK_SECONDS = 10
LINE = 40
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def keystrokes(n, prefix):
    """(line marker, text so far) after each of n keystrokes; markers start each line."""
    out, line, typed = [], 0, ""
    for i in range(n):
        if i % LINE == 0:
            line += 1
            typed = ""
        typed += LETTERS[i % len(LETTERS)]
        out.append((f"{prefix}{line}:", typed))
    return out


def await_screen(term, want):
    """Reads screen until it holds want (bytes); exits with the screen after STUCK_SECONDS."""
    deadline = time.monotonic() + STUCK_SECONDS
    while want not in (text := read_to_eof(str(term / "screen"))):
        if time.monotonic() > deadline:
            sys.exit(f"{want!r} not on the screen after {STUCK_SECONDS} s:\n{text.decode()}")


def end_line(term, line):
    """Enter, then wait for cat to write the line back (echo and copy, one under the other), so
    the next line's keys are not echoed before that copy."""
    write_file(str(term / "in"), b"\r")
    await_screen(term, (line + "\n" + line + "\n").encode())


def sbx_latencies(term, n, prefix):
    lat, line = [], ""
    for i, (marker, typed) in enumerate(keystrokes(n, prefix)):
        if i % LINE == 0:
            if i:
                end_line(term, line)
            write_file(str(term / "in"), marker.encode())
            await_screen(term, marker.encode())
        t0 = time.perf_counter()
        write_file(str(term / "in"), typed[-1].encode())
        await_screen(term, (marker + typed).encode())
        lat.append(time.perf_counter() - t0)
        line = marker + typed
    end_line(term, line)
    return lat


def pty_latencies(n):
    master, slave = pty.openpty()
    cat = subprocess.Popen(["cat"], stdin=slave, stdout=slave, stderr=slave,
                           start_new_session=True)
    os.close(slave)
    lat = []
    try:
        for i, (marker, typed) in enumerate(keystrokes(n, "L")):
            if i % LINE == 0:
                os.write(master, (b"\r" if i else b"") + marker.encode())
                seen = b""
                while marker.encode() not in seen:
                    seen += os.read(master, 4096)
            t0 = time.perf_counter()
            os.write(master, typed[-1].encode())
            seen = b""
            while typed[-1].encode() not in seen:
                seen += os.read(master, 4096)
            lat.append(time.perf_counter() - t0)
    finally:
        cat.kill()
        cat.wait()
        os.close(master)
    return lat


def ms(values):
    med, p90 = med_p90(values)
    return f"median {med * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()

    binary = sbxfs_binary()
    if not os.access(binary, os.X_OK):
        sys.exit(f"no sbxfs binary at {binary} (build it, or set SBXFS_BIN)")
    m = Mount(binary)
    timer = start_watchdog(WATCHDOG_SECONDS, m.proc)
    try:
        session = m.mnt / "sessions" / "bench"
        os.mkdir(session)
        term = session / "terms" / "cat"
        os.mkdir(term)
        write_file(str(term / "cmd"), b"cat")
        sbx_latencies(term, args.warmup, "W")
        sbx = sbx_latencies(term, args.keys, "L")
        floor = pty_latencies(args.keys)
        cgroup = m.cgroup_mode()
    finally:
        timer.cancel()
        m.close()
    print(f"keystroke to screen, {args.keys} keystrokes (cgroup {cgroup}):")
    print(f"  sbxfs terms/NAME (in -> screen): {ms(sbx)}")
    print(f"  plain pty (python pty, cat):     {ms(floor)}")


if __name__ == "__main__":
    main()
