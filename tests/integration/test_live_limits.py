"""Live limits (docs/sandbox.md): a write of `limits` changes the running sandbox's memory,
process and CPU limits at once, all or nothing, and a limit that cannot hold is refused with
the reason in `errors`; each change is a limits.set event in the journal."""

import json
import os
import tempfile

import pytest

from sbxutil import (ConfMount, isolation_none, read_bytes, wait_until, write_bytes,
                     write_errno, limits)

HOLD = "python3 -c 'b = bytearray({mb} << 20); import time; time.sleep(120)'"


@pytest.fixture(scope="module")
def lm():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-live-"),
                  "[sandbox]\nmemory_max = 1G\ntmp_size = 64M\nshm_size = 32M\n")
    try:
        m.start(timeout=10)
        if "memory_max" not in limits(m):
            pytest.skip("no memory cgroup for the sandbox: no limits to change")
        yield m
    finally:
        m.discard()


def current(m):
    return limits(m)


def journal_kinds(m, kind):
    return [json.loads(line) for line in read_bytes(m.mnt / "journal").splitlines()
            if json.loads(line)["kind"] == kind]


def last_error(m):
    return read_bytes(m.mnt / "errors").decode().splitlines()[-1]


def hold(m, mb):
    """A background process that holds mb MiB; returns its session."""
    s = m.new_session()
    os.mkdir(s / "procs" / "hog")
    write_bytes(s / "procs" / "hog" / "cmd", HOLD.format(mb=mb).encode())
    wait_until(lambda: int(current(m)["memory_current"]) > mb << 20, 20, f"{mb} MiB held")
    return s


def test_raised_and_lowered_at_once_with_an_event(lm):
    write_bytes(lm.mnt / "limits", b"memory_max 700M\npids_max 300\n")
    lim = current(lm)
    assert int(lim["memory_max"]) == 700 << 20 and lim["pids_max"] == "300"
    ev = journal_kinds(lm, "limits.set")[-1]
    assert ev["memory_max"] == str(700 << 20) and ev["pids_max"] == "300"
    write_bytes(lm.mnt / "limits", b"memory_max 1G\npids_max max\n")
    lim = current(lm)
    assert int(lim["memory_max"]) == 1 << 30 and lim["pids_max"] in ("max", str(2**63 - 1))


def test_what_it_reads_can_be_written_back(lm):
    lim = current(lm)
    keys = [k for k in ("memory_max", "pids_max", "cpu_max", "cpu_quota_us") if k in lim]
    text = "".join(f"{k} {lim[k]}\n" for k in keys)
    write_bytes(lm.mnt / "limits", text.encode())
    after = current(lm)
    assert all(after[k] == lim[k] for k in keys), (lim, after)


def test_bad_lines_are_refused_at_their_write_with_the_reason(lm):
    before = current(lm)
    for line, word in ((b"memory_current 5\n", "not a limit"),
                       (b"memory_max lots\n", "bad value"),
                       (b"pids_max -3\n", "bad value"),
                       (b"memory_max 10\n", "bad value")):
        assert write_errno(lm.mnt / "limits", line) == 22, line
        assert word in last_error(lm), last_error(lm)
    assert current(lm)["memory_max"] == before["memory_max"]


def test_a_memory_limit_below_what_a_process_holds(lm):
    s = hold(lm, 300)
    try:
        before = current(lm)
        err = write_errno(lm.mnt / "limits", b"pids_max 200\nmemory_max 100M\n", at_close=True)
        if before.get("cgroup") == "v1":
            # v1 cannot take back anonymous memory without swap: refused, nothing applied
            assert err == 16, err
            assert "holds more" in last_error(lm)
            after = current(lm)
            assert after["memory_max"] == before["memory_max"]
            assert after["pids_max"] == before["pids_max"], "all or nothing"
        else:
            # v2 takes the limit and the OOM killer takes the process
            assert err == 0
            wait_until(lambda: b"oom" in read_bytes(s / "procs" / "hog" / "status")
                       or read_bytes(s / "procs" / "hog" / "exit") == b"137\n", 20, "the kill")
    finally:
        write_bytes(lm.mnt / "limits", b"memory_max 1G\npids_max max\n")
        write_bytes(s / "procs" / "ctl", b"kill\n")
        wait_until(lambda: int(current(lm)["memory_current"]) < 150 << 20, 20, "memory given back")


def test_a_lowered_limit_holds_for_what_comes_after(lm):
    write_bytes(lm.mnt / "limits", b"memory_max 200M\n")
    try:
        s = lm.new_session()
        lm.run(s, "python3 -c 'b = bytearray(400 << 20)'", timeout=60)
        end = [e for e in journal_kinds(lm, "cmd.end") if e["session"] == s.name][-1]
        assert end["reason"] == "oom", end
        lim = current(lm)
        assert int(lim["session_memory_max"]) < 200 << 20, "the sessions' own limits follow"
    finally:
        write_bytes(lm.mnt / "limits", b"memory_max 1G\n")


@pytest.mark.skipif(isolation_none(), reason="cgroup = none is checked with bwrap's mount")
def test_without_cgroups_it_says_so():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-live0-"), "[sbxfs]\ncgroup = none\n")
    try:
        m.start(timeout=10)
        assert write_errno(m.mnt / "limits", b"pids_max 10\n", at_close=True) == 95
        assert "no cgroup limits" in last_error(m)
    finally:
        m.discard()


def test_forks_refused_at_the_pids_limit_are_in_the_commands_end(lm):
    write_bytes(lm.mnt / "limits", b"pids_max 40\n")
    try:
        s = lm.new_session()
        lm.run(s, "for i in $(seq 60); do sleep 2 & done 2>/dev/null; wait; true", timeout=60)
    finally:
        write_bytes(lm.mnt / "limits", b"pids_max max\n")
    end = [e for e in journal_kinds(lm, "cmd.end") if e["session"] == s.name][-1]
    assert end.get("pids_limit_hits", 0) > 0, end
