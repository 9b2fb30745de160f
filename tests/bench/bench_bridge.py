#!/usr/bin/python3
"""bench_bridge.py: sbxfs-bridge against the files and plain servers measured in the same run
(issue 32, item 6), with PASS/FAIL per target. As root, with $SBXFS_BIN (else build/sbxfs of
this checkout) and sbxfs-fleet next to it, node, and curl:

  exec     COUNT commands (`true`) in one sandbox through POST /v1/sandbox/ID/exec (the whole
           event stream, one kept-alive connection), against the same command through the files
           of the same sandbox (cmd written, exit read) (target: median overhead <= 1 ms)
  files    a SIZE file PUT to and GET from /v1/sandbox/ID/file/workspace/big with curl, against
           curl PUT and GET of the same bytes with a plain Node server that streams a request
           body to a file and a file to a response (target: each >= 0.8x the plain server)
  stream   the exec event stream of `head -c SIZE /dev/zero` (base64 on the wire, decoded by
           the reader), against the same bytes through a pipe (target: >= 0.5x the pipe)

usage: tests/bench/bench_bridge.py [--count N] [--size MIB]
"""

import argparse
import binascii
import http.client
import json
import os
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


def sse_exec(conn, id, argv, sink=None):
    """Runs argv over the API on conn; the exit code. stdout's bytes go to sink(bytes)."""
    conn.request("POST", f"/v1/sandbox/{id}/exec", body=json.dumps({"argv": argv}),
                 headers={**AUTH, "Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    code = None
    buf = bytearray()
    while True:
        chunk = r.read1(1 << 20)
        if not chunk:
            break
        buf += chunk
        start = 0
        while (end := buf.find(b"\n\n", start)) >= 0:
            block = bytes(buf[start:end])
            start = end + 2
            head, _, data = block.partition(b"\n")
            if head == b"event: stdout" and sink:
                sink(binascii.a2b_base64(data[6:]))
            elif head == b"event: exit":
                code = json.loads(data[6:])["exit_code"]
        del buf[:start]
    return code


def files_exec(mnt):
    s = mnt / "sessions" / "default"
    with open(s / "cmd", "w") as f:
        f.write("true\n")
    with open(s / "exit") as f:
        assert f.read() == "0\n"


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

            api, fs = [], []
            for _ in range(args.count):
                t0 = time.perf_counter()
                files_exec(box)
                fs.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                assert sse_exec(conn, "b", ["true"]) == 0
                api.append(time.perf_counter() - t0)
            mf, ma = statistics.median(fs) * 1000, statistics.median(api) * 1000
            print(f"exec through the files: median {mf:.2f} ms; through the API: median {ma:.2f} ms")
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

            got = [0]
            # a new connection: the server has closed the kept one, idle through the file part
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            t0 = time.perf_counter()
            assert sse_exec(conn, "b", ["head", "-c", str(size), "/dev/zero"],
                            lambda b: got.__setitem__(0, got[0] + len(b))) == 0
            t_sse = time.perf_counter() - t0
            assert got[0] == size, got
            t0 = time.perf_counter()
            subprocess.run(f"head -c {size} /dev/zero | cat > /dev/null", shell=True, check=True)
            t_pipe = time.perf_counter() - t0
            print(f"stream {mib} MiB: SSE {mib / t_sse:.0f} MiB/s, pipe {mib / t_pipe:.0f} MiB/s")
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
