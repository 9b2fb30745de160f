#!/usr/bin/python3
"""bench_bridge.py: sbxfs-bridge against the files and plain servers measured in the same run
(issue 32, item 6), with PASS/FAIL per target. As root, with $SBXFS_BIN (else build/sbxfs of
this checkout) and sbxfs-fleet next to it, node, and curl:

  exec     COUNT commands (`true`) in one sandbox through POST /v1/sandbox/ID/exec (the whole
           event stream, one kept-alive connection), against the same command through the files
           of the same sandbox (cmd written, exit read), in turns (target: median overhead
           <= 1 ms). The API's client is a minimal HTTP/1.1 one (the request's bytes made once,
           the answer's head and chunks parsed by hand): http.client's own parsing adds about
           0.3 ms, which is Python's, not the API's; its figure is printed too
  files    a SIZE file PUT to and GET from /v1/sandbox/ID/file/workspace/big with curl, against
           curl PUT and GET of the same bytes with a plain Node server that streams a request
           body to a file and a file to a response (target: each >= 0.8x the plain server)
  stream   the exec event stream of `head -c SIZE /dev/zero`, read and decoded by
           sse_reader.mjs (Node: Python's base64 decoder, at about 300 MB/s, would measure
           itself), against the same bytes through a pipe (target: >= 0.5x the pipe); also the
           same command's stdout read through the mount by cat while it runs, the ceiling of a
           stream that reads the mount, as the API does. Median of 3 each, in turns

usage: tests/bench/bench_bridge.py [--count N] [--size MIB]
"""

import argparse
import http.client
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SBXFS = Path(os.environ.get("SBXFS_BIN", REPO / "build" / "sbxfs")).resolve()
FLEET = SBXFS.parent / "sbxfs-fleet"
BRIDGE = REPO / "clients" / "node" / "web" / "bridge" / "bin" / "sbxfs-bridge.js"
SSE_READER = Path(__file__).resolve().parent / "sse_reader.mjs"
SECRET = "bench-secret-0123456789"
AUTH = {"Authorization": f"Bearer {SECRET}"}

PLAIN_SERVER = r"""
const http = require('http'), fs = require('fs');
const file = process.argv[1];
const s = http.createServer((req, res) => {
  if (req.method === 'PUT') {
    const out = fs.createWriteStream(file);
    req.pipe(out);
    out.on('finish', () => res.end('{"ok":true}'));
  } else {
    res.writeHead(200, { 'Content-Length': fs.statSync(file).size });
    fs.createReadStream(file).pipe(res);
  }
});
s.listen(0, '127.0.0.1', () => console.log(s.address().port));
"""


def report(name, value, target, ok):
    print(f"{name:<40} {value:>14}   target {target:<24} {'PASS' if ok else 'FAIL'}")
    return ok


def wait_for(path, what, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if path.read_bytes().startswith(b"sandboxes "):
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"{what} did not come up")


def sse_exec(conn, id, argv):
    """Runs argv over the API on conn (http.client); its exit code."""
    conn.request("POST", f"/v1/sandbox/{id}/exec", body=json.dumps({"argv": argv}),
                 headers={**AUTH, "Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    m = re.search(rb'event: exit\ndata: {"exit_code":(\d+)}', r.read())
    return int(m.group(1)) if m else None


class RawExec:
    """One exec request, made once, sent again and again on a kept-alive socket; its answer's
    head and chunked body read by hand."""

    def __init__(self, port, id, argv):
        body = json.dumps({"argv": argv}).encode()
        self.request = (f"POST /v1/sandbox/{id}/exec HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        f"Authorization: Bearer {SECRET}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def __call__(self):
        """The answer's body."""
        self.sock.sendall(self.request)
        status = self.file.readline()
        assert status.startswith(b"HTTP/1.1 200 "), status
        while self.file.readline() != b"\r\n":
            pass
        body = b""
        while (n := int(self.file.readline(), 16)) > 0:
            body += self.file.read(n)
            self.file.readline()
        self.file.readline()
        return body


def files_exec(mnt):
    s = mnt / "sessions" / "default"
    with open(s / "cmd", "w") as f:
        f.write("true\n")
    with open(s / "exit") as f:
        assert f.read() == "0\n"


def mount_stream(mnt, size):
    """Seconds for `head -c size /dev/zero` submitted on the files and its stdout read by cat
    through the mount while it runs."""
    s = mnt / "sessions" / "default"
    t0 = time.perf_counter()
    with open(s / "cmd", "r+") as f:
        f.write(f"head -c {size} /dev/zero\n")
        f.flush()
        n = int(f.readline())
    stdout = s / "runs" / str(n) / "stdout"
    subprocess.run(["cat", str(stdout)], stdout=subprocess.DEVNULL, check=True)
    t = time.perf_counter() - t0
    assert stdout.stat().st_size == size
    return t


def cpu_seconds(pid):
    """User and system CPU seconds of a live process, its threads included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def sandbox_daemon(state, id):
    """The pid of sandbox id's sbxfs daemon, found by its config's path in its command line."""
    ini = str(state / "sandboxes" / id / "sbxfs.ini").encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if ini in f.read().split(b"\0"):
                    return int(pid)
        except OSError:
            pass
    sys.exit(f"no daemon with {ini.decode()}")


def curl_time(args):
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{time_total}", *args],
                         capture_output=True, check=True, text=True)
    return float(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--size", type=int, default=1024, help="MiB")
    args = ap.parse_args()
    size = args.size << 20
    ok = True
    with tempfile.TemporaryDirectory(prefix="sbxfs-bench-bridge-") as tmp:
        tmp = Path(tmp)
        mnt = tmp / "fleet"
        fleet = subprocess.Popen([str(FLEET), "--state-dir", str(tmp / "state"), str(mnt)],
                                 stdout=subprocess.DEVNULL, stderr=open(tmp / "fleet.log", "wb"))
        bridge = plain = None
        try:
            wait_for(mnt / "status", "the fleet")
            tokens = tmp / "tokens"
            tokens.write_text(f"bench * {SECRET}\n")
            tokens.chmod(0o600)
            bridge = subprocess.Popen(["node", str(BRIDGE), str(mnt), "--tokens", str(tokens),
                                       "--listen", "127.0.0.1:0", "--rate", "100000",
                                       "--max-body", str(size + 1)],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            port = int(bridge.stdout.readline().decode().rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            assert sse_exec(conn, "b", ["true"]) == 0  # made on first use
            box = mnt / "b" / "fs"

            raw = RawExec(port, "b", ["true"])
            api, fs, hc = [], [], []
            for _ in range(args.count):
                t0 = time.perf_counter()
                files_exec(box)
                fs.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                assert raw().endswith(b'event: exit\ndata: {"exit_code":0}\n\n')
                api.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                assert sse_exec(conn, "b", ["true"]) == 0
                hc.append(time.perf_counter() - t0)
            mf, ma, mh = (statistics.median(x) * 1000 for x in (fs, api, hc))
            print(f"exec through the files: median {mf:.2f} ms; through the API: median {ma:.2f} ms "
                  f"(with http.client: {mh:.2f} ms, {mh - mf:.2f} ms over the files)")
            ok &= report("exec: API overhead (median)", f"{ma - mf:.2f} ms", "<= 1 ms", ma - mf <= 1)

            src = tmp / "src"
            with open(src, "wb") as f:
                f.truncate(0)
                block = os.urandom(1 << 20)
                for _ in range(args.size):
                    f.write(block)
            plain_file = tmp / "plain"
            plain = subprocess.Popen(["node", "-e", PLAIN_SERVER, str(plain_file)], stdout=subprocess.PIPE)
            pport = int(plain.stdout.readline())
            hdr = ["-H", f"Authorization: Bearer {SECRET}"]
            url = f"http://127.0.0.1:{port}/v1/sandbox/b/file/workspace/big"
            t_put = curl_time([*hdr, "-T", str(src), url])
            t_get = curl_time([*hdr, url])
            p_put = curl_time(["-T", str(src), f"http://127.0.0.1:{pport}/f"])
            p_get = curl_time([f"http://127.0.0.1:{pport}/f"])
            mib = args.size
            print(f"PUT {mib} MiB: bridge {mib / t_put:.0f} MiB/s, plain server {mib / p_put:.0f} MiB/s")
            print(f"GET {mib} MiB: bridge {mib / t_get:.0f} MiB/s, plain server {mib / p_get:.0f} MiB/s")
            ok &= report("files: PUT against the plain server", f"{p_put / t_put:.2f}x", ">= 0.8x", p_put / t_put >= 0.8)
            ok &= report("files: GET against the plain server", f"{p_get / t_get:.2f}x", ">= 0.8x", p_get / t_get >= 0.8)
            (box / "workspace" / "big").unlink()

            t_sse, t_pipe, t_mount = [], [], []
            daemon = sandbox_daemon(tmp / "state", "b")
            cpu = {"the bridge": 0.0, "the reader": 0.0, "the sandbox's daemon": 0.0}
            for _ in range(3):
                before = cpu_seconds(bridge.pid), cpu_seconds(daemon), children_cpu()
                out = subprocess.run(["node", str(SSE_READER), str(port), "b", SECRET, str(size)],
                                     capture_output=True, text=True, check=True)
                cpu["the bridge"] += cpu_seconds(bridge.pid) - before[0]
                cpu["the sandbox's daemon"] += cpu_seconds(daemon) - before[1]
                cpu["the reader"] += children_cpu() - before[2]
                r = json.loads(out.stdout)
                assert (r["status"], r["bytes"], r["exit"], r["nonzero"]) == (200, size, 0, 0), r
                t_sse.append(r["seconds"])
                t0 = time.perf_counter()
                subprocess.run(f"head -c {size} /dev/zero | cat > /dev/null", shell=True, check=True)
                t_pipe.append(time.perf_counter() - t0)
                t_mount.append(mount_stream(box, size))
            t_sse, t_pipe, t_mount = (statistics.median(x) for x in (t_sse, t_pipe, t_mount))
            print(f"stream {mib} MiB: SSE {mib / t_sse:.0f} MiB/s, pipe {mib / t_pipe:.0f} MiB/s; "
                  f"the mount's own stdout while it runs {mib / t_mount:.0f} MiB/s "
                  f"({t_pipe / t_mount:.2f}x the pipe; the SSE stream is {t_mount / t_sse:.2f}x it)")
            gib = 3 * size / (1 << 30)
            print("CPU seconds per GiB of the SSE stream: " +
                  ", ".join(f"{k} {v / gib:.2f}" for k, v in cpu.items()) +
                  f" (the command and the kernel's own work besides; this machine has {os.cpu_count()} CPUs)")
            ok &= report("stream: SSE against the pipe", f"{t_pipe / t_sse:.2f}x", ">= 0.5x", t_pipe / t_sse >= 0.5)
        finally:
            for p in (plain, bridge):
                if p:
                    p.terminate()
                    p.wait()
            fleet.terminate()
            fleet.wait(timeout=60)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
