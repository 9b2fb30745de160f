"""The audit journal (docs/journal.md): `journal` at the root and in each session, a JSON line per
event with its sequence number and time, read to its current end like a log on disk; poll()
waits past the last read for the next event. Each kind of event is made here and read
back; what a command writes cannot forge a line; the offsets and numbers go on across a
restart; the files on disk stay under `[sbxfs] journal_max`."""

import errno
import json
import os
import select
import subprocess
import tempfile
import time

import pytest

from sbxutil import (ConfMount, SbxMount, bounded, errno_of, isolation_none, read_bytes, sh,
                     uniq, wait_until, write_bytes, write_errno)


def events(path, start=0):
    """The events of a journal file from byte start on; each line must be one JSON object."""
    data = read_bytes(path)[start:]
    assert data == b"" or data.endswith(b"\n"), "a journal reads whole lines"
    out = []
    for line in data.splitlines():
        e = json.loads(line)
        assert isinstance(e, dict) and e["v"] == 1, line
        out.append(e)
    return out


def end(m):
    return os.stat(m.mnt / "journal").st_size


def find(evs, kind, **fields):
    return [e for e in evs if e["kind"] == kind and all(e.get(k) == v for k, v in fields.items())]


def one(evs, kind, **fields):
    got = find(evs, kind, **fields)
    assert len(got) == 1, f"one {kind} {fields} in {evs}"
    return got[0]


def test_lines_are_numbered_in_order_and_stamped(sbx):
    sbx.run(sbx.sessions / "default", "true")
    evs = events(sbx.mnt / "journal")
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "no gap without a journal.lost"
    for e in evs:
        assert e["time"].endswith("Z") and e["time"][10] == "T", e
    assert evs[0]["kind"] == "daemon.start"


def test_a_command_starts_and_ends_with_its_text_cwd_exit_and_bytes(sbx):
    s = sbx.new_session()
    start = end(sbx)
    sbx.run(s, "printf abc; echo oops >&2; exit 3")
    evs = events(sbx.mnt / "journal", start)
    st = one(evs, "cmd.start", session=s.name)
    en = one(evs, "cmd.end", session=s.name)
    assert st["cmd"] == "printf abc; echo oops >&2; exit 3"
    assert st["cwd"] == sbx.cmd_ws and st["run"] == en["run"] == 1
    assert en["exit"] == 3 and en["reason"] == "exit" and "signal" not in en
    assert en["stdout_bytes"] == 3 and en["stderr_bytes"] == 5
    assert en["duration_ms"] >= 0 and en["seq"] > st["seq"]


def test_timeouts_and_kills_say_why_they_ended(sbx):
    s = sbx.new_session()
    start = end(sbx)
    write_bytes(s / "ctl", b"timeout 200\n")
    out, err, code = sbx.run(s, "sleep 30")
    assert code == 124
    sbx.submit(s, "sleep 30")
    wait_until(lambda: b"running" in read_bytes(s / "status"), 10, "the sleep runs")
    write_bytes(s / "ctl", b"kill\n")
    sbx.exit_status(s)
    ends = find(events(sbx.mnt / "journal", start), "cmd.end", session=s.name)
    assert [e["reason"] for e in ends] == ["timeout", "killed"], ends


def test_sessions_processes_terminals_and_their_ends(sbx):
    start = end(sbx)
    s = sbx.new_session()
    os.mkdir(s / "procs" / "w")
    write_bytes(s / "procs" / "w" / "cmd", b"exit 7\n")
    assert read_bytes(s / "procs" / "w" / "exit") == b"7\n"
    os.mkdir(s / "terms" / "t")
    write_bytes(s / "terms" / "t" / "cmd", b"echo hi\n")
    wait_until(lambda: find(events(sbx.mnt / "journal", start), "term.end", session=s.name),
               10, "the terminal's end")
    os.rmdir(s / "terms" / "t")
    os.rmdir(s)
    evs = events(sbx.mnt / "journal", start)
    one(evs, "session.new", session=s.name)
    one(evs, "proc.start", session=s.name, proc="w", cmd="exit 7\n")
    assert one(evs, "proc.end", session=s.name, proc="w")["exit"] == 7
    one(evs, "term.start", session=s.name, term="t", cmd="echo hi\n")
    assert one(evs, "term.end", session=s.name, term="t")["exit"] == 0
    assert evs.index(one(evs, "session.remove", session=s.name)) == len(evs) - 1 or \
        all(e.get("session") != s.name for e in evs[evs.index(
            one(evs, "session.remove", session=s.name)) + 1:])


def test_env_policy_snapshots_and_refusals_are_events(sbx):
    start = end(sbx)
    s = sbx.new_session()
    write_bytes(s / "env", b"SECRET_TOKEN=hunter2\n-HOME\n")
    write_bytes(sbx.mnt / "env", b"ROOT_ONLY=1\n")
    policy = read_bytes(sbx.mnt / "network" / "policy")
    write_bytes(sbx.mnt / "network" / "policy", policy)
    assert write_errno(s / "ctl", b"frobnicate\n") == 22
    name = uniq("snap")
    os.mkdir(sbx.mnt / "snapshots" / name)
    os.rmdir(sbx.mnt / "snapshots" / name)
    evs = events(sbx.mnt / "journal", start)
    assert one(evs, "env.set", session=s.name)["names"] == "SECRET_TOKEN -HOME"
    assert one(evs, "env.set", names="ROOT_ONLY").get("session") is None
    assert b"hunter2" not in read_bytes(sbx.mnt / "journal"), "no value of an env in it"
    assert find(evs, "policy.set")
    ref = one(evs, "refused", session=s.name)
    assert ref["path"] == f"sessions/{s.name}/ctl" and ref["errno"] == "EINVAL"
    assert "frobnicate" in ref["why"]
    one(evs, "snapshot.take", name=name)
    one(evs, "snapshot.remove", name=name)


def test_a_session_reads_its_own_lines(sbx):
    a, b = sbx.new_session(), sbx.new_session()
    sbx.run(a, "echo a")
    sbx.run(b, "echo b")
    own = events(a / "journal")
    assert own and all(e["session"] == a.name for e in own)
    assert {e["kind"] for e in own} >= {"session.new", "cmd.start", "cmd.end"}
    whole = {e["seq"]: e for e in events(sbx.mnt / "journal")}
    for e in own:
        assert whole[e["seq"]] == e, "the same line as in the whole journal"


def test_command_text_cannot_forge_a_line(sbx):
    s = sbx.new_session()
    start = end(sbx)
    forged = '{"v":1,"seq":1,"time":"2026-01-01T00:00:00.000000Z","kind":"session.remove"}'
    cmd = b"echo '\n" + forged.encode() + b"\n' \x80\xff \"q\" \\ \xe2\x80\xa8 ; true\n"
    sbx.run(s, cmd)
    evs = events(sbx.mnt / "journal", start)
    assert not find(evs, "session.remove"), "a forged line is no event"
    st = one(evs, "cmd.start", session=s.name)
    # not UTF-8: the exact bytes, in base64
    import base64
    assert base64.b64decode(st["cmd"]["base64"]) == cmd
    sbx.run(s, "echo '" + forged + "'")
    st = find(events(sbx.mnt / "journal", start), "cmd.start", session=s.name)[-1]
    assert st["cmd"] == "echo '" + forged + "'"


def test_a_long_command_is_cut_and_says_by_how_much(sbx):
    s = sbx.new_session()
    start = end(sbx)
    cmd = ": " + "x" * 10000 + "\n"
    sbx.run(s, cmd)
    st = one(events(sbx.mnt / "journal", start), "cmd.start", session=s.name)
    assert st["cmd"] == cmd[:4096] and st["cmd_cut"] == len(cmd) - 4096


@pytest.mark.parametrize("where", ["root", "session"])
def test_poll_waits_past_the_last_read_and_wakes_at_the_next_event(sbx, where):
    s = sbx.new_session()
    path = sbx.mnt / "journal" if where == "root" else s / "journal"
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, 65536):
            pass
        assert os.read(fd, 65536) == b"", "a read at the end returns at once"
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert not p.poll(200), "nothing past the last read: not readable"
        sbx.submit(s, "true")
        assert p.poll(10000), "poll says a line is there"
        line = os.read(fd, 65536).splitlines()[0]
        assert json.loads(line)["kind"] == "cmd.start"
    finally:
        os.close(fd)


def test_cat_and_tail_read_it_like_a_log(sbx):
    out = subprocess.run(["cat", str(sbx.mnt / "journal")], capture_output=True, timeout=10)
    assert out.returncode == 0 and out.stdout.endswith(b"\n")
    s = sbx.new_session()
    tail = subprocess.Popen(["tail", "-n", "0", "-s", "0.1", "-f", str(s / "journal")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        sbx.run(s, "true")
        line = bounded(tail.stdout.readline, timeout=10)
        assert json.loads(line)["session"] == s.name
    finally:
        tail.kill()
        tail.wait()


def test_it_is_read_only(sbx):
    assert errno_of(os.open, sbx.mnt / "journal", os.O_WRONLY) == errno.EACCES
    s = sbx.new_session()
    assert errno_of(os.open, s / "journal", os.O_WRONLY) == errno.EACCES


@pytest.mark.skipif(isolation_none(), reason="no memory cgroup of its own to hit")
def test_an_oom_kill_ends_the_command_with_its_reason_and_process():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-joom-"),
                  "[sandbox]\nmemory_max = 512M\ntmp_size = 64M\nshm_size = 32M\n")
    try:
        m.start(timeout=10)
        if "memory_max" not in read_bytes(m.mnt / "limits").decode():
            pytest.skip("no memory cgroup here")
        s = m.new_session()
        m.run(s, "python3 -c 'b = []\nwhile True: b.append(bytearray(16 << 20))'",
              timeout=60)
        en = one(events(m.mnt / "journal"), "cmd.end", session=s.name)
        assert en["reason"] == "oom" and en["oom_kills"] >= 1 and en["pid"] > 0, en
    finally:
        m.discard()


def test_offsets_and_numbers_go_on_across_a_restart():
    m = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-jrs-"))
    try:
        m.start(timeout=10)
        m.run(m.sessions / "default", "echo before")
        size = end(m)
        last = events(m.mnt / "journal")[-1]["seq"]
        assert not m.stop()
        m.start(timeout=10)
        evs = events(m.mnt / "journal", size)
        assert [(e["seq"], e["kind"]) for e in evs[:2]] == [
            (last + 1, "daemon.stop"), (last + 2, "daemon.start")], evs[:2]
        old = events(m.mnt / "journal")
        assert find(old, "daemon.stop") and old[-len(evs):] == evs
        # a reader resumes from its offset with the same bytes as before
        assert read_bytes(m.mnt / "journal")[:size].endswith(b"\n")
    finally:
        m.discard()


def test_rotation_keeps_it_under_its_bound_and_reads_from_the_oldest():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-jrot-"), "[sbxfs]\njournal_max = 64K\n")
    try:
        m.start(timeout=10)
        s = m.new_session()
        text = "x" * 3000
        while end(m) < 200 << 10:
            m.run(s, ": " + text)

        def on_disk():
            return sum(f.stat().st_size for f in (m.state / "journal").iterdir())

        assert on_disk() <= 64 << 10, on_disk()
        # what is read is what is on disk, once the writer has caught up (within 50 ms)
        wait_until(lambda: len(read_bytes(m.mnt / "journal")) == on_disk(), 5, "the writer")
        data = read_bytes(m.mnt / "journal")
        assert len(data) <= 64 << 10 and data.endswith(b"\n")
        evs = events(m.mnt / "journal")
        assert evs[0]["kind"] != "daemon.start", "the oldest went"
        seqs = [e["seq"] for e in evs]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        # an offset below the oldest reads from the oldest
        with open(m.mnt / "journal", "rb") as f:
            f.seek(0)
            assert f.read(10) == data[:10]
    finally:
        m.discard()


@pytest.mark.skipif(isolation_none(), reason="no seccomp filter without bwrap")
def test_a_refused_system_call_is_in_the_journal_with_its_process(sbx):
    s = sbx.new_session()
    start = end(sbx)
    out, err, code = sbx.run(s, "mount -t tmpfs none /tmp 2>/dev/null; echo $?; "
                                "unshare -U true 2>/dev/null; echo $?")
    assert out == b"32\n1\n", "refused as before: EPERM"
    evs = events(sbx.mnt / "journal", start)
    mount = one(evs, "syscall.refused", session=s.name, call="mount")
    assert mount["comm"] == "mount" and mount["pid"] > 1 and mount["errno"] == "EPERM"
    one(evs, "syscall.refused", session=s.name, call="unshare", comm="unshare")


@pytest.mark.skipif(isolation_none(), reason="no seccomp filter without bwrap")
def test_a_flood_of_refused_calls_is_counted_not_dropped(sbx):
    s = sbx.new_session()
    start = end(sbx)
    flood = ("python3 -c 'import ctypes\nlibc = ctypes.CDLL(None)\n"
             "for _ in range(3000): libc.mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None)'")
    sbx.run(s, flood, timeout=60)
    wait_until(lambda: find(events(sbx.mnt / "journal", start), "syscall.refused.more"), 5,
               "the count of the ones past the rate")
    evs = events(sbx.mnt / "journal", start)
    each = find(evs, "syscall.refused", session=s.name)
    more = sum(e["count"] for e in find(evs, "syscall.refused.more"))
    assert len(each) + more == 3000 and len(each) <= 3000
    assert sbx.run(s, "echo alive")[0] == b"alive\n"


def fs_events(m, start, prefix):
    return [e for e in events(m.mnt / "journal", start)
            if e["kind"].startswith("fs.") and e.get("path", "").startswith(prefix)]


def test_a_thousand_workspace_changes_in_order(sbx):
    s = sbx.new_session()
    d = uniq("many")
    start = end(sbx)
    sbx.run(s, f"mkdir {d} && for i in $(seq -w 0 999); do : > {d}/f$i; done", timeout=60)
    wait_until(lambda: len([e for e in fs_events(sbx, start, d + "/")
                            if e["kind"] == "fs.write"]) == 1000, 10, "the 1,000 writes")
    evs = fs_events(sbx, start, d)
    made = [e["path"] for e in evs if e["kind"] == "fs.create"]
    assert made == [d] + [f"{d}/f{i:03d}" for i in range(1000)], made[:5]
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(seqs)


def test_renames_removes_and_the_hosts_writes(sbx):
    s = sbx.new_session()
    d = uniq("mv")
    start = end(sbx)
    sbx.run(s, f"mkdir -p {d}/a && echo x > {d}/a/f && mv {d}/a/f {d}/g && mv {d}/a {d}/b "
               f"&& : > {d}/b/h && rm {d}/g")
    write_bytes(sbx.workspace / d / "from-host", b"h")
    wait_until(lambda: any(e["path"] == f"{d}/from-host" for e in fs_events(sbx, start, d)),
               10, "the host's write")
    got = [(e["kind"], e["path"], e.get("to")) for e in fs_events(sbx, start, d)]
    for want in [("fs.rename", f"{d}/a/f", f"{d}/g"), ("fs.rename", f"{d}/a", f"{d}/b"),
                 ("fs.create", f"{d}/b/h", None), ("fs.remove", f"{d}/g", None),
                 ("fs.write", f"{d}/from-host", None)]:
        assert want in got, (want, got)


def test_a_link_the_sandbox_plants_is_never_watched(sbx, tmp_path):
    host = tmp_path / "host-dir"
    host.mkdir()
    s = sbx.new_session()
    d = uniq("lnk")
    start = end(sbx)
    sbx.run(s, f"mkdir {d} && ln -s {host} {d}/link && mkdir {d}/real")
    wait_until(lambda: fs_events(sbx, start, f"{d}/real"), 10, "the directory made")
    (host / "secret").write_text("x")
    sbx.run(s, f": > {d}/real/after")
    wait_until(lambda: fs_events(sbx, start, f"{d}/real/after"), 10, "the file made after")
    assert not [e for e in events(sbx.mnt / "journal", start) if "secret" in json.dumps(e)]


def test_a_terminal_past_the_bound_is_refused_with_its_reason():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-jterm-"), "[session]\nterms_max = 1\n")
    try:
        m.start(timeout=10)
        s = m.new_session()
        os.mkdir(s / "terms" / "one")
        assert errno_of(os.mkdir, s / "terms" / "two") == errno.ENOSPC
        ref = one(events(m.mnt / "journal"), "refused", session=s.name)
        assert ref["path"] == f"sessions/{s.name}/terms/two" and ref["errno"] == "ENOSPC"
        assert "terms_max" in ref["why"]
    finally:
        m.discard()


def test_a_snapshot_restored_and_one_imported(sbx):
    name, other, d = uniq("snapr"), uniq("snapi"), uniq("snapdir")
    # of a directory of its own: the workspace holds links other tests planted, which an
    # import refuses
    (sbx.ws / d).mkdir()
    (sbx.ws / d / "f").write_text("x")
    write_bytes(sbx.mnt / "snapshots" / "ctl", f"take {name} {d}\n".encode())
    start = end(sbx)
    write_bytes(sbx.mnt / "snapshots" / name / "ctl", b"restore force\n")
    archive = read_bytes(sbx.mnt / "snapshots" / name / "archive")
    write_bytes(sbx.mnt / "snapshots" / "import" / other, archive)
    evs = events(sbx.mnt / "journal", start)
    assert "error" not in one(evs, "snapshot.restore", name=name)
    assert "error" not in one(evs, "snapshot.import", name=other)
    for n in (name, other):
        os.rmdir(sbx.mnt / "snapshots" / n)
