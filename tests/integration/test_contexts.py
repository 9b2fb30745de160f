"""Code interpreter contexts through contexts/: Python cells with state, rich results, streamed
output, errors, timeout, interrupt, kill, a driver that dies or lies, and the limits."""

import base64
import errno
import json
import os
import select
import shutil
import struct
import tempfile
import time

import pytest

from sbxutil import (Background, ConfMount, SbxMount, errno_of, isolation_none, put_script,
                     read_bytes, sbxfs_binary, uniq, wait_until, write_bytes, write_errno)

pytest.importorskip("IPython", reason="python3-ipython is not installed (scripts/bootstrap)")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CELL_TIMEOUT = 60


def make(sbx, name):
    path = sbx.mnt / "contexts" / name
    if not path.exists():
        os.mkdir(path)
    return path


def submit(ctx, code):
    """The run handle: open read-write, write the cell, read back its number."""
    fd = os.open(ctx / "code", os.O_RDWR)
    try:
        os.write(fd, code.encode() if isinstance(code, str) else code)
        n = int(os.read(fd, 32).decode())
    finally:
        os.close(fd)
    return n


def result(ctx, n):
    """Blocks until cell n ended; its result JSON."""
    return json.loads(read_bytes(ctx / "cells" / str(n) / "result", timeout=CELL_TIMEOUT))


def run(ctx, code):
    return result(ctx, submit(ctx, code))


def state(ctx, n):
    lines = dict(l.split(" ", 1) for l in (ctx / "cells" / str(n) / "status").read_text()
                 .splitlines())
    return lines["state"]


def texts(res):
    return [r.get("text") for r in res["results"]]


def wait_file(sbx, name):
    """Cell code that waits for the test to create workspace/NAME (an event, not a sleep)."""
    path = os.path.join(sbx.cmd_ws, name)
    return (f"import os, time\nwhile not os.path.exists({path!r}):\n    time.sleep(0.01)\n")


@pytest.fixture(scope="module")
def py(sbx):
    """One Python context shared by the tests that do not end or break it."""
    return make(sbx, "shared")


def test_layout_and_defaults(sbx, py):
    assert "contexts" in os.listdir(sbx.mnt)
    assert "clone" in os.listdir(sbx.mnt / "contexts")
    assert sorted(os.listdir(py)) == ["cells", "code", "ctl", "cwd", "env", "error", "language",
                                      "result", "results", "status", "stderr", "stdout",
                                      "timeout"]
    assert (py / "language").read_text() == "python\n"
    assert (py / "cwd").read_text() == sbx.cmd_ws + "\n"
    assert (py / "timeout").read_text() == "0\n"
    assert "PATH=" in (py / "env").read_text()


def test_clone_gives_a_new_context(sbx):
    name = (sbx.mnt / "contexts" / "clone").read_text().strip()
    assert name and (sbx.mnt / "contexts" / name).is_dir()
    os.rmdir(sbx.mnt / "contexts" / name)
    assert not (sbx.mnt / "contexts" / name).exists()


def test_state_is_kept_and_the_last_expression_is_the_result(py):
    n = submit(py, "x = 40\ndef f(y):\n    return y + 2\n")
    assert result(py, n)["results"] == []
    res = run(py, "print('hello')\nf(x)")
    assert res["results"] == [{"text": "42", "isMainResult": True}]
    assert res["logs"] == {"stdout": ["hello\n"], "stderr": []}
    assert res["error"] is None and res["status"] == "done"
    n = res["executionCount"]
    assert (py / "cells" / str(n) / "code").read_text() == "print('hello')\nf(x)"
    assert (py / "cells" / str(n) / "stdout").read_bytes() == b"hello\n"
    # The latest cell's files show at the top level too.
    assert (py / "stdout").read_bytes() == b"hello\n"
    assert json.loads((py / "result").read_text()) == res
    assert (py / "results" / "0.txt").read_text() == "42"
    assert state(py, n) == "done"
    assert (py / "error").read_text() == ""
    res = run(py, "import asyncio\nawait asyncio.sleep(0)\n'awaited'")
    assert res["results"][0]["text"] == "'awaited'"


def test_several_displays_in_one_cell(py):
    res = run(py, "from IPython.display import display, HTML, Markdown\n"
                  "display(1)\ndisplay(HTML('<b>b</b>'))\ndisplay(Markdown('*m*'))\n'last'")
    assert texts(res) == ["1", "<IPython.core.display.HTML object>",
                          "<IPython.core.display.Markdown object>", "'last'"]
    assert res["results"][1]["html"] == "<b>b</b>"
    assert res["results"][2]["markdown"] == "*m*"
    assert [r["isMainResult"] for r in res["results"]] == [False, False, False, True]
    n = res["executionCount"]
    names = sorted(os.listdir(py / "cells" / str(n) / "results"))
    assert names == ["0.txt", "1.html", "1.txt", "2.md", "2.txt", "3.txt"]
    assert (py / "cells" / str(n) / "results" / "1.html").read_text() == "<b>b</b>"


def test_a_plot_is_a_png_file(py):
    res = run(py, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nNone")
    assert len(res["results"]) == 1 and "png" in res["results"][0]
    png = (py / "results" / "0.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", png[16:24])
    assert width > 100 and height > 100
    assert base64.b64decode(res["results"][0]["png"]) == png
    assert os.stat(py / "results" / "0.png").st_size == len(png)


def test_a_dataframe_is_an_html_table(py):
    pytest.importorskip("pandas", reason="python3-pandas is not installed")
    res = run(py, "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})")
    assert "<table" in res["results"][0]["html"]
    assert "<table" in (py / "results" / "0.html").read_text()
    assert "a  b" in (py / "results" / "0.txt").read_text()


def test_a_cell_starts_and_ends_in_the_journal(sbx, py):
    start = os.stat(sbx.mnt / "journal").st_size
    n = submit(py, "print('journaled')\n")
    assert result(py, n)["status"] == "done"
    evs = [json.loads(line) for line in read_bytes(sbx.mnt / "journal")[start:].splitlines()]
    mine = [e for e in evs if e["kind"].startswith("cell.") and e.get("context") == "shared"
            and e["run"] == n]
    assert [e["kind"] for e in mine] == ["cell.start", "cell.end"], mine
    assert mine[0]["cmd"] == "print('journaled')\n"
    assert mine[1]["exit"] == 0 and mine[1]["reason"] == "exit" and mine[1]["stdout_bytes"] == 10


def test_stdout_streams_while_the_cell_runs(sbx, py):
    flag = "ctx-stream-flag"
    code = "print('first line')\n" + wait_file(sbx, flag) + "print('second')\n"
    n = submit(py, code)
    with open(py / "cells" / str(n) / "stdout", "rb") as f:
        assert f.readline() == b"first line\n"
        assert state(py, n) == "running"
        (sbx.ws / flag).touch()
        assert f.read() == b"second\n"  # then EOF at the cell's end
    assert result(py, n)["status"] == "done"


def test_poll_on_stdout_wakes_when_output_arrives(sbx, py):
    n = submit(py, "print('a', flush=True)\n" + wait_file(sbx, "poll-flag") + "print('b')\n")
    fd = os.open(py / "cells" / str(n) / "stdout", os.O_RDONLY)
    try:
        wait_until(lambda: select.select([fd], [], [], 0)[0], 30, "the first line")
        assert os.read(fd, 100) == b"a\n"
        assert select.select([fd], [], [], 0.2)[0] == []  # at the end while the cell runs
        (sbx.ws / "poll-flag").touch()
        assert select.select([fd], [], [], 30)[0] == [fd]
        assert os.read(fd, 100) == b"b\n"
    finally:
        os.close(fd)
    assert result(py, n)["status"] == "done"


def test_an_error_has_its_traceback_and_line_numbers(py):
    res = run(py, "a = 1\n\ndef g():\n    return 1 / 0\ng()\n")
    assert res["error"]["name"] == "ZeroDivisionError"
    assert res["error"]["value"] == "division by zero"
    tb = "\n".join(res["error"]["traceback"])
    assert "----> 5 g()" in tb and "----> 4     return 1 / 0" in tb
    n = res["executionCount"]
    assert state(py, n) == "error"
    lines = (py / "cells" / str(n) / "error").read_text().splitlines()
    assert lines[:2] == ["ZeroDivisionError", "division by zero"]
    assert any("----> 5 g()" in l for l in lines)
    assert "\x1b[" not in tb


def test_timeout_interrupts_and_the_context_survives(sbx, py):
    run(py, "kept = 'yes'")
    write_bytes(py / "ctl", "timeout 300\n")
    try:
        t0 = time.monotonic()
        res = run(py, "import time\nwhile True:\n    time.sleep(0.01)\n")
        assert time.monotonic() - t0 < 20
    finally:
        write_bytes(py / "ctl", "timeout 0\n")
    assert res["status"] == "timeout"
    assert res["error"]["name"] == "KeyboardInterrupt"
    assert run(py, "kept")["results"][0]["text"] == "'yes'"
    assert (py / "timeout").read_text() == "0\n"


def test_a_cell_that_ignores_its_timeout_loses_its_interpreter(sbx):
    ctx = make(sbx, "stubborn")
    run(ctx, "lost = 1")
    write_bytes(ctx / "timeout", "200\n")
    t0 = time.monotonic()
    res = run(ctx, "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n"
                   "    except KeyboardInterrupt:\n        pass\n")
    # SIGINT at 200 ms, the interpreter killed a kill grace (2 s) later.
    assert 2 < time.monotonic() - t0 < 30
    assert res["status"] == "timeout" and res["error"]["name"] == "TimeoutError"
    write_bytes(ctx / "timeout", "0\n")
    assert run(ctx, "'lost' in dir()")["results"][0]["text"] == "False"
    os.rmdir(ctx)


def test_interrupt_keeps_the_context(sbx, py):
    run(py, "survivor = 7")
    n = submit(py, "print('in', flush=True)\nimport time\nwhile True:\n    time.sleep(0.01)\n")
    with open(py / "cells" / str(n) / "stdout", "rb") as f:
        assert f.readline() == b"in\n"
    write_bytes(py / "ctl", "interrupt\n")
    res = result(py, n)
    assert res["status"] == "interrupted"
    assert res["error"]["name"] == "KeyboardInterrupt"
    assert run(py, "survivor")["results"][0]["text"] == "7"
    # Nothing runs now: an interrupt has nothing to hit.
    assert write_errno(py / "ctl", "interrupt\n", at_close=True) == errno.ESRCH


def test_kill_gives_a_fresh_interpreter(sbx):
    ctx = make(sbx, "killme")
    run(ctx, "lost = 1")
    n = submit(ctx, "print('in', flush=True)\nimport time\ntime.sleep(600)\n")
    with open(ctx / "cells" / str(n) / "stdout", "rb") as f:
        assert f.readline() == b"in\n"
    write_bytes(ctx / "ctl", "kill\n")
    res = result(ctx, n)
    assert res["status"] == "killed" and res["error"]["name"] == "Killed"
    res = run(ctx, "lost")
    assert res["error"]["name"] == "NameError"
    assert "starts 2\n" in (ctx / "status").read_text()
    write_bytes(ctx / "ctl", "restart\n")
    wait_until(lambda: "starts 3\n" in (ctx / "status").read_text(), 30, "a restarted driver")
    assert run(ctx, "2 * 3")["results"][0]["text"] == "6"
    os.rmdir(ctx)


def test_a_kill_while_the_interpreter_starts_is_never_lost(sbx):
    """The kill comes while the driver is being started, before it is in its cgroup: it
    must land (a lost one left the context waiting for ever on a driver it had given up),
    and the cell, still queued, runs on a fresh interpreter."""
    for i in range(3):
        ctx = make(sbx, f"killearly{i}")
        n = submit(ctx, "6 * 7")
        write_bytes(ctx / "ctl", "kill\n")
        res = json.loads(read_bytes(ctx / "cells" / str(n) / "result", timeout=20))
        assert res["status"] in ("done", "killed"), res
        assert run(ctx, "6 * 7")["results"][0]["text"] == "42"
        os.rmdir(ctx)


def test_a_cell_that_kills_its_interpreter_errs_and_the_next_is_fresh(sbx):
    ctx = make(sbx, "exits")
    run(ctx, "gone = 1")
    res = run(ctx, "import os\nprint('bye', flush=True)\nos._exit(3)")
    assert res["status"] == "error"
    assert res["error"]["name"] == "InterpreterDied"
    assert "exited with status 3" in res["error"]["value"]
    assert res["logs"]["stdout"] == ["bye\n"]
    assert run(ctx, "'gone' in dir()")["results"][0]["text"] == "False"
    res = run(ctx, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert res["status"] == "error" and "signal 11" in res["error"]["value"]
    assert run(ctx, "1 + 1")["results"][0]["text"] == "2"
    os.rmdir(ctx)


def test_two_contexts_run_in_parallel(sbx):
    a, b = make(sbx, "par-a"), make(sbx, "par-b")
    # a waits for what b does: were they run one after the other, a would never end.
    na = submit(a, wait_file(sbx, "par-flag") + "'a done'")
    nb = submit(b, f"open({os.path.join(sbx.cmd_ws, 'par-flag')!r}, 'w').close()\n'b done'")
    assert result(b, nb)["results"][0]["text"] == "'b done'"
    assert result(a, na)["results"][0]["text"] == "'a done'"
    os.rmdir(a)
    os.rmdir(b)


def test_non_utf8_and_huge_output(py):
    res = run(py, "import sys\nsys.stdout.flush()\nsys.stdout.buffer.write(b'a\\xff\\xfeb\\n')\n"
                  "sys.stdout.buffer.flush()")
    n = res["executionCount"]
    assert (py / "cells" / str(n) / "stdout").read_bytes() == b"a\xff\xfeb\n"
    assert res["logs"]["stdout"] == ["a\ufffd\ufffdb\n"]
    size = 12 << 20
    res = run(py, f"import sys\nsys.stdout.buffer.write(b'x' * {size})\nsys.stdout.buffer.flush()"
                  "\nNone")
    n = res["executionCount"]
    assert os.stat(py / "cells" / str(n) / "stdout").st_size == size
    assert read_bytes(py / "cells" / str(n) / "stdout") == b"x" * size
    assert len(res["logs"]["stdout"][0]) == 1 << 20  # the JSON embeds the first MiB


FAKE_FRAME = json.dumps({"ev": "result", "data": {"text/plain": "forged"}, "main": True})


def test_a_displayed_json_value_is_written_again(py):
    """application/json's value reaches the result as JSON the daemon wrote: compact, its own
    escapes, numbers of any size as they were."""
    res = run(py, "from IPython.display import display\n"
                  "display({'application/json': {'n': 10**30, 'x': 1.5e300, 's': 'a\\u2028\\x7f',"
                  " 'l': [True, None]}}, raw=True)")
    assert res["results"] == [{"json": {"n": 10**30, "x": 1.5e300, "s": "a\u2028\x7f",
                                        "l": [True, None]}, "isMainResult": False}]
    n = res["executionCount"]
    text = (py / "cells" / str(n) / "results" / "0.json").read_text()
    assert text == ('{"n":1000000000000000000000000000000,"x":1.5e+300,"s":"a\\u2028\\u007f",'
                    '"l":[true,null]}')


def test_printed_frames_are_only_output(py):
    frame = struct.pack(">I", len(FAKE_FRAME)) + FAKE_FRAME.encode()
    done = struct.pack(">I", 13) + b'{"ev":"done"}'
    res = run(py, f"import sys, os\nos.write(1, {frame + done!r})\nos.write(2, {frame!r})\n"
                  "print('<-', flush=True)\n'real'")
    assert res["results"] == [{"text": "'real'", "isMainResult": True}]
    assert res["status"] == "done"


# A cell that finds the driver's own event descriptor and writes to it: it can only hurt its
# own context, and a frame that breaks the protocol costs it its interpreter.
FIND_CHANNEL = ("import gc\nchan = [o for o in gc.get_objects() "
                "if type(o).__name__ == 'Channel'][0]\nimport os, struct\n")


@pytest.mark.parametrize("payload,why", [
    ("struct.pack('>I', 0x7fffffff)", "over the size limit"),
    ("struct.pack('>I', 5) + b'{nope'", "malformed"),
    ("struct.pack('>I', 2) + b'{}'", "malformed"),
    ("struct.pack('>I', 14) + b'{\"ev\":\"ready\"}'", "a second ready"),
    # Not RFC 8259's number: refused, never spliced into the cell's result.
    ("(lambda b: struct.pack('>I', len(b)) + b)(b'{\"ev\":\"result\",\"data\":"
     "{\"application/json\":01e+-5}}')", "malformed"),
])
def test_a_forged_bad_frame_kills_only_its_own_interpreter(sbx, py, payload, why):
    run(py, "other = 'intact'")
    ctx = make(sbx, "forger")
    res = run(ctx, FIND_CHANNEL + f"os.write(chan.wfd, {payload})\nimport time\n"
                  "time.sleep(30)\n")
    assert res["status"] == "error"
    assert res["error"]["name"] == "ProtocolError" and why in res["error"]["value"]
    assert run(ctx, "1")["results"][0]["text"] == "1"
    assert run(py, "other")["results"][0]["text"] == "'intact'"
    os.rmdir(ctx)


def test_a_forged_result_stays_in_its_own_cell(sbx):
    ctx = make(sbx, "forger2")
    res = run(ctx, FIND_CHANNEL + "chan.send({'ev': 'result', 'data': {'text/plain': 'f'}, "
                  "'main': False})\n'real'")
    assert texts(res) == ["f", "'real'"]
    os.rmdir(ctx)


# Run in a session: finds every context driver of the sandbox (its command line names the script
# on fd 5) and tries each way a process of the same user has to reach another one's descriptors
# or memory, writing a forged result frame wherever a descriptor is got. One "what errno" line
# per try, with "ok" for a success; then "found PIDS".
REACH_DRIVERS_PY = r"""
import ctypes, errno, json, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_process_vm_readv, SYS_pidfd_getfd = 310, 438
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
body = json.dumps({"ev": "result", "data": {"text/plain": "forged"}, "main": True}).encode()
frame = struct.pack(">I", len(body)) + body

def report(what, fn):
    try:
        r = fn()
        print(what, errno.errorcode[ctypes.get_errno()] if isinstance(r, int) and r < 0 else "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])

def forge(fd):
    try:
        os.write(fd, frame)
    finally:
        os.close(fd)

def through_proc(pid, n):
    forge(os.open(f"/proc/{pid}/fd/{n}", os.O_WRONLY | os.O_NONBLOCK))

def through_pidfd(pid, n):
    pidfd = os.pidfd_open(pid)
    try:
        fd = libc.syscall(SYS_pidfd_getfd, pidfd, n, 0)
        if fd < 0:
            return fd
        forge(fd)
    finally:
        os.close(pidfd)

def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""

drivers = [int(p) for p in os.listdir("/proc") if p.isdigit()
           and b"/proc/self/fd/5" in cmdline(p) and int(p) != os.getpid()]
buf = ctypes.create_string_buffer(64)
iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
for pid in drivers:
    report("listdir fd", lambda: os.listdir(f"/proc/{pid}/fd"))
    for n in range(16):
        report(f"open fd/{n}", lambda: through_proc(pid, n))
        report(f"pidfd_getfd {n}", lambda: through_pidfd(pid, n))
    report("mem", lambda: os.open(f"/proc/{pid}/mem", os.O_RDWR))
    report("environ", lambda: os.open(f"/proc/{pid}/environ", os.O_RDONLY))
    report("ptrace attach", lambda: libc.ptrace(PTRACE_ATTACH, pid, 0, 0))
    report("ptrace seize", lambda: libc.ptrace(PTRACE_SEIZE, pid, 0, 0))
    report("process_vm_readv", lambda: libc.syscall(*map(ctypes.c_long, (
        SYS_process_vm_readv, pid, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0))))
print("found", *drivers)
"""


def driver_pid(ctx):
    return int(dict(l.split(" ", 1) for l in (ctx / "status").read_text().splitlines())["pid"])


@pytest.mark.parametrize("lang", ["python", "javascript"])
def test_a_session_cannot_reach_a_context_driver(sbx, lang):
    """A command of a session finds a context's driver and tries its descriptors (/proc/PID/fd,
    pidfd_getfd), memory and ptrace while a cell runs: each is refused, and the cell's result
    is its own. The driver is never dumpable, so every one of them is closed to its user."""
    if isolation_none():
        pytest.skip("--isolation none: commands run as the daemon's user (root reaches anything)")
    if lang == "javascript" and not js_available():
        pytest.skip("sbxfs-jsdriver is not next to the binary, or node is not installed")
    ctx = make(sbx, "victim-" + lang)
    write_bytes(ctx / "language", lang + "\n")
    go = "go-" + lang
    if lang == "python":
        n = submit(ctx, wait_file(sbx, go) + "'real'")
    else:
        path = os.path.join(sbx.cmd_ws, go)
        n = submit(ctx, f"const fs = require('fs');\nwhile (!fs.existsSync({path!r})) "
                        "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);\n"
                        "'real'")
    wait_until(lambda: state(ctx, n) == "running", 30, "the cell to run")
    s = sbx.new_session()
    out, err, code = sbx.run(s, f"python3 {put_script(sbx, REACH_DRIVERS_PY)}", timeout=60)
    out = out.decode()
    assert code == 0, (out, err)
    assert driver_pid(ctx) in [int(p) for p in out.splitlines()[-1].split()[1:]], out
    got = {}
    for line in out.splitlines()[:-1]:
        what, outcome = line.rsplit(" ", 1)
        got.setdefault(what.split()[0], set()).add(outcome)
    assert got == {"listdir": {"EACCES"}, "open": {"EACCES"}, "pidfd_getfd": {"EPERM"},
                   "mem": {"EACCES"}, "environ": {"EACCES"}, "ptrace": {"EPERM"},
                   "process_vm_readv": {"EPERM"}}, out
    sbx.touch(go)
    res = result(ctx, n)
    assert res["status"] == "done" and texts(res) == ["'real'"], res
    # Run through its loader, the interpreter still knows its own path (and is not dumpable).
    if lang == "python":
        probe, want = ("import ctypes, sys\n(sys.executable, ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))",
                       "('/usr/bin/python3', 0)")
    else:
        probe, want = "[process.execPath, process.argv[0]].join()", "'/usr/bin/node,/usr/bin/node'"
    assert texts(run(ctx, probe)) == [want]
    os.rmdir(ctx)


# Run in a session while contexts start: opens /proc/PID/mem of the newest processes of the
# sandbox as fast as it can until the file STOP appears; prints how many drivers it opened.
SPIN_PY = r"""
import os, sys
stop, hits = sys.argv[1], set()
while not os.path.exists(stop):
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    for pid in range(last - 16, last + 1):
        try:
            os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))
            if b"/proc/self/fd/5" in open(f"/proc/{pid}/cmdline", "rb").read():
                hits.add(pid)
        except OSError:
            pass
print(len(hits))
"""


def test_a_driver_is_not_dumpable_from_its_start(sbx):
    """An interpreter made undumpable by itself once started would be open to the sandbox's
    user for a moment at each start; a command spinning on the newest pids meanwhile gets
    nothing of three restarts."""
    if isolation_none():
        pytest.skip("--isolation none: commands run as the daemon's user (root reaches anything)")
    ctx = make(sbx, "restarts")
    assert run(ctx, "1")["results"][0]["text"] == "1"
    s = sbx.new_session()
    stop = uniq("stop")
    spinner = Background(sbx.run, s, f"python3 {put_script(sbx, SPIN_PY)} "
                                     f"{os.path.join(sbx.cmd_ws, stop)}", timeout=120)
    for i in range(3):
        write_bytes(ctx / "ctl", "restart\n")
        assert run(ctx, f"{i} + 1")["results"][0]["text"] == str(i + 1)
    sbx.touch(stop)
    out, err, code = spinner.result(timeout=60)
    assert code == 0 and out == b"0\n", (out, err)
    os.rmdir(ctx)


def test_bad_writes_fail_with_precise_errnos(sbx):
    ctx = make(sbx, "abuse")
    assert write_errno(ctx / "language", "cobol\n") == errno.EINVAL
    assert write_errno(ctx / "cwd", "relative/dir\n") == errno.EINVAL
    assert write_errno(ctx / "env", "not a line\n") == errno.EINVAL
    assert write_errno(ctx / "env", "A=" + "x" * (200 << 10) + "\n") == errno.EFBIG
    assert write_errno(ctx / "timeout", "soon\n") == errno.EINVAL
    assert write_errno(ctx / "timeout", "-5\n") == errno.EINVAL
    assert write_errno(ctx / "ctl", "explode\n") == errno.EINVAL
    assert write_errno(ctx / "ctl", "kill\n", at_close=True) == errno.ESRCH
    assert write_errno(ctx / "code", b"a\0b") == errno.EINVAL
    assert write_errno(ctx / "code", b"\xff\xfe", at_close=True) == errno.EILSEQ
    assert errno_of(os.mkdir, sbx.mnt / "contexts" / "bad name") == errno.EINVAL
    assert errno_of(os.mkdir, ctx) == errno.EEXIST
    # Before the first cell they apply.
    write_bytes(ctx / "env", "GREETING=hi\n")
    write_bytes(ctx / "cwd", "/tmp\n")
    write_bytes(ctx / "timeout", "60000\n")
    res = run(ctx, "import os\n(os.environ['GREETING'], os.getcwd())")
    assert res["results"][0]["text"] == "('hi', '/tmp')"
    # After it, language, cwd and env are fixed; timeout is not.
    assert write_errno(ctx / "language", "python\n") == errno.EBUSY
    assert write_errno(ctx / "cwd", "/\n") == errno.EBUSY
    assert write_errno(ctx / "env", "B=1\n") == errno.EBUSY
    write_bytes(ctx / "timeout", "0\n")
    assert errno_of(os.open, ctx / "cells" / "1" / "code", os.O_WRONLY) == errno.EACCES
    assert errno_of(os.open, ctx / "status", os.O_WRONLY) == errno.EACCES
    os.rmdir(ctx)


class DriverlessMount(SbxMount):
    """A mount from a copy of the binary and its launcher with only the Python driver beside."""

    def __init__(self, tmp):
        super().__init__(tmp)
        self.bin_dir = self.tmp / "bin"
        self.bin_dir.mkdir()
        here = os.path.dirname(sbxfs_binary())
        for name in ("sbxfs", "sbxfs-launcher", "sbxfs-pydriver"):
            shutil.copy2(os.path.join(here, name), self.bin_dir / name)

    def command_line(self):
        return [str(self.bin_dir / "sbxfs"), *super().command_line()[1:]]


def test_a_missing_driver_is_enoent():
    if any(os.path.exists(os.path.join(d, "sbxfs-jsdriver"))
           for d in ("/usr/local/libexec", "/usr/libexec")):
        pytest.skip("sbxfs-jsdriver is installed in libexec: nothing is missing")
    m = DriverlessMount(tempfile.mkdtemp(prefix="sbxfs-it-nojs-"))
    try:
        m.start(timeout=10)
        ctx = make(m, "nojs")
        assert write_errno(ctx / "language", "javascript\n") == errno.ENOENT
        assert write_errno(ctx / "language", "typescript\n") == errno.ENOENT
        assert (ctx / "language").read_text() == "python\n"
        assert run(ctx, "1 + 1")["results"][0]["text"] == "2"
    finally:
        m.discard()


def test_rmdir_of_a_busy_context_ends_it(sbx):
    ctx = make(sbx, "busy")
    n = submit(ctx, "print('on', flush=True)\nimport time\ntime.sleep(600)\n")
    queued = submit(ctx, "1")
    out = open(ctx / "cells" / str(n) / "stdout", "rb")
    res_fd = open(ctx / "cells" / str(queued) / "result", "rb")
    try:
        assert out.readline() == b"on\n"
        reader = Background(out.read, what="a reader parked on stdout")
        os.rmdir(ctx)
        assert reader.result(timeout=CELL_TIMEOUT) == b""
        assert json.loads(res_fd.read())["status"] == "killed"
    finally:
        out.close()
        res_fd.close()
    assert not ctx.exists()
    assert errno_of(os.rmdir, ctx) == errno.ENOENT


def test_the_queue_is_bounded_and_runs_in_order(sbx):
    ctx = make(sbx, "queue")
    first = submit(ctx, wait_file(sbx, "queue-flag") + "order = []")
    wait_until(lambda: state(ctx, first) == "running", 30, "the first cell to run")
    ns = [submit(ctx, f"order.append({i})") for i in range(16)]
    assert write_errno(ctx / "code", "1", at_close=True) == errno.EAGAIN
    (sbx.ws / "queue-flag").touch()
    assert result(ctx, first)["status"] == "done"
    assert [result(ctx, n)["status"] for n in ns] == ["done"] * 16
    assert run(ctx, "order")["results"][0]["text"] == str(list(range(16)))
    os.rmdir(ctx)


def test_contexts_are_bounded(sbx):
    base = len(os.listdir(sbx.mnt / "contexts")) - 1
    made = []
    try:
        for i in range(16 - base):
            os.mkdir(sbx.mnt / "contexts" / f"many{i}")
            made.append(i)
        assert errno_of(os.mkdir, sbx.mnt / "contexts" / "one-too-many") == errno.ENOSPC
        assert errno_of(read_bytes, sbx.mnt / "contexts" / "clone") == errno.ENOSPC
    finally:
        for i in made:
            os.rmdir(sbx.mnt / "contexts" / f"many{i}")


def test_the_interpreter_runs_sandboxed_in_a_group_of_its_own(sbx, py):
    if isolation_none():
        pytest.skip("--isolation none: the driver runs as the daemon's user, unsandboxed")
    res = run(py, "import os, json\nprint(json.dumps([os.getuid(), os.getcwd(), "
                  "open('/proc/self/cgroup').read()]))")
    uid, cwd, cgroup = json.loads(res["logs"]["stdout"][0])
    assert uid != 0 and cwd == "/workspace"
    s = sbx.new_session()
    out, _, code = sbx.run(s, "cat /proc/self/cgroup")
    assert code == 0
    # Not a session's group: killing a session's tree never reaches a context, nor back.
    assert cgroup != out.decode()


OOM_CONFIG = """[sandbox]
memory_max = 512M
memory_reserve = 256M
tmp_size = 64M
shm_size = 32M
"""


def test_a_cell_that_runs_out_of_memory_gets_a_fresh_interpreter():
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-ctxoom-"), OOM_CONFIG)
    try:
        m.start(timeout=10)
        if "memory_max" not in (m.mnt / "limits").read_text():
            pytest.skip("no memory cgroup for the sandbox: nothing to limit")
        ctx = make(m, "hog")
        res = run(ctx, "b = []\nwhile True:\n    b.append(bytearray(16 << 20))\n")
        assert res["status"] == "error"
        assert res["error"]["name"] == "InterpreterDied"
        assert "out of memory" in res["error"]["value"]
        assert run(ctx, "'b' in dir()")["results"][0]["text"] == "False"
        assert "oom_kills 0\n" not in (ctx / "status").read_text()
    finally:
        m.discard()


def test_an_interpreter_that_cannot_start_says_why(sbx):
    ctx = make(sbx, "nostart")
    write_bytes(ctx / "env", "PYTHONHOME=/nowhere\nPYTHONHOME=/nonexistent\n")
    assert "PYTHONHOME=/nonexistent\n" in (ctx / "env").read_text()
    for code in ("1", "2"):  # each cell tries a fresh interpreter, and says why it failed
        res = run(ctx, code)
        assert res["status"] == "error" and res["error"]["name"] == "DriverError"
        assert "exited with status 1" in res["error"]["value"]
        assert "Python" in res["error"]["value"]  # what it wrote before dying
    assert "starts 2\n" in (ctx / "status").read_text()
    os.rmdir(ctx)


def js_available():
    driver = os.path.join(os.path.dirname(sbxfs_binary()), "sbxfs-jsdriver")
    return os.path.exists(driver) and shutil.which("node")


@pytest.mark.parametrize("lang", ["javascript", "typescript"])
def test_javascript_and_typescript_keep_state(sbx, lang):
    if not js_available():
        pytest.skip("sbxfs-jsdriver is not next to the binary, or node is not installed")
    if lang == "typescript" and not os.path.isdir("/usr/share/nodejs/typescript"):
        pytest.skip("node-typescript is not installed (scripts/bootstrap)")
    ctx = make(sbx, lang)
    write_bytes(ctx / "language", lang + "\n")
    typed = ": number" if lang == "typescript" else ""
    res = run(ctx, f"let x{typed} = 40;\nfunction f(y{typed}){typed} {{ return y + 2; }}\n"
                   "console.log('hi');\nf(x)")
    assert res["results"] == [{"text": "42", "isMainResult": True}], res
    assert res["logs"]["stdout"] == ["hi\n"]
    assert run(ctx, "x * 2")["results"][0]["text"] == "80"
    res = run(ctx, "\nthrow new Error('boom')")
    assert res["status"] == "error" and res["error"]["value"] == "boom"
    if lang == "typescript":
        # Types are not checked; a syntax error is an error and nothing runs.
        assert run(ctx, "const s: number = 'text'; s")["results"][0]["text"] == "'text'"
        res = run(ctx, "let = = 1;")
        assert res["error"]["name"] == "SyntaxError"
    n = submit(ctx, "console.log('in');\nwhile (true) {}")
    with open(ctx / "cells" / str(n) / "stdout", "rb") as f:
        assert f.readline() == b"in\n"
    write_bytes(ctx / "ctl", "interrupt\n")
    res = result(ctx, n)
    assert res["status"] == "interrupted" and res["error"]["name"] == "Interrupted"
    assert run(ctx, "x")["results"][0]["text"] == "40"
    assert (ctx / "language").read_text() == lang + "\n"
    os.rmdir(ctx)


def test_output_between_cells_cannot_hold_the_daemon(sbx):
    """A thread a cell left behind writes without end: between cells nobody reads it, the
    daemon drops it a bounded amount at a time and goes on answering."""
    ctx = make(sbx, "chatty")
    res = run(ctx, "import os, threading\ndef spam():\n    while True:\n"
                   "        os.write(1, b'x' * 65536)\n"
                   "threading.Thread(target=spam, daemon=True).start()\n")
    assert res["status"] == "done"
    s = sbx.new_session()
    for _ in range(3):
        out, _, code = sbx.run(s, "echo alive", timeout=30)
        assert (out, code) == (b"alive\n", 0)
    assert "driver idle" in (ctx / "status").read_text()
    write_bytes(ctx / "ctl", "kill\n")
    os.rmdir(ctx)


def test_displayed_values_are_bounded_per_cell_and_per_history(sbx):
    ctx = make(sbx, "bigvalues")
    code = ("from IPython.display import display\nbig = 'a' * (1 << 20)\n"
            "for i in range(34):\n    display(big)\n")
    ns = []
    for _ in range(3):
        res = run(ctx, code)
        assert res["status"] == "done" and res["resultsDropped"] is True
        assert 25 <= len(res["results"]) < 34  # 32 MiB of them
        ns.append(res["executionCount"])
        assert "results_dropped yes\n" in (ctx / "cells" / str(ns[-1]) / "status").read_text()
    # Three cells of 32 MiB pass the history's 64 MiB: the oldest left it.
    assert sorted(os.listdir(ctx / "cells")) == sorted(str(n) for n in ns[1:])
    os.rmdir(ctx)
