"""sbxfs-bridge (clients/node/web/bridge): the Sandbox Bridge's /v1 API over a fleet, checked
against the Bridge's own OpenAPI document (read from the @cloudflare/sandbox package, a
development dependency) route by route and with its curl samples run as written; exec as
Server-Sent Events; the workspace file routes and the whole tree (/v1/sandbox/ID/fs/PATH) with
links a sandbox plants; tokens (none, wrong, another sandbox's, revoked), bounds, slow clients,
TLS; persist and hydrate; a PTY over a WebSocket."""

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import REPO_ROOT, free_port, isolation_none, wait_until
from test_fleet import fleet

WEB = REPO_ROOT / "clients" / "node" / "web"
BRIDGE = WEB / "bridge" / "bin" / "sbxfs-bridge.js"
PEER_DOC = WEB / "node_modules" / "@cloudflare" / "sandbox" / "dist" / "bridge" / "index.js"
ADMIN = "admin-secret-0123456789"
SOLO = "solo-secret-0123456789ab"

pytestmark = [pytest.mark.client,
              pytest.mark.skipif(os.geteuid() != 0 or isolation_none(),
                                 reason="a fleet's sandboxes are root's mounts, isolated"),
              pytest.mark.skipif(shutil.which("node") is None or not (WEB / "node_modules").exists(),
                                 reason="node and the web package's modules (scripts/bootstrap)")]


class Bridge:
    def __init__(self, fleet_mnt, tmp, *args, tls=None, port=0):
        self.fleet = Path(fleet_mnt)
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.tokens = self.tmp / "tokens"
        self.set_tokens(f"admin * {ADMIN}\nsolo solo {SOLO}\n")
        self.log = self.tmp / "bridge.log"
        cmd = ["node", str(BRIDGE), str(fleet_mnt), "--tokens", str(self.tokens),
               "--listen", f"127.0.0.1:{port}", *args]
        if tls:
            cmd += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(self.log, "wb"))
        line = self.proc.stdout.readline().decode()
        m = re.match(r"listening on (https?)://127\.0\.0\.1:(\d+)", line)
        assert m, (line, self.log.read_text())
        self.scheme, self.port = m.group(1), int(m.group(2))
        self.base = f"{self.scheme}://127.0.0.1:{self.port}"

    def set_tokens(self, text):
        tmp = self.tokens.with_suffix(".new")
        tmp.write_text(text)
        tmp.chmod(0o600)
        tmp.rename(self.tokens)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def conn(self, timeout=60, context=None):
        if self.scheme == "https":
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def call(self, method, path, body=None, token=ADMIN, headers=None, timeout=60):
        """(status, headers, body bytes)."""
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"Bearer {token}"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c = self.conn(timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def json(self, method, path, body=None, **kw):
        status, _, data = self.call(method, path, body, **kw)
        return status, (json.loads(data) if data else None)

    def exec(self, id, argv, session=None, **extra):
        """[(event, data)] of an exec's stream, and its status."""
        headers = {"Session-Id": session} if session else {}
        status, _, data = self.call("POST", f"/v1/sandbox/{id}/exec", {"argv": argv, **extra},
                                    headers=headers)
        if status != 200:
            return status, json.loads(data)
        events = []
        for block in data.decode().split("\n\n"):
            lines = [ln for ln in block.split("\n") if ln and not ln.startswith(":")]
            if not lines:
                continue
            event = lines[0].removeprefix("event: ")
            payload = "\n".join(ln.removeprefix("data: ") for ln in lines[1:])
            events.append((event, payload))
        return status, events


def output(events, stream):
    return b"".join(base64.b64decode(d) for e, d in events if e == stream)


@pytest.fixture(scope="module")
def bridge():
    tmp = tempfile.mkdtemp(prefix="sbxfs-it-bridge-")
    with fleet("--max", "32") as f:
        b = Bridge(f.mnt, tmp, "--max-body", str(4 << 20))
        try:
            yield b
            assert b.proc.poll() is None, f"the bridge ended:\n{b.log.read_text()[-3000:]}"
        finally:
            b.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def peer_document():
    """The Bridge's OPENAPI_SCHEMA, read from the package's module text (it imports a Workers-only
    module, so node evaluates the object literal alone)."""
    script = r"""
const t = require('fs').readFileSync(process.argv[1], 'utf8');
const i = t.indexOf('const OPENAPI_SCHEMA = {');
const j = t.indexOf('\n};\n', i);
if (i < 0 || j < 0) throw new Error('no OPENAPI_SCHEMA in the module');
process.stdout.write(JSON.stringify(new Function('return ' + t.slice(i + 'const OPENAPI_SCHEMA = '.length, j + 2))()));
"""
    out = subprocess.run(["node", "-e", script, str(PEER_DOC)], capture_output=True, check=True)
    return json.loads(out.stdout)


def test_our_document_has_every_route_of_the_bridges_with_its_parameters_and_answers(bridge):
    peer = peer_document()
    status, ours = bridge.json("GET", f"/v1/openapi.json?token={ADMIN}", token=None)
    assert status == 200
    for path, ops in peer["paths"].items():
        assert path in ours["paths"], path
        for method, op in ops.items():
            mine = ours["paths"][path].get(method)
            assert mine is not None, (method, path)
            names = lambda o: {(p["name"], p["in"]) for p in o.get("parameters", [])}  # noqa: E731
            assert names(op) <= names(mine), (method, path, names(op) - names(mine))
            kinds = lambda o: set(o.get("requestBody", {}).get("content", {}))  # noqa: E731
            assert kinds(op) == kinds(mine), (method, path)
            if mine.get("x-sbxfs-unsupported"):
                assert set(mine["responses"]) == {"401", "501"}, (method, path)
                continue
            ok = lambda o: {c for c in o["responses"] if c[0] in "12"}  # noqa: E731
            assert ok(op) == ok(mine), (method, path, ok(op), ok(mine))
            assert set(op["responses"]) <= set(mine["responses"]), (method, path)
            for code, r in op["responses"].items():
                assert set(r.get("content", {})) <= set(mine["responses"][code].get("content", {})), \
                    (method, path, code)
    err = lambda d: d["components"]["schemas"]["ErrorResponse"]["required"]  # noqa: E731
    assert err(peer) == err(ours)
    # every route documented is served: none answers "no route"
    for path, ops in ours["paths"].items():
        concrete = (path.replace("{id}", "doc-probe").replace("{port}", "8080")
                    .replace("{sid}", "nosuch").replace("{path}", "workspace/none"))
        for method in ops:
            status, _, data = bridge.call(method.upper(), concrete, token="wrong-token-0123456789")
            assert status == 401 or path == "/health", (method, path, status, data)


def test_the_bridges_curl_samples_run_as_written(bridge, tmp_path):
    peer = peer_document()
    samples = {}
    for path, ops in peer["paths"].items():
        for method, op in ops.items():
            for s in op.get("x-codeSamples", []):
                if s["source"].startswith("curl"):
                    samples.setdefault((method, path), []).append(s["source"])
    (tmp_path / "main.py").write_text("print('from the sample')\n")
    # what a sample needs comes first: a file before its read, an archive before its hydrate,
    # and the sandbox's destruction last
    order = sorted(samples, key=lambda k: (k[0] == "delete" and k[1] == "/v1/sandbox/{id}",
                                           k[1].endswith("/hydrate"), k[1].endswith("/file/{path}") and k[0] == "get"))
    env = {**os.environ, "HOST": f"127.0.0.1:{bridge.port}", "SANDBOX_API_KEY": ADMIN}
    seen = {}
    for key in order:
        for source in samples[key]:
            # the samples name https://; this server is plain HTTP on loopback here
            res = subprocess.run(["bash", "-c", source.replace("https://", "http://")], cwd=tmp_path,
                                 env=env, capture_output=True, timeout=60)
            assert res.returncode == 0, (key, source, res.stderr)
            seen[key] = res.stdout
    assert b"event: stdout\ndata: " + base64.b64encode(b"hello\n") in seen[("post", "/v1/sandbox/{id}/exec")]
    assert b'"exit_code":0' in seen[("post", "/v1/sandbox/{id}/exec")]
    assert json.loads(seen[("post", "/v1/sandbox")])["id"]
    assert json.loads(seen[("get", "/health")]) == {"ok": True}
    assert json.loads(seen[("get", "/v1/openapi.json")])["paths"]
    assert json.loads(seen[("get", "/v1/sandbox/{id}/running")]) == {"running": True}
    assert json.loads(seen[("post", "/v1/sandbox/{id}/tunnel/{port}")])["port"] == 8080
    assert json.loads(seen[("put", "/v1/sandbox/{id}/file/{path}")]) == {"ok": True}
    assert json.loads(seen[("post", "/v1/sandbox/{id}/hydrate")]) == {"ok": True}
    assert (tmp_path / "workspace.tar").stat().st_size > 0
    assert json.loads(seen[("post", "/v1/sandbox/{id}/mount")])["code"] == "mount_error"
    assert json.loads(seen[("get", "/v1/pool/stats")])["code"] == "pool_error"
    assert seen[("delete", "/v1/sandbox/{id}")] == b""
    status, body = bridge.json("GET", "/v1/sandbox/my-sandbox/running")
    assert body == {"running": False}


def test_exec_streams_both_outputs_then_its_exit_and_refuses_what_the_bridge_refuses(bridge):
    status, ev = bridge.exec("ex", ["sh", "-c", "for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 7"])
    assert status == 200
    assert output(ev, "stdout") == b"out1\nout2\nout3\n"
    assert output(ev, "stderr") == b"err1\nerr2\nerr3\n"
    assert ev[-1] == ("exit", '{"exit_code":7}')
    # a longer command streams: its first output comes while it runs
    c = bridge.conn()
    c.request("POST", "/v1/sandbox/ex/exec", body=json.dumps({"argv": ["sh", "-c", "echo first; sleep 1.5; echo second"]}),
              headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"})
    r = c.getresponse()
    t0 = time.monotonic()
    first = r.read1(4096)
    assert first.startswith(b"event: stdout\ndata: " + base64.b64encode(b"first\n")), first
    assert time.monotonic() - t0 < 1.2
    rest = r.read()
    assert base64.b64encode(b"second\n") in rest and b'"exit_code":0' in rest, rest
    c.close()
    # any byte, base64 on the wire
    status, ev = bridge.exec("ex", ["printf", "\\000\\377\\n"])
    assert output(ev, "stdout") == b"\x00\xff\n"
    status, ev = bridge.exec("ex", ["sleep", "30"], timeout_ms=300)
    assert ev[-1][0] == "error" and json.loads(ev[-1][1])["code"] == "exec_error", ev
    status, ev = bridge.exec("ex", ["pwd"], cwd="sub/..")
    assert output(ev, "stdout") == b"/workspace\n"
    for cwd in ("/etc", "/workspace/../etc", "../x"):
        status, body = bridge.exec("ex", ["pwd"], cwd=cwd)
        assert status == 403 and body["code"] == "invalid_request", (cwd, body)
    for bad in ({}, {"argv": []}, {"argv": "ls"}, {"argv": ["a\0b"]}, {"argv": ["ls"], "timeout_ms": -1}):
        status, body = bridge.json("POST", "/v1/sandbox/ex/exec", bad)
        assert status == 400 and body["code"] == "invalid_request", (bad, body)
    status, _, _ = bridge.call("POST", "/v1/sandbox/ex/exec", b"{not json")
    assert status == 400
    # sessions: their own env and cwd; the default one cannot go
    status, body = bridge.json("POST", "/v1/sandbox/ex/session", {"id": "build", "env": {"FOO": "bar baz"}})
    assert (status, body) == (200, {"id": "build"})
    status, ev = bridge.exec("ex", ["sh", "-c", "echo $FOO"], session="build")
    assert output(ev, "stdout") == b"bar baz\n"
    status, ev = bridge.exec("ex", ["sh", "-c", "echo ${FOO:-unset}"])
    assert output(ev, "stdout") == b"unset\n"
    status, body = bridge.exec("ex", ["true"], session="nosuch")
    assert status == 404 and body["code"] == "session_error"
    status, body = bridge.exec("ex", ["true"], session="../x")
    assert status == 400
    assert bridge.json("DELETE", "/v1/sandbox/ex/session/build") == (200, {"success": True, "sessionId": "build"})
    status, body = bridge.json("DELETE", "/v1/sandbox/ex/session/default")
    assert status == 502 and body["code"] == "session_error"


def test_a_sandbox_removed_behind_the_bridges_back_is_made_again_by_the_next_exec(bridge):
    status, ev = bridge.exec("gone", ["sh", "-c", "echo one > /workspace/mark"])
    assert status == 200 and ev[-1] == ("exit", '{"exit_code":0}'), ev
    (bridge.fleet / "gone").rmdir()  # not through the bridge, which still knows the sandbox
    status, ev = bridge.exec("gone", ["sh", "-c", "cat /workspace/mark 2>&1; echo new"])
    assert status == 200, ev
    assert output(ev, "stdout").endswith(b"new\n") and b"one" not in output(ev, "stdout"), ev
    assert ev[-1] == ("exit", '{"exit_code":0}'), ev
    assert bridge.json("DELETE", "/v1/sandbox/gone")[0] == 204


def raw_exec(bridge, id, argv):
    """A socket with an exec request sent on it, its answer's head read: (socket, file)."""
    body = json.dumps({"argv": argv}).encode()
    s = socket.create_connection(("127.0.0.1", bridge.port), timeout=60)
    s.sendall(f"POST /v1/sandbox/{id}/exec HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              f"Authorization: Bearer {ADMIN}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    f = s.makefile("rb")
    assert f.readline().startswith(b"HTTP/1.1 200 ")
    while f.readline() != b"\r\n":
        pass
    return s, f


def test_large_streams_come_whole_to_a_slow_reader_and_one_that_leaves(bridge):
    """Random bytes on stdout and stderr at once (no buffer of the bridge's that is read or
    framed again can pass for another's) through a reader slower than the command, byte for
    byte; then a reader that goes away mid-stream leaves the bridge answering."""
    size = 24 << 20
    s, f = raw_exec(bridge, "big", ["sh", "-c", f"cd /workspace && head -c {size} /dev/urandom > o && "
                                    f"head -c {size} /dev/urandom > e && {{ cat o & cat e >&2; wait; }}"])
    hashes, sizes, last = {b"stdout": hashlib.sha256(), b"stderr": hashlib.sha256()}, {}, None
    pending = bytearray()
    while (n := int(f.readline(), 16)) > 0:  # HTTP chunks, read a little at a time
        while n:
            piece = f.read(min(n, 256 << 10))
            pending += piece
            n -= len(piece)
            time.sleep(0.002)
        f.readline()
        while (end := pending.find(b"\n\n")) >= 0:  # events, decoded as they come
            head, _, data = bytes(pending[:end]).partition(b"\n")
            del pending[:end + 2]
            last, stream = (head, data), head.removeprefix(b"event: ")
            if stream in hashes:
                out = base64.b64decode(data.removeprefix(b"data: "), validate=True)
                hashes[stream].update(out)
                sizes[stream] = sizes.get(stream, 0) + len(out)
    s.close()
    assert last == (b"event: exit", b'data: {"exit_code":0}') and not pending, last
    ws = bridge.fleet / "big" / "fs" / "workspace"
    for stream, name in ((b"stdout", "o"), (b"stderr", "e")):  # both at once, sharing the buffers
        with open(ws / name, "rb") as file:
            assert (sizes[stream], hashes[stream].digest()) == (size, hashlib.file_digest(file, "sha256").digest())
    # a reader that takes a little of a long stream and goes
    s, f = raw_exec(bridge, "big", ["head", "-c", str(1 << 30), "/dev/zero"])
    assert f.read(1 << 20)
    s.close()
    t0 = time.monotonic()
    status, ev = bridge.exec("big", ["echo", "still here"])
    assert status == 200 and output(ev, "stdout") == b"still here\n", ev
    assert time.monotonic() - t0 < 60
    assert bridge.json("DELETE", "/v1/sandbox/big")[0] == 204


def test_file_routes_stay_in_the_workspace_and_follow_no_link(bridge):
    data = os.urandom(3 << 20)
    assert bridge.call("PUT", "/v1/sandbox/fl/file/workspace/blob", data)[0] == 200
    status, _, got = bridge.call("GET", "/v1/sandbox/fl/file/workspace/blob")
    assert status == 200 and got == data
    status, ev = bridge.exec("fl", ["sh", "-c", "sha256sum blob | cut -c1-64"])
    assert output(ev, "stdout").decode().strip() == hashlib.sha256(data).hexdigest()
    status, body = bridge.json("GET", "/v1/sandbox/fl/file/workspace/none")
    assert status == 404 and body["code"] == "workspace_read_not_found"
    for path in ("etc/passwd", "workspace/../etc/passwd", "workspace/..%2f..%2fetc/passwd", "main.py"):
        status, body = bridge.json("GET", f"/v1/sandbox/fl/file/{path}")
        assert status == 403 and body["code"] == "invalid_request", (path, body)
    # links a command plants: to a host file, to a directory on the way, swapped in for a file
    bridge.exec("fl", ["sh", "-c", "ln -s /etc/shadow shadow; ln -s /etc etcdir; echo old > kept"])
    for path in ("shadow", "etcdir/passwd"):
        status, body = bridge.json("GET", f"/v1/sandbox/fl/file/workspace/{path}")
        assert status == 403, (path, status, body)
        status, body = bridge.json("PUT", f"/v1/sandbox/fl/file/workspace/{path}", b"x")
        assert status == 403, (path, status, body)
    assert Path("/etc/shadow").read_bytes() != b"x"
    # a PUT past the bound applies nothing: the old content stays
    status, body = bridge.json("PUT", "/v1/sandbox/fl/fs/workspace/kept", b"y" * (5 << 20),
                               headers={"Content-Type": "application/octet-stream"})
    assert status == 413 and body["code"] == "too_large"
    assert bridge.call("GET", "/v1/sandbox/fl/file/workspace/kept")[2] == b"old\n"


def test_the_tree_reads_and_writes_every_kind_of_control_file(bridge):
    base = "/v1/sandbox/tr/fs"
    status, root = bridge.json("GET", f"{base}/")
    assert {e["name"] for e in root} >= {"sessions", "workspace", "network", "snapshots", "ports"}
    assert bridge.call("PUT", f"{base}/sessions/default/cmd",
                       b"echo first; sleep 1.5; echo second\n")[0] == 200
    # stdout streams while the command runs: its first line comes before the command ends
    c = bridge.conn()
    c.request("GET", f"{base}/sessions/default/stdout", headers={"Authorization": f"Bearer {ADMIN}"})
    r = c.getresponse()
    t0 = time.monotonic()
    assert r.read1(64) == b"first\n"
    assert time.monotonic() - t0 < 1.2
    assert r.read() == b"second\n"
    c.close()
    assert bridge.call("GET", f"{base}/sessions/default/exit")[2] == b"0\n"
    # a dropped connection reads on from its offset
    assert bridge.call("GET", f"{base}/sessions/default/stdout?offset=6")[2] == b"second\n"
    bridge.call("PUT", f"{base}/sessions/default/cmd", b"echo one; sleep 1; echo two; sleep 1; echo three\n")
    c = bridge.conn()
    c.request("GET", f"{base}/sessions/default/stdout", headers={"Authorization": f"Bearer {ADMIN}"})
    r = c.getresponse()
    had = r.read1(64)
    assert had == b"one\n"
    c.sock.shutdown(socket.SHUT_RDWR)  # dropped while the command runs
    c.close()
    status, headers, rest = bridge.call("GET", f"{base}/sessions/default/stdout?offset={len(had)}")
    assert (status, headers.get("X-Offset"), rest) == (200, "4", b"two\nthree\n")
    assert bridge.json("GET", f"{base}/sessions/default/stdout?offset=-1")[0] == 400
    # env and cwd: write format = read format, a bad line refused whole
    assert bridge.call("PUT", f"{base}/sessions/default/env", b"GREETING=hi there\n")[0] == 200
    assert b"GREETING=hi there\n" in bridge.call("GET", f"{base}/sessions/default/env")[2]
    status, body = bridge.json("PUT", f"{base}/sessions/default/env", b"not a line\n")
    assert status == 400 and body["code"] == "invalid_request"
    assert bridge.call("PUT", f"{base}/sessions/default/cwd", b"/tmp\n")[0] == 200
    assert bridge.call("GET", f"{base}/sessions/default/cwd")[2] == b"/tmp\n"
    # sessions and snapshots by mkdir and rmdir; a process by its cmd
    assert bridge.json("POST", f"{base}/sessions/two")[0] == 201
    assert bridge.json("POST", f"{base}/sessions/two")[0] == 409
    assert bridge.json("POST", f"{base}/sessions/two/procs/srv")[0] == 201
    assert bridge.call("PUT", f"{base}/sessions/two/procs/srv/cmd", b"sleep 60\n")[0] == 200
    status, procs = bridge.json("GET", f"{base}/sessions/two/procs")
    assert any(p["name"] == "srv" for p in procs), procs
    assert b"state running" in bridge.call("GET", f"{base}/sessions/two/procs/srv/status")[2]
    assert bridge.json("DELETE", f"{base}/sessions/two")[0] == 200
    assert bridge.json("POST", f"{base}/snapshots/snap1")[0] == 201
    assert any(e["name"] == "snap1" for e in bridge.json("GET", f"{base}/snapshots")[1])
    status, _, policy = bridge.call("GET", f"{base}/network/policy")
    assert status == 200 and policy
    # errnos: one status each
    assert bridge.json("GET", f"{base}/sessions/nosuch/stdout")[1]["code"] == "not_found"
    assert bridge.json("PUT", f"{base}/README", b"x")[0] == 403
    assert bridge.json("DELETE", f"{base}/")[0] == 403
    for bad in ("sessions/../../x", "sessions/%2e%2e/x", "a%00b", "a%2fb"):
        assert bridge.json("GET", f"{base}/{bad}")[0] in (400, 404), bad
    # a run handle: the run number of this very submission, on the same open
    status, _, n = bridge.call("PUT", f"{base}/sessions/default/cmd?reply", b"echo handled\n")
    assert status == 200 and re.fullmatch(rb"[1-9][0-9]*\n", n), n
    assert bridge.call("GET", f"{base}/sessions/default/runs/{int(n)}/stdout")[2] == b"handled\n"
    # ?nowait: what a running command's stdout holds now; ?stat: lstat as JSON
    bridge.call("PUT", f"{base}/sessions/default/cmd", b"echo now; sleep 2\n")
    wait = time.monotonic()
    assert bridge.call("GET", f"{base}/sessions/default/stdout?nowait")[2] in (b"", b"now\n")
    assert time.monotonic() - wait < 1.5
    st = bridge.json("GET", f"{base}/sessions/default/cmd?stat")[1]
    assert st["type"] == "file" and isinstance(st["mtimeMs"], (int, float)), st
    assert bridge.json("GET", f"{base}/workspace?stat")[1]["type"] == "directory"
    # ?rename=: rename(2) within the tree, no link followed on either side
    assert bridge.call("PUT", f"{base}/workspace/old", b"x")[0] == 200
    assert bridge.json("POST", f"{base}/workspace/old?rename=workspace/new%25name")[0] == 200
    assert bridge.call("GET", f"{base}/workspace/new%25name")[2] == b"x"
    bridge.exec("tr", ["ln", "-s", "/tmp", "/workspace/tmplink"])
    status, body = bridge.json("POST", f"{base}/workspace/new%25name?rename=workspace/tmplink/escaped")
    assert status == 403, body
    # a directory's names as JSON, any byte: a name that is not UTF-8 comes as base64
    bridge.exec("tr", ["sh", "-c", "cd /workspace && touch \"$(printf 'bad\\377name')\" 'line\nbreak'"])
    # a FIFO a command made is refused, never opened to wait on
    bridge.exec("tr", ["mkfifo", "/workspace/fifo"])
    status, body = bridge.json("GET", f"{base}/workspace/fifo", timeout=10)
    assert status == 400 and body["errno"] == "EINVAL", body
    names = bridge.json("GET", f"{base}/workspace")[1]
    assert {"nameBase64": base64.b64encode(b"bad\xffname").decode(), "type": "file"} in names
    assert {"name": "line\nbreak", "type": "file"} in names


def test_tokens_scopes_revocation_and_a_log_without_secrets(bridge):
    assert bridge.json("GET", "/health", token=None) == (200, {"ok": True})
    for token in (None, "wrong-token-0123456789", ADMIN + "x", ADMIN[:-1]):
        status, body = bridge.json("GET", "/v1/sandbox/solo/running", token=token)
        assert (status, body["code"]) == (401, "unauthorized"), token
    assert bridge.json("GET", "/v1/sandbox/solo/running", token=SOLO)[0] == 200
    # a sandbox's token reaches its own sandbox only, and not the fleet's routes
    assert bridge.json("GET", "/v1/sandbox/other/running", token=SOLO)[0] == 401
    assert bridge.json("POST", "/v1/sandbox", token=SOLO)[0] == 401
    assert bridge.json("GET", "/v1/sandbox/solo/fs/", token=SOLO)[0] == 200
    # revoked: the line removed from the file
    bridge.set_tokens(f"admin * {ADMIN}\n")
    time.sleep(0.05)
    assert bridge.json("GET", "/v1/sandbox/solo/running", token=SOLO)[0] == 401
    bridge.set_tokens(f"admin * {ADMIN}\nsolo solo {SOLO}\n")
    log = bridge.log.read_text()
    assert '"solo" "GET" "/v1/sandbox/solo/running" 200' in log
    assert ADMIN not in log and SOLO not in log
    # a forged path cannot make a line of its own
    bridge.call("GET", "/v1/sandbox/x%0a2026-01-01%20%22admin%22/running")
    assert all(re.match(r"^\d{4}-\d\d-\d\dT[\d:.]+Z \"", ln) for ln in bridge.log.read_text().splitlines())


def test_a_tokens_file_others_can_read_or_a_public_listener_without_tls_is_refused(bridge, tmp_path):
    tokens = tmp_path / "t"
    tokens.write_text(f"a * {ADMIN}\n")
    tokens.chmod(0o644)
    fleet_mnt = bridge.proc.args[2]
    res = subprocess.run(["node", str(BRIDGE), fleet_mnt, "--tokens", str(tokens)], capture_output=True, timeout=30)
    assert res.returncode == 2 and b"chmod 600" in res.stderr
    tokens.chmod(0o600)
    res = subprocess.run(["node", str(BRIDGE), fleet_mnt, "--tokens", str(tokens), "--listen", "0.0.0.0:0"],
                         capture_output=True, timeout=30)
    assert res.returncode == 2 and b"--tls-cert" in res.stderr
    res = subprocess.run(["node", str(BRIDGE), str(tmp_path), "--tokens", str(tokens)], capture_output=True, timeout=30)
    assert res.returncode == 2 and b"not a fleet" in res.stderr


def test_slow_and_greedy_clients_are_bounded(bridge, tmp_path):
    # headers that never end: the connection is closed
    s = socket.create_connection(("127.0.0.1", bridge.port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    s.settimeout(30)
    t0 = time.monotonic()
    got = s.recv(4096)
    assert time.monotonic() - t0 < 15 and (got == b"" or b" 408 " in got), got
    s.close()
    # a loopback listener answers only to a loopback Host (no DNS rebinding)
    assert bridge.call("GET", "/health", headers={"Host": "evil.example"})[0] == 421
    # per-token rate: a burst past it is 429 with the reason
    b = Bridge(bridge.proc.args[2], tmp_path, "--rate", "1")
    try:
        # a burst of 1, one more a second: however slow this machine, most of 10 are refused
        t0 = time.monotonic()
        codes = [b.call("GET", "/v1/sandbox/solo/running")[0] for _ in range(10)]
        allowed = 1 + int(time.monotonic() - t0) + 1
        assert codes[0] == 200 and codes.count(200) <= allowed and set(codes) <= {200, 429}, codes
    finally:
        b.stop()


def test_persist_then_hydrate_into_another_sandbox(bridge):
    bridge.exec("pa", ["sh", "-c", "mkdir -p d/e && echo one > d/e/f && echo two > g && echo skip > big"])
    status, _, tar = bridge.call("POST", "/v1/sandbox/pa/persist?excludes=big")
    assert status == 200 and len(tar) >= 10240
    assert bridge.json("POST", "/v1/sandbox/pb/hydrate", tar)[1] == {"ok": True}
    status, ev = bridge.exec("pb", ["sh", "-c", "cat d/e/f g; ls -A"])
    assert output(ev, "stdout") == b"one\ntwo\nd\ng\n"
    assert bridge.json("POST", "/v1/sandbox/pb/hydrate", b"")[0] == 400
    status, body = bridge.json("POST", "/v1/sandbox/pb/hydrate", b"not a tar" * 100)
    assert status == 502 and body["code"] == "workspace_archive_write_error"
    assert bridge.json("POST", "/v1/sandbox/pa/persist?excludes=../x")[0] == 400


def test_a_pty_over_the_websocket_survives_a_reconnect(bridge, tmp_path):
    script = tmp_path / "pty.mjs"
    script.write_text(f"""
import WebSocket from {json.dumps(str(WEB / 'node_modules' / 'ws' / 'wrapper.mjs'))};
const [url, line, want] = process.argv.slice(2);
const ws = new WebSocket(url, {{ headers: {{ Authorization: 'Bearer {ADMIN}' }} }});
let out = '';
ws.on('message', (d, binary) => {{
  if (!binary) {{ if (JSON.parse(d).type === 'ready' && line) ws.send(Buffer.from(line)); return; }}
  out += d.toString();
  if (out.includes(want)) {{ console.log('found'); ws.close(); }}
}});
ws.on('unexpected-response', (req, res) => {{ console.log('refused ' + res.statusCode); process.exit(1); }});
ws.on('close', () => process.exit(0));
setTimeout(() => {{ console.log('timeout ' + JSON.stringify(out.slice(-300))); process.exit(1); }}, 15000);
""")
    url = f"ws://127.0.0.1:{bridge.port}/v1/sandbox/pt/pty?cols=100&rows=30"
    run = lambda *a: subprocess.run(["node", str(script), *a], capture_output=True, timeout=30)  # noqa: E731
    res = run(url, "echo $((6*7))-$(tput cols)\n", "42-100")
    assert res.stdout.strip() == b"found", res
    # the terminal is kept: a new socket replays what its ring holds
    res = run(url, "", "42-100")
    assert res.stdout.strip() == b"found", res
    assert bridge.call("GET", "/v1/sandbox/pt/pty")[0] == 400
    res = run(url.replace("cols=100", "cols=x"), "", "-")
    assert b"refused 400" in res.stdout


def test_tls_with_a_certificate_given_at_start(bridge, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    b = Bridge(bridge.proc.args[2], tmp_path, tls=(str(cert), str(key)))
    try:
        assert b.scheme == "https"
        ctx = ssl.create_default_context(cafile=str(cert))
        c = b.conn(context=ctx)
        c.request("GET", "/v1/sandbox/solo/running", headers={"Authorization": f"Bearer {ADMIN}"})
        assert c.getresponse().status == 200
        c.close()
        res = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-H", f"Authorization: Bearer {ADMIN}",
                              f"{b.base}/v1/sandbox/solo/running"], capture_output=True, timeout=30)
        assert json.loads(res.stdout) == {"running": True}, res
        # plain HTTP to the TLS port is not answered as HTTP
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            c = http.client.HTTPConnection("127.0.0.1", b.port, timeout=10)
            c.request("GET", "/health")
            r = c.getresponse()
            assert r.status != 200
            raise ConnectionError("answered as HTTP, with an error")
    finally:
        b.stop()


def test_a_fleet_across_two_nodes_any_node_answers_for_any_sandbox(bridge, tmp_path):
    """Two fleets, a bridge each with the same --peers: every request through either node reaches
    the sandbox on the node that owns its id (the other fleet never has it), a new sandbox is
    made on its owner, and a peer that is down is a 502 that says so."""
    ports = [free_port(), free_port()]
    peers = ",".join(f"http://127.0.0.1:{p}" for p in ports)
    with fleet("--max", "16") as fb:
        a = Bridge(bridge.proc.args[2], tmp_path / "a", "--peers", peers, "--self", "0", port=ports[0])
        b = Bridge(fb.mnt, tmp_path / "b", "--peers", peers, "--self", "1", port=ports[1])
        mounts = [Path(bridge.proc.args[2]), fb.mnt]
        try:
            owners = {}
            # ids the rendezvous gives to each node, 4 each: the hash as peers.js has it
            peer_list = peers.split(",")
            weight = lambda peer, id: hashlib.sha256(f"{peer}\n{id}".encode()).digest()  # noqa: E731
            predicted = {f"spread{i}": max((weight(p, f"spread{i}"), n) for n, p in enumerate(peer_list))[1]
                         for i in range(64)}
            chosen = [k for k, v in predicted.items() if v == 0][:4] + [k for k, v in predicted.items() if v == 1][:4]
            for id in chosen:
                for node in (a, b):
                    status, ev = node.exec(id, ["sh", "-c", "echo $0", id])
                    assert status == 200 and output(ev, "stdout") == f"{id}\n".encode(), ev
                have = [(m / id).is_dir() for m in mounts]
                assert have.count(True) == 1, (id, have)
                owners[id] = have.index(True)
            assert owners == {id: predicted[id] for id in chosen}, owners
            # files, the tree and new sandboxes go to the owner too
            id = next(k for k, v in owners.items() if v == 1)
            assert a.call("PUT", f"/v1/sandbox/{id}/file/workspace/f", b"via a")[0] == 200
            assert b.call("GET", f"/v1/sandbox/{id}/fs/workspace/f")[2] == b"via a"
            assert (fb.mnt / id / "fs" / "workspace" / "f").read_bytes() == b"via a"
            answers = [a.json("POST", "/v1/sandbox") for _ in range(6)]
            assert all(status == 200 for status, _ in answers), answers
            made = [body["id"] for _, body in answers]
            assert all(sum((m / new).is_dir() for m in mounts) == 1 for new in made), made
            assert a.json("GET", f"/v1/sandbox/{made[0]}/running")[1] == {"running": True}
            # no token, no forwarding
            assert a.json("GET", f"/v1/sandbox/{id}/running", token=None)[0] == 401
            b.stop()
            status, body = a.json("GET", f"/v1/sandbox/{id}/running")
            assert status == 502 and "node did not answer" in body["error"], body
        finally:
            for node in (a, b):
                if node.proc.poll() is None:
                    node.stop()


@pytest.mark.parametrize("example", ["sdk-node.mjs", "sdk-python.py"])
def test_the_sdk_examples_run_over_http(bridge, example, tmp_path):
    """The seed's SDK examples, as written, with a sandbox's URL for the mount and the token in
    $SBXFS_TOKEN: the clients reach it through the bridge, and the same output comes back as on
    a mount (each prints its exec's exit code and output first)."""
    script = REPO_ROOT / "examples" / example
    url = f"{bridge.base}/v1/sandbox/sdk-{script.suffix[1:]}"
    argv = ["node", str(script), url] if script.suffix == ".mjs" else [str(script), url]
    env = dict(os.environ, SBXFS_TOKEN=ADMIN, PYTHONPATH=str(REPO_ROOT / "clients" / "python"))
    res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert res.returncode == 0, (res.stdout.decode(errors="replace")[-3000:],
                                 res.stderr.decode(errors="replace")[-3000:])
    assert res.stdout.split(b"\n")[0].startswith(b"0 hello from test"), res.stdout[:500]
    env.pop("SBXFS_TOKEN")
    res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    # no token: refused as a permission, as a mount's EACCES would be
    assert res.returncode != 0 and re.search(rb"PermissionDenied|EACCES", res.stderr + res.stdout), res


@pytest.mark.skipif(shutil.which("nginx", path="/usr/sbin:/usr/bin") is None,
                    reason="nginx is not installed (scripts/bootstrap --test installs nginx-light)")
def test_behind_nginx_as_the_recipe_says(bridge, tmp_path):
    """examples/nginx/sbxfs-bridge.conf as written (its listen port, certificate and upstream
    port changed only), in an nginx of the test's own: TLS there, an exec's events stream
    through as they come, a PUT and its read, a token refused, a PTY's WebSocket."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    port = free_port()
    recipe = (REPO_ROOT / "examples" / "nginx" / "sbxfs-bridge.conf").read_text()
    for old, new in (("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
                     ("/etc/ssl/sbxfs/cert.pem", str(cert)), ("/etc/ssl/sbxfs/key.pem", str(key)),
                     ("server 127.0.0.1:8024;", f"server 127.0.0.1:{bridge.port};")):
        assert old in recipe, old
        recipe = recipe.replace(old, new)
    (tmp_path / "logs").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log stderr;\nevents {{}}\n"
                    f"http {{\naccess_log off;\nclient_body_temp_path {tmp_path};\n"
                    f"proxy_temp_path {tmp_path};\n{recipe}\n}}\n")
    nginx = subprocess.Popen([shutil.which("nginx", path="/usr/sbin:/usr/bin"), "-p", str(tmp_path),
                              "-c", str(conf), "-g", "daemon off;"], stderr=subprocess.PIPE)
    try:
        wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 10, "nginx to listen")
        ctx = ssl.create_default_context(cafile=str(cert))
        base = f"https://127.0.0.1:{port}"
        h = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx)
        c.request("POST", "/v1/sandbox/ng/exec", body=json.dumps({"argv": ["sh", "-c", "echo first; sleep 1.5; echo second"]}),
                  headers=h)
        r = c.getresponse()
        t0 = time.monotonic()
        first = r.read1(4096)
        assert first.startswith(b"event: stdout"), first
        assert time.monotonic() - t0 < 1.2, "nginx held the stream"
        assert b'"exit_code":0' in r.read()
        c.close()
        put = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-X", "PUT", "-H", f"Authorization: Bearer {ADMIN}",
                              "--data-binary", "through nginx", f"{base}/v1/sandbox/ng/file/workspace/n.txt"],
                             capture_output=True, timeout=30)
        assert json.loads(put.stdout) == {"ok": True}, put
        got = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-H", f"Authorization: Bearer {ADMIN}",
                              f"{base}/v1/sandbox/ng/file/workspace/n.txt"], capture_output=True, timeout=30)
        assert got.stdout == b"through nginx"
        no = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-o", "/dev/null", "-w", "%{http_code}",
                             f"{base}/v1/sandbox/ng/running"], capture_output=True, timeout=30)
        assert no.stdout == b"401"
        script = tmp_path / "pty.mjs"
        script.write_text(f"""
import WebSocket from {json.dumps(str(WEB / 'node_modules' / 'ws' / 'wrapper.mjs'))};
import {{ readFileSync }} from 'node:fs';
const ws = new WebSocket('wss://127.0.0.1:{port}/v1/sandbox/ng/pty?cols=90&rows=20',
  {{ headers: {{ Authorization: 'Bearer {ADMIN}' }}, ca: readFileSync({json.dumps(str(cert))}) }});
let out = '';
ws.on('message', (d, binary) => {{
  if (!binary) {{ if (JSON.parse(d).type === 'ready') ws.send(Buffer.from('echo $((6*7))-$(tput cols)\\n')); return; }}
  out += d.toString();
  if (out.includes('42-90')) {{ console.log('found'); ws.close(); }}
}});
ws.on('unexpected-response', (req, res) => {{ console.log('refused ' + res.statusCode); process.exit(1); }});
ws.on('close', () => process.exit(0));
setTimeout(() => {{ console.log('timeout'); process.exit(1); }}, 15000);
""")
        res = subprocess.run(["node", str(script)], capture_output=True, timeout=30)
        assert res.stdout.strip() == b"found", res
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def docs_curls():
    """Every curl line of docs/api.md's Bridge section, in order: the examples of the routes'
    table and the code blocks."""
    text = (REPO_ROOT / "docs" / "api.md").read_text()
    text = text[text.index("## The Bridge API"):text.index("## The mount over SSH")]
    lines = []
    rows = iter(text.splitlines())
    for line in rows:
        if line.startswith("| `"):
            lines += re.findall(r"`(curl [^`]*)`", line)
        elif line.startswith("curl "):
            while line.endswith("\\"):  # a command continued on the next line
                line = line[:-1] + next(rows)
            lines.append(line.split("  #")[0].rstrip())
    return lines


def test_the_docs_curls_run_as_written(bridge, tmp_path):
    """docs/api.md's curls, with TOKEN, H and B set as it says: each exits 0 and answers no
    error but the 501 it documents for buckets and the pool."""
    (tmp_path / "main.py").write_text("print('from the docs')\n")
    env = dict(os.environ, TOKEN=ADMIN, H=f"Authorization: Bearer {ADMIN}",
               B=f"http://127.0.0.1:{bridge.port}/v1/sandbox")
    lines = docs_curls()
    assert len(lines) > 25, lines
    for line in lines:
        line = line.replace("127.0.0.1:8024", f"127.0.0.1:{bridge.port}")
        res = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, timeout=60)
        assert res.returncode == 0, (line, res.stderr)
        try:
            body = json.loads(res.stdout or b"{}")
        except ValueError:
            continue  # bytes, an event stream, a run number
        if isinstance(body, dict) and "code" in body:
            assert body["code"] in ("pool_error", "mount_error", "unmount_error"), (line, body)
    assert (tmp_path / "main.py").read_text() == "print('from the docs')\n"
    assert (tmp_path / "workspace.tar").stat().st_size >= 10240
