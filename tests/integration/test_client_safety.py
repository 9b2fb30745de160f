"""The clients are safe for the host (issue 23): nothing a sandboxed command writes is trusted,
followed or hung on by the Node and Python clients. Every abuse runs against both: Python's
client in-process, Node's through nodeclient.mjs. This mount's workspace/ follows links on the
host (host_symlinks = follow), so what keeps the host's files out of reach is the clients' own
walk, not the mount's nosymfollow. Canaries are host files outside the workspace (in /tmp)
that a call must neither read, change, create nor remove."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import REPO_ROOT, ConfMount, bounded, started, stopped_cleanly

sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

import sbxfs as sdk  # noqa: E402

pytestmark = pytest.mark.client

NODE_CALLS = Path(__file__).with_name("nodeclient.mjs")
# A read the clients must refuse at once, not after waiting on what the file is.
FAST = 5.0


@pytest.fixture(scope="module")
def mount():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-safe-"),
                          "[workspace]\nhost_symlinks = follow\n"))
    try:
        yield m
    finally:
        stopped_cleanly(m, "client safety sbxfs")


@pytest.fixture(scope="module")
def sandbox(mount):
    return sdk.get_sandbox(mount.mnt)


@pytest.fixture
def canary():
    """/tmp/sbxfs-canary-*/: secret (0600), dir/victim, dir/emptyd/, suid (04755)."""
    d = Path(tempfile.mkdtemp(prefix="sbxfs-canary-"))
    (d / "secret").write_text("root's secret\n")
    os.chmod(d / "secret", 0o600)
    (d / "dir" / "emptyd").mkdir(parents=True)
    (d / "dir" / "victim").write_text("victim\n")
    (d / "suid").write_text("#!/bin/sh\n")
    os.chmod(d / "suid", 0o4755)
    yield d
    shutil.rmtree(d)


def snapshot(root):
    """Every name under root with its type, mode, size and content: what must not change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (
                stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size,
                p.read_bytes() if stat.S_ISREG(st.st_mode) else None)
    return out


def node(mount, calls, timeout=60, node_args=()):
    """The outcomes of `calls` by the Node client (see nodeclient.mjs), and its peak RSS in
    KiB. A node that hangs is killed at `timeout`, which fails the test."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (scripts/bootstrap installs nodejs)")
    try:
        proc = subprocess.run(["node", *node_args, str(NODE_CALLS)], capture_output=True, text=True,
                              timeout=timeout,
                              input=json.dumps({"mount": str(mount.mnt), "calls": calls}))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the Node client still ran after {timeout}s: {calls}", pytrace=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    outcomes, peak = proc.stdout.splitlines()
    return json.loads(outcomes), json.loads(peak)["maxRSS"]


def sh(sandbox, cmd):
    """A command in the sandbox: how a test plants what a hostile command would."""
    r = sandbox.exec(cmd)
    assert r.exit_code == 0, r.stderr
    return r.stdout


def assert_names_only(message, path, mount, *hidden):
    """An error names the path the caller gave, and no path of the host."""
    assert path in message, message
    for host in (str(mount.mnt), "/proc/self/fd", *map(str, hidden)):
        assert host not in message, message


# -- ids -------------------------------------------------------------------------------------


def bad_ids(canary):
    """Ids that would name host paths once joined (to the canary, a new name in it, an empty
    directory in it) and the others the name rule refuses."""
    up = "../" * 40
    return [up + str(canary).lstrip("/"), up + str(canary / "x").lstrip("/"),
            up + str(canary / "dir" / "emptyd").lstrip("/"),
            "..", ".", "a/b", "/", "a\0b", "x" * 65, ""]


PY_ID_CALLS = {
    "create_session": lambda sb, i: sb.create_session(id=i),
    "get_session": lambda sb, i: sb.get_session(i),
    "delete_session": lambda sb, i: sb.delete_session(i),
    "ExecutionSession.set_env_vars": lambda sb, i: sdk.ExecutionSession(sb, i).set_env_vars(
        {"PLANTED": "1"}),
    "start_process": lambda sb, i: sb.start_process("true", process_id=i),
    "get_process": lambda sb, i: sb.get_process(i),
    "kill_process": lambda sb, i: sb.kill_process(i),
    "get_process_logs": lambda sb, i: sb.get_process_logs(i),
    "stream_process_logs": lambda sb, i: list(sb.stream_process_logs(i)),
    "Process.kill": lambda sb, i: sdk.Process(sb, i).kill(),
    "create_terminal": lambda sb, i: sb.create_terminal(id=i),
    "Terminal.close": lambda sb, i: sdk.Terminal(sb, i).close(),
    "create_code_context": lambda sb, i: sb.create_code_context(id=i),
    "delete_code_context": lambda sb, i: sb.delete_code_context(i),
    "run_code": lambda sb, i: sb.run_code("1", context=i),
}


def node_id_calls(i):
    return [
        {"method": "createSession", "args": [{"id": i}]},
        {"method": "getSession", "args": [i]},
        {"method": "deleteSession", "args": [i]},
        {"on": {"construct": i}, "method": "setEnvVars", "args": [{"PLANTED": "1"}]},
        {"method": "startProcess", "args": ["true", {"processId": i}]},
        {"method": "getProcess", "args": [i]},
        {"method": "killProcess", "args": [i]},
        {"method": "getProcessLogs", "args": [i]},
        {"method": "streamProcessLogs", "args": [i], "stream": True},
        {"method": "createTerminal", "args": [{"id": i}]},
        {"method": "createCodeContext", "args": [{"id": i}]},
        {"method": "deleteCodeContext", "args": [i]},
        {"method": "runCode", "args": ["1", {"context": i}]},
        {"method": "runCodeStream", "args": ["1", {"context": i}], "stream": True},
    ]


def mount_state(mount):
    """What an id gone astray inside the mount would change: its sessions and contexts, the
    sandbox-wide env, the default session's processes and terminals."""
    ls = lambda p: sorted(os.listdir(p)) if p.is_dir() else None  # noqa: E731
    return (ls(mount.sessions), ls(mount.mnt / "contexts"), (mount.mnt / "env").read_text(),
            ls(mount.sessions / "default" / "procs"), ls(mount.sessions / "default" / "terms"))


def test_python_ids_are_checked_before_any_path(mount, sandbox, canary):
    before, inside = snapshot(canary), mount_state(mount)
    for i in bad_ids(canary):
        for what, fn in PY_ID_CALLS.items():
            with pytest.raises(sdk.ValidationError, match="invalid .*id"):
                fn(sandbox, i)
                pytest.fail(f"{what}({i!r}) did not fail")
    assert snapshot(canary) == before
    assert mount_state(mount) == inside


def test_node_ids_are_checked_before_any_path(mount, canary):
    before, inside = snapshot(canary), mount_state(mount)
    ids = bad_ids(canary)
    calls = [(i, c) for i in ids for c in node_id_calls(i)]
    outcomes, _ = node(mount, [c for _, c in calls])
    for (i, call), out in zip(calls, outcomes):
        method = call["method"]
        if out["ok"]:  # only a stream that comes before its checks, with its error event
            assert method == "runCodeStream", (i, method, out)
            assert [e["type"] for e in out["value"]] == ["error"], (i, method, out)
            assert "invalid code context id" in out["value"][0]["error"], (i, method, out)
        else:
            assert out["error"]["name"] == "ValidationError", (i, method, out)
            assert "invalid" in out["error"]["message"], (i, method, out)
    assert snapshot(canary) == before
    assert mount_state(mount) == inside


# -- the workspace's place -------------------------------------------------------------------


def test_home_set_by_a_command_does_not_move_the_workspace(mount, sandbox):
    """HOME in the default session's env is the command's to set: a client that took it for
    the workspace would read /etc/passwd from a file the command planted, or write
    /workspace/h/... one level up."""
    sh(sandbox, "mkdir -p /workspace/h/sub && echo planted > /workspace/passwd")
    own_home = sh(sandbox, 'printf %s "$HOME"')
    try:
        for home in ("/etc", "/workspace/h"):
            sh(sandbox, f"export HOME={home}")
            assert f"HOME={home}\n" in (mount.sessions / "default" / "env").read_text()
            fresh = sdk.get_sandbox(mount.mnt)
            with pytest.raises(sdk.ValidationError):
                fresh.read_file("/etc/passwd")
            fresh.write_file("/workspace/h/sub/py", "right place\n")
            outcomes, _ = node(mount, [
                {"method": "readFile", "args": ["/etc/passwd"]},
                {"method": "writeFile", "args": ["/workspace/h/sub/js", "right place\n"]}])
            assert outcomes[0]["error"]["name"] == "ValidationError", outcomes[0]
            assert outcomes[1]["ok"], outcomes[1]
            for name in ("py", "js"):
                assert (mount.ws / "h" / "sub" / name).read_text() == "right place\n"
                assert not (mount.ws / "sub").exists()
    finally:
        sh(sandbox, f"export HOME={own_home}")


# -- links -----------------------------------------------------------------------------------


def plant_links(sandbox, d, canary):
    """In the workspace directory d: links to the canary's secret (absolute and relative), to
    its directory (at the top and below), to its setuid file, and a file of its own."""
    sh(sandbox, f"mkdir -p {d}/real && echo mine > {d}/mine && "
                f"ln -s {canary}/secret {d}/s && ln -s ../../../../../../../..{canary}/secret "
                f"{d}/rel && ln -s {canary}/dir {d}/r && ln -s {canary}/dir {d}/real/deep && "
                f"ln -s {canary}/suid {d}/su")


def link_abuses(d):
    """(call, the path it names) for each file call, each through a planted link."""
    return [
        (("read_file", "readFile"), [f"{d}/s"]),
        (("read_file", "readFile"), [f"{d}/rel"]),
        (("read_file", "readFile"), [f"{d}/r/victim"]),
        (("read_file", "readFile"), [f"{d}/real/deep/victim"]),
        (("read_file_stream", "readFileStream"), [f"{d}/s"]),
        (("write_file", "writeFile"), [f"{d}/s", "pwned"]),
        (("write_file", "writeFile"), [f"{d}/su", "pwned"]),
        (("write_file", "writeFile"), [f"{d}/r/new", "pwned"]),
        (("mkdir", "mkdir"), [f"{d}/r/m"]),
        (("mkdir", "mkdir"), [f"{d}/r/m/n", {"recursive": True}]),
        (("delete_file", "deleteFile"), [f"{d}/r/victim"]),
        (("rename_file", "renameFile"), [f"{d}/r/victim", f"{d}/stolen"]),
        (("rename_file", "renameFile"), [f"{d}/mine", f"{d}/r/mine"]),
        (("move_file", "moveFile"), [f"{d}/mine", f"{d}/r/x"]),
        (("list_files", "listFiles"), [f"{d}/r"]),
        (("exists", "exists"), [f"{d}/r/victim"]),
        (("watch", "watch"), [f"{d}/r"]),
    ]


def py_call(sandbox, name, args):
    if name == "read_file_stream":
        return list(sandbox.read_file_stream(*args))
    if name == "watch":
        return sandbox.watch(args[0], lambda e: None).stop()
    if len(args) == 2 and isinstance(args[1], dict):
        return getattr(sandbox, name)(args[0], **args[1])
    return getattr(sandbox, name)(*args)


def assert_links_left_alone(mount, d, canary, before):
    assert snapshot(canary) == before
    for link in ("s", "rel", "r", "su", "real/deep"):
        assert (mount.ws / d.removeprefix("/workspace/") / link).is_symlink(), link
    assert not (mount.ws / d.removeprefix("/workspace/") / "stolen").exists()


def test_python_file_calls_follow_no_link(mount, sandbox, canary):
    d = "/workspace/links-py"
    plant_links(sandbox, d, canary)
    before = snapshot(canary)
    for (name, _), args in link_abuses(d):
        with pytest.raises(sdk.PermissionDeniedError) as info:
            py_call(sandbox, name, args)
            pytest.fail(f"{name}{tuple(args)} did not fail")
        assert info.value.errno == "ELOOP", (name, args, info.value)
        assert_names_only(str(info.value), args[0], mount, canary)
    assert_links_left_alone(mount, d, canary, before)

    listing = sandbox.list_files(d, recursive=True)["files"]
    kinds = {f["relative_path"]: f["type"] for f in listing}
    assert kinds == {"mine": "file", "r": "symlink", "real": "directory",
                     "real/deep": "symlink", "rel": "symlink", "s": "symlink", "su": "symlink"}
    assert sandbox.exists(f"{d}/s")["exists"]
    sandbox.delete_file(f"{d}/s")  # the link itself
    assert not sandbox.exists(f"{d}/s")["exists"]
    assert snapshot(canary) == before


def test_node_file_calls_follow_no_link(mount, sandbox, canary):
    d = "/workspace/links-js"
    plant_links(sandbox, d, canary)
    before = snapshot(canary)
    abuses = link_abuses(d)
    calls = [{"method": m, "args": args, "stream": m == "readFileStream"}
             for (_, m), args in abuses if m != "watch"]
    calls.append({"method": "watch", "args": [f"{d}/r", {}], "watchFor": {"ms": 0, "touch": []}})
    outcomes, _ = node(mount, calls)
    for call, out in zip(calls, outcomes):
        if call.get("stream"):
            assert out["ok"] and [e["type"] for e in out["value"]] == ["error"], (call, out)
            message = out["value"][0]["error"]
        else:
            assert not out["ok"], (call, out)
            assert (out["error"]["name"], out["error"]["errno"]) == \
                ("PermissionDeniedError", "ELOOP"), (call, out)
            message = out["error"]["message"]
        assert "symbolic link" in message, (call, out)
        assert_names_only(message, call["args"][0], mount, canary)
    assert_links_left_alone(mount, d, canary, before)

    outcomes, _ = node(mount, [
        {"method": "listFiles", "args": [d, {"recursive": True}]},
        {"method": "watch", "args": [d, {"recursive": True}],
         "watchFor": {"ms": 1000, "touch": [str(canary / "dir" / "victim"),
                                            str(mount.ws / "links-js" / "real" / "hostfile")]}},
        {"method": "deleteFile", "args": [f"{d}/s"]}])
    kinds = {f["relativePath"]: f["type"] for f in outcomes[0]["value"]["files"]}
    assert kinds == {"mine": "file", "r": "symlink", "real": "directory",
                     "real/deep": "symlink", "rel": "symlink", "s": "symlink", "su": "symlink"}
    events = outcomes[1]["value"]
    assert {"type": "create", "path": f"{d}/real/hostfile"} in events, events
    assert not [e for e in events if e["path"] == f"{d}/r" or e["path"].startswith(f"{d}/r/")
                or "deep/" in e["path"]], events
    assert outcomes[2]["ok"] and not (mount.ws / "links-js" / "s").is_symlink()
    before["dir/victim"] = before["dir/victim"][:2] + (8, b"victim\nx")  # the host's own write
    assert snapshot(canary) == before


def test_write_keeps_permission_bits_but_never_set_id_ones(mount, sandbox):
    """A file that is there keeps its mode across a write, set-id bits dropped (a command
    cannot set them; a host program could have)."""
    (mount.ws / "modes").mkdir()
    for name in ("py", "js"):
        f = mount.ws / "modes" / name
        f.write_text("old\n")
        os.chmod(f, 0o6755)
    sandbox.write_file("/workspace/modes/py", "new\n")
    outcomes, _ = node(mount, [{"method": "writeFile", "args": ["/workspace/modes/js", "new\n"]}])
    assert outcomes[0]["ok"], outcomes
    for name in ("py", "js"):
        f = mount.ws / "modes" / name
        assert (f.read_text(), stat.S_IMODE(f.stat().st_mode)) == ("new\n", 0o755), name


# -- what a reader must not wait on or hold ---------------------------------------------------


def peak_rss():
    """This process's peak RSS in KiB (VmHWM)."""
    with open("/proc/self/status") as f:
        return int(re.search(r"^VmHWM:\s+(\d+) kB$", f.read(), re.M).group(1))


def reset_peak_rss():
    """Sets the peak RSS to the RSS now (what earlier tests grew to would hide growth here);
    returns it."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return peak_rss()


def plant_specials(mount, sandbox, d):
    """A FIFO, a socket and a sparse 20 GiB file a command made, a directory, and a character
    device (/dev/zero's numbers; the host makes it: a command cannot)."""
    sh(sandbox, f"mkdir -p {d}/dir && mkfifo {d}/fifo && truncate -s 20G {d}/big && "
                f"echo small > {d}/ok && python3 -c \"import socket; "
                f"socket.socket(socket.AF_UNIX).bind('{d}/sock')\"")
    os.mknod(mount.ws / d.removeprefix("/workspace/") / "zero", stat.S_IFCHR | 0o666,
             os.makedev(1, 5))


SPECIALS = [("fifo", "ValidationError", "EINVAL", "a FIFO"),
            ("sock", "ValidationError", "EINVAL", "a socket"),
            ("zero", "ValidationError", "EINVAL", "a character device"),
            ("dir", "IsDirectoryError", "EISDIR", "is a directory"),
            ("big", "ValidationError", "EFBIG", "21474836480 bytes")]


def test_python_reads_refuse_what_is_not_a_small_regular_file(mount, sandbox):
    d = "/workspace/special-py"
    plant_specials(mount, sandbox, d)
    peak = reset_peak_rss()
    readers = {"read_file": sandbox.read_file,
               "read_file_stream": lambda p: list(sandbox.read_file_stream(p))}
    for name, cls, errno_name, words in SPECIALS:
        for reader, read in readers.items():
            if (name, reader) == ("big", "read_file_stream"):
                continue  # it streams any size: read below, a few chunks of it
            t0 = time.monotonic()
            err = bounded(_error_of, read, f"{d}/{name}", timeout=FAST * 2,
                          what=f"read of {d}/{name}")
            assert time.monotonic() - t0 < FAST, name
            assert (type(err).__name__, err.errno) == (cls, errno_name), (name, err)
            assert words in str(err), err
            assert_names_only(str(err), f"{d}/{name}", mount)
    grown = peak_rss() - peak
    assert grown < 128 << 10, f"peak RSS grew by {grown} KiB"

    with pytest.raises(sdk.ValidationError, match="max_bytes"):
        sandbox.read_file(f"{d}/ok", max_bytes=5)
    assert sandbox.read_file(f"{d}/ok", max_bytes=6)["content"] == "small\n"
    stream = sandbox.read_file_stream(f"{d}/big")
    head = [next(stream) for _ in range(3)]
    stream.close()
    assert head[0]["type"] == "metadata" and head[0]["size"] == 20 << 30
    assert head[1] == {"type": "chunk", "data": "\0" * 65536}


def _error_of(read, path):
    try:
        read(path)
    except sdk.SandboxError as exc:
        return exc
    pytest.fail(f"reading {path} did not fail")


def test_node_reads_refuse_what_is_not_a_small_regular_file(mount, sandbox):
    d = "/workspace/special-js"
    plant_specials(mount, sandbox, d)
    # Six FIFO reads at once would take all four of libuv's threads and hang every later file
    # call if they blocked; the read of `ok` among them must complete.
    fifos = [{"method": "readFile", "args": [f"{d}/fifo"]} for _ in range(6)]
    calls = [{"parallel": fifos + [{"method": "readFile", "args": [f"{d}/ok"]}]}]
    calls += [{"method": "readFile", "args": [f"{d}/{name}"]} for name, *_ in SPECIALS]
    calls += [{"method": "readFileStream", "args": [f"{d}/{name}"], "stream": True}
              for name, *_ in SPECIALS if name != "big"]
    calls += [{"method": "readFile", "args": [f"{d}/ok", {"maxBytes": 5}]},
              {"method": "readFile", "args": [f"{d}/ok", {"maxBytes": 6}]}]
    outcomes, peak_kib = node(mount, calls, timeout=30)

    together = outcomes[0]["parallel"]
    assert all(o["error"]["errno"] == "EINVAL" for o in together[:6]), together
    assert together[6]["ok"] and together[6]["value"]["content"] == "small\n", together
    reads = outcomes[1:1 + len(SPECIALS)]
    for (name, cls, errno_name, words), out in zip(SPECIALS, reads):
        assert not out["ok"] and out["ms"] < FAST * 1000, (name, out)
        assert (out["error"]["name"], out["error"]["errno"]) == (cls, errno_name), (name, out)
        assert words in out["error"]["message"], out
        assert_names_only(out["error"]["message"], f"{d}/{name}", mount)
    streams = outcomes[1 + len(SPECIALS):-2]
    for (name, _, _, words), out in zip([s for s in SPECIALS if s[0] != "big"], streams):
        assert [e["type"] for e in out["value"]] == ["error"], (name, out)
        assert words in out["value"][0]["error"], out
    too_small, enough = outcomes[-2:]
    assert too_small["error"]["name"] == "ValidationError" and "maxBytes" in \
        too_small["error"]["message"], too_small
    assert enough["value"]["content"] == "small\n", enough
    assert peak_kib < 300 << 10, f"node's peak RSS: {peak_kib} KiB"


def test_node_execs_outlast_signals_to_their_waiting_thread(mount, tmp_path):
    """A profiler signals every thread of node every 50 µs, the worker parked on a command's
    result among them: an interrupted parked read answers EINTR, having taken nothing, and is
    read again, so the exec ends as the command did."""
    calls = [{"method": "exec", "args": [f"sleep 0.{i}; echo done {i}"]} for i in range(1, 4)]
    outcomes, _ = node(mount, calls, node_args=["--cpu-prof", "--cpu-prof-dir", str(tmp_path),
                                                "--cpu-prof-interval", "50"])
    for i, out in enumerate(outcomes, 1):
        assert out["ok"] and out["value"]["stdout"] == f"done {i}\n", out


def test_errors_name_the_callers_path(mount, sandbox):
    path = "/workspace/nowhere/x"
    with pytest.raises(sdk.FileNotFoundError) as info:
        sandbox.read_file(path)
    assert_names_only(str(info.value), path, mount)
    assert info.value.__cause__ is None
    with pytest.raises(sdk.FileNotFoundError) as info:
        sandbox.write_file(path, "x")
    assert_names_only(str(info.value), path, mount)
    outcomes, _ = node(mount, [{"method": "readFile", "args": [path]},
                               {"method": "writeFile", "args": [path, "x"]},
                               {"method": "listFiles", "args": [path]}])
    for out in outcomes:
        assert out["error"]["name"] == "FileNotFoundError", out
        assert_names_only(out["error"]["message"], path, mount)
