"""Run handles (cmd opened read-write answers the run number), runs/N/result (one JSON object
per run) and output (stdout and stderr interleaved as the daemon read them).

Every wait is bounded; commands are short, so the file runs in seconds.
"""

import base64
import datetime
import errno
import json
import os
import select
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from sbxutil import (Background, bounded, proc_state, read_bytes, read_pipe_until, uniq,
                     wait_file_sh, wait_until, write_bytes, cat_pipe, assert_sigint_ends)


def handle_run(s, cmd):
    """Submits cmd through a handle on s/cmd and returns its run number."""
    fd = os.open(Path(s) / "cmd", os.O_RDWR)
    try:
        assert os.write(fd, cmd.encode()) == len(cmd.encode())
        text = os.read(fd, 64)
        assert text.endswith(b"\n"), text
        assert os.read(fd, 64) == b"", "a second read is EOF"
        return int(text)
    finally:
        os.close(fd)


# --- handles -----------------------------------------------------------------------------------


def test_handle_returns_the_run_number(sbx):
    s = sbx.new_session()
    n1 = bounded(handle_run, s, "echo one")
    n2 = bounded(handle_run, s, "echo two")
    assert n2 == n1 + 1
    assert read_bytes(s / "runs" / str(n1) / "stdout") == b"one\n"
    assert read_bytes(s / "runs" / str(n2) / "stdout") == b"two\n"
    assert read_bytes(s / "runs" / str(n2) / "cmd") == b"echo two"


def test_handle_close_does_not_submit_twice(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "echo once")
    assert read_bytes(s / "runs" / str(n) / "exit") == b"0\n"
    assert sorted(int(x) for x in os.listdir(s / "runs")) == [n]


def test_plain_write_then_close_still_submits(sbx):
    s = sbx.new_session()
    write_bytes(s / "cmd", b"echo plain")
    assert read_bytes(s / "stdout") == b"plain\n"
    assert os.listdir(s / "runs") == ["1"]


def test_python_open_r_plus(sbx):
    s = sbx.new_session()

    def go():
        with open(s / "cmd", "r+") as f:
            f.write("echo py")
            f.flush()
            return f.read()

    text = bounded(go)
    n = int(text)
    assert text == f"{n}\n"
    assert read_bytes(s / "runs" / str(n) / "stdout") == b"py\n"


def test_shell_handle_with_redirections(sbx):
    """bash closes a duplicate after `printf >&3` (a FLUSH): the number waits for the read."""
    s = sbx.new_session()
    script = ('exec 3<>cmd; printf %s "echo sh" >&3; read -r n <&3; exec 3>&-; '
              'cat runs/$n/stdout; echo "n=$n"')
    r = bounded(subprocess.run, ["bash", "-c", script], cwd=s, capture_output=True,
                timeout=20)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode().splitlines()
    assert out[0] == "sh" and out[1].startswith("n=") and int(out[1][2:]) >= 1, out
    assert sorted(os.listdir(s / "runs")) == [out[1][2:]]


def test_pread_at_zero_answers_too(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"echo pr")
            first = os.pread(fd, 2, 0)  # a short buffer: the rest comes next
            rest = os.pread(fd, 64, 0)
            return first + rest, os.pread(fd, 64, 0)
        finally:
            os.close(fd)

    text, eof = bounded(go)
    assert eof == b""
    n = int(text)
    assert read_bytes(s / "runs" / str(n) / "stdout") == b"pr\n"


def test_handle_reused_for_the_next_command(sbx):
    """After its number was read, a write on the handle starts the next command."""
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            ns = []
            for word in ("a", "b", "c"):
                os.write(fd, f"echo {word}".encode())
                ns.append(int(os.read(fd, 64)))
                assert os.read(fd, 64) == b""
            return ns
        finally:
            os.close(fd)

    ns = bounded(go)
    assert ns == [ns[0], ns[0] + 1, ns[0] + 2]
    for n, word in zip(ns, "abc"):
        assert read_bytes(s / "runs" / str(n) / "stdout") == f"{word}\n".encode()


def test_write_with_an_unread_number_is_ebusy(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"true")
            part = os.read(fd, 1)
            try:
                os.write(fd, b"echo no")
                return part, 0
            except OSError as e:
                return part, e.errno
        finally:
            try:
                os.close(fd)
            except OSError as e:  # a failed write may fail the close too: nothing was lost
                assert e.errno == errno.EBUSY

    part, err = bounded(go)
    assert err == errno.EBUSY
    assert part == b"1"  # the first byte of "1\n"
    assert read_bytes(s / "exit") == b"0\n"
    assert os.listdir(s / "runs") == ["1"]


def test_handle_read_without_a_write_reads_the_latest_command(sbx):
    s = sbx.new_session()
    write_bytes(s / "cmd", b"echo latest")
    read_bytes(s / "exit")

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            return os.read(fd, 64)
        finally:
            os.close(fd)

    assert bounded(go) == b"echo latest"


def test_handle_submit_error_comes_from_read(sbx):
    s = sbx.new_session()

    def go():
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"true")
            os.rmdir(s)
            try:
                os.read(fd, 64)
                return 0
            except OSError as e:
                return e.errno
        finally:
            os.close(fd)

    assert bounded(go) == errno.ENOENT


def test_two_threads_one_session_no_mixups(sbx):
    s = sbx.new_session()
    runs = 1000
    errors = []

    def worker(tag):
        fd = os.open(s / "cmd", os.O_RDWR)
        try:
            for i in range(runs):
                os.write(fd, f"echo {tag}-{i}".encode())
                n = int(os.read(fd, 64))
                assert os.read(fd, 64) == b""
                out = read_bytes(s / "runs" / str(n) / "stdout")
                if out != f"{tag}-{i}\n".encode():
                    errors.append((tag, i, n, out))
        finally:
            os.close(fd)

    threads = [threading.Thread(target=worker, args=(t,)) for t in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_procs_cmd_handle(sbx):
    s = sbx.new_session()
    os.mkdir(s / "procs" / "srv")

    def go():
        fd = os.open(s / "procs" / "srv" / "cmd", os.O_RDWR)
        try:
            os.write(fd, b"echo started")
            return os.read(fd, 64)
        finally:
            os.close(fd)

    assert bounded(go) == b"1\n"
    assert read_bytes(s / "procs" / "srv" / "stdout") == b"started\n"


# --- result ------------------------------------------------------------------------------------


def result_of(s, n=None, timeout=30):
    path = Path(s) / ("result" if n is None else f"runs/{n}/result")
    raw = read_bytes(path, timeout=timeout)
    r = subprocess.run(["python3", "-m", "json.tool"], input=raw, capture_output=True)
    assert r.returncode == 0, (raw[:200], r.stderr)
    return json.loads(raw)


def status_of(s, n):
    text = read_bytes(Path(s) / "runs" / str(n) / "status").decode()
    return dict(line.split(" ", 1) for line in text.splitlines())


RESULT_KEYS = {"success", "exitCode", "stdout", "stderr", "command", "duration", "timestamp",
               "sessionId", "run", "signal", "timedOut", "truncated", "error",
               "stdoutEncoding", "stderrEncoding", "commandEncoding",
               "stdoutTruncated", "stderrTruncated", "commandTruncated"}


def test_result_matches_the_files(sbx):
    s = sbx.new_session()
    cmd = 'printf \'out "q" \\\\ \\t\\001\\342\\200\\250 \\303\\251\\n\'; echo err >&2; exit 3'
    n = bounded(handle_run, s, cmd)
    res = result_of(s, n)
    run = s / "runs" / str(n)
    assert set(res) == RESULT_KEYS
    assert res["stdout"].encode() == read_bytes(run / "stdout")
    assert res["stderr"].encode() == read_bytes(run / "stderr") == b"err\n"
    assert res["exitCode"] == int(read_bytes(run / "exit")) == 3
    assert res["success"] is False
    assert res["command"] == read_bytes(run / "cmd").decode() == cmd
    assert res["run"] == n
    assert res["sessionId"] == s.name
    assert res["signal"] is None and res["timedOut"] is False and res["truncated"] is False
    assert res["error"] is None
    assert res["stdoutEncoding"] == res["stderrEncoding"] == "utf-8"
    assert res["stdoutTruncated"] is False
    st = status_of(s, n)
    assert abs(res["duration"] - float(st["duration"]) * 1000) <= 2
    started = datetime.datetime.fromisoformat(res["timestamp"].replace("Z", "+00:00"))
    assert abs(started.timestamp() - float(st["started"])) < 0.002
    # the session's result is the latest run's
    assert result_of(s) == res


def test_result_success_and_raw_escapes(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "printf 'a\\342\\200\\250b\\n'")
    raw = read_bytes(s / "runs" / str(n) / "result")
    assert b"\\u2028" in raw and b"\xe2\x80\xa8" not in raw
    res = json.loads(raw)
    assert res["success"] is True and res["exitCode"] == 0
    assert res["stdout"] == "a\u2028b\n"


def test_result_non_utf8_is_base64(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "printf '\\377\\376ok\\300\\257'; printf 'fine' >&2")
    res = result_of(s, n)
    assert res["stdoutEncoding"] == "base64"
    assert base64.b64decode(res["stdout"]) == read_bytes(s / "runs" / str(n) / "stdout")
    assert res["stderrEncoding"] == "utf-8" and res["stderr"] == "fine"


def test_result_blocks_until_the_end(sbx):
    s = sbx.new_session()
    marker = f"res-{os.getpid()}"
    n = bounded(handle_run, s, f"echo early; until [ -e {sbx.cmd_ws}/{marker} ]; do sleep 0.01; "
                               "done; echo late")
    r = Background(read_bytes, s / "runs" / str(n) / "result")
    assert not r.wait(0.3), "result answered while the command runs"
    sbx.touch(marker)
    res = json.loads(r.result())
    assert res["stdout"] == "early\nlate\n"


def test_result_any_offset_and_buffer_size(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "seq 1 2000")
    whole = read_bytes(s / "runs" / str(n) / "result")

    def pieces():
        fd = os.open(s / "runs" / str(n) / "result", os.O_RDONLY)
        try:
            out = bytearray()
            for size in (1, 7, 4096, 3, 100000):
                out += os.pread(fd, size, len(out))
            while (b := os.pread(fd, 13, len(out))):
                out += b
            return bytes(out), os.pread(fd, 50, 10)
        finally:
            os.close(fd)

    got, mid = bounded(pieces)
    assert got == whole
    assert mid == whole[10:60]


def test_result_cut_past_one_mib(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "head -c 1100000 /dev/zero | tr '\\0' x; printf '\\342\\202\\254'")
    res = result_of(s, n)
    assert res["stdoutTruncated"] is True and res["truncated"] is False
    assert res["stdoutEncoding"] == "utf-8"
    assert res["stdout"] == "x" * (1 << 20)


def test_result_of_a_killed_command(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "sleep 30")
    wait_until(lambda: b"running" in read_bytes(s / "runs" / str(n) / "status"), 10, "start")
    write_bytes(s / "ctl", b"kill KILL\n", flags=os.O_WRONLY)
    res = result_of(s, n)
    assert res["signal"] == signal.SIGKILL
    assert res["exitCode"] == 128 + signal.SIGKILL and res["success"] is False


# --- output ------------------------------------------------------------------------------------


def test_output_interleaves_in_the_order_written(sbx):
    """Each write waits until the test has seen the one before in `output`, so the daemon read
    them in that order."""
    s = sbx.new_session()
    steps = [(f"out{i}\n" if i % 2 == 0 else f"err{i}\n") for i in range(8)]
    marks = [uniq("mark") for _ in steps]
    script = "; ".join(
        f"printf '{line[:-1]}\\n'{' >&2' if i % 2 else ''}; {wait_file_sh(marks[i], 20)}"
        for i, line in enumerate(steps))
    n = bounded(handle_run, s, script)
    fd = bounded(os.open, s / "runs" / str(n) / "output", os.O_RDONLY)
    try:
        got = b""
        for i, line in enumerate(steps):
            want = "".join(steps[:i + 1]).encode()
            while len(got) < len(want):
                chunk = bounded(os.read, fd, 4096)
                assert chunk, f"EOF before {line!r} (got {got!r})"
                got += chunk
            assert got == want
            sbx.touch(marks[i])
        assert bounded(os.read, fd, 4096) == b""
    finally:
        os.close(fd)
    run = s / "runs" / str(n)
    assert read_bytes(run / "output") == read_bytes(s / "output") == "".join(steps).encode()
    assert read_bytes(run / "stdout") == "".join(steps[0::2]).encode()
    assert read_bytes(run / "stderr") == "".join(steps[1::2]).encode()


def test_output_is_byte_exact(sbx):
    s = sbx.new_session()
    n = bounded(handle_run, s, "head -c 300000 /dev/urandom; printf '\\377\\0x' >&2")
    run = s / "runs" / str(n)
    out, err, both = (read_bytes(run / f) for f in ("stdout", "stderr", "output"))
    assert len(out) == 300000 and err == b"\xff\x00x"
    assert len(both) == len(out) + len(err)
    # the stderr chunk sits whole between (or after) stdout's chunks; random stdout may hold
    # the same three bytes too (about one run in 60), so every place is a candidate
    places = [i for i in range(len(both)) if both.startswith(err, i)]
    assert any(both[:i] + both[i + len(err):] == out for i in places), places
    assert os.stat(run / "output").st_size == len(both)


def test_output_follows_and_a_parked_reader_takes_ctrl_c(sbx):
    s = sbx.new_session()
    go = uniq("go")
    sbx.submit(s, f"echo first; echo warn >&2; {wait_file_sh(go)}; echo last")
    with cat_pipe(s / "output", lambda: sbx.touch(go)) as cat:
        assert read_pipe_until(cat.stdout, b"warn\n", 10) == b"first\nwarn\n"
        wait_until(lambda: proc_state(cat.pid) in ("S", "D"), 10, "cat to block")
        assert_sigint_ends(cat, "cat on output")
    assert sbx.exit_status(s) == 0
    assert read_bytes(s / "output") == b"first\nwarn\nlast\n"


def test_output_poll_and_tail_f(sbx):
    s = sbx.new_session()
    go, go2 = uniq("go"), uniq("go")
    sbx.submit(s, f"echo one >&2; {wait_file_sh(go)}; echo two; {wait_file_sh(go2)}")
    fd = bounded(os.open, s / "output", os.O_RDONLY)
    tail = subprocess.Popen(["tail", "-f", str(s / "output")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        assert bounded(os.read, fd, 100) == b"one\n"
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert p.poll(200) == []
        sbx.touch(go)
        events = bounded(p.poll, 10000, timeout=15)
        assert events and events[0][1] & select.POLLIN
        assert bounded(os.read, fd, 100) == b"two\n"
        assert read_pipe_until(tail.stdout, b"two\n", 10) == b"one\ntwo\n"
    finally:
        os.close(fd)
        sbx.touch(go)
        sbx.touch(go2)
        tail.kill()
        tail.wait(timeout=10)
        tail.stdout.close()


def make_repo(sbx):
    """A one-commit git repository in a fresh directory of the workspace (where checkouts may
    read by default); returns the directory and the repository's path as commands see it."""
    name = uniq("handle-repo")
    base = sbx.ws / name
    base.mkdir()
    repo = base / "repo"
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_GLOBAL="/dev/null")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    (repo / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "add", "f"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "c"], check=True, env=env)
    os.chmod(base, 0o755)  # the sandbox's user reads it
    return base, f"{sbx.cmd_ws}/{name}/repo"


def test_checkout_handle_returns_the_checkout_number(sbx):
    base, repo = make_repo(sbx)
    s = sbx.new_session()

    def go(rel):
        fd = os.open(s / "checkout", os.O_RDWR)
        try:
            os.write(fd, f"file://{repo} dir={rel}\n".encode())
            return os.read(fd, 64), os.read(fd, 64)
        finally:
            os.close(fd)

    try:
        assert bounded(go, uniq("co")) == (b"1\n", b"")
        assert bounded(go, uniq("co")) == (b"2\n", b"")
        assert read_bytes(s / "checkout", timeout=60).splitlines()[-1].startswith(b"ok ")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_checkout_handle_opens_while_the_last_checkout_waits(sbx):
    """A checkout queued behind a command has no output yet: a writer's open does not wait."""
    base, repo = make_repo(sbx)
    s = sbx.new_session()
    go = uniq("go")
    try:
        sbx.submit(s, wait_file_sh(go))
        write_bytes(s / "checkout", f"file://{repo} dir={uniq('co')}\n".encode())
        fd = bounded(os.open, s / "checkout", os.O_RDWR, timeout=5)
        try:
            os.write(fd, f"file://{repo} dir={uniq('co')}\n".encode())
            assert bounded(os.read, fd, 64) == b"2\n"
        finally:
            os.close(fd)
        sbx.touch(go)
        assert read_bytes(s / "checkout", timeout=60).splitlines()[-1].startswith(b"ok ")
    finally:
        sbx.touch(go)
        shutil.rmtree(base, ignore_errors=True)


def test_result_reader_takes_ctrl_c(sbx):
    s = sbx.new_session()
    go = uniq("go")
    n = bounded(handle_run, s, f"echo first; {wait_file_sh(go)}; echo last")
    with cat_pipe(s / "runs" / str(n) / "result", lambda: sbx.touch(go)) as cat:
        wait_until(lambda: proc_state(cat.pid) in ("S", "D"), 10, "cat to block")
        assert_sigint_ends(cat, "cat on result")
    assert result_of(s, n)["stdout"] == "first\nlast\n"
