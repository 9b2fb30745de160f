#!/usr/bin/python3
"""bench_network.py: a download through the sandbox's proxy against the same download direct.

Starts an HTTP server on the host's loopback that sends SIZE bytes (default 1 GiB) of a sparse
file with sendfile, mounts a fresh sbxfs (binary: $SBXFS_BIN, else build/sbxfs of this checkout)
with network = filtered and a rule allowing that one server (`allow 127.0.0.1:PORT private`),
then measures in one run, each the best of N (default 3):

  direct:   curl on the host, to the server;
  proxy:    curl in a session, through the proxy as a plain HTTP request (HTTP_PROXY);
  tunnel:   the same through a CONNECT tunnel (curl -p), as HTTPS clients use it;

and prints the throughputs and the ratios (proxy / direct; the target is at least 0.8). Every
download is checked for its size. Needs root; unmounts at the end; a watchdog kills the daemon
if a step hangs.

usage: tests/bench/bench_network.py [--size BYTES] [--runs N]
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import Mount, read_to_eof, sbxfs_binary, start_watchdog, \
    write_file  # noqa: E402

WATCHDOG_SECONDS = 300


def serve(sock, path, size):
    """Answers each connection with SIZE bytes of path, then closes it."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=answer, args=(conn, path, size), daemon=True).start()


def answer(conn, path, size):
    with conn, open(path, "rb") as f:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        sent = 0
        while sent < size:
            n = conn.sendfile(f, sent, size - sent)
            if not n:
                break
            sent += n


def run_cmd(m, cmd):
    s = m.mnt / "sessions" / "default"
    write_file(s / "cmd", cmd.encode())
    out = read_to_eof(str(s / "stdout")).decode()
    code = int(read_to_eof(str(s / "exit")))
    if code:
        sys.exit(f"{cmd!r} exited {code}: {out}\n{read_to_eof(str(s / 'stderr')).decode()}")
    return out


CURL = "curl -sS --noproxy '' -o /dev/null -w '%{size_download} %{time_total}\\n'"


def measure(line, size):
    got, secs = line.split()
    if int(got) != size:
        sys.exit(f"downloaded {got} bytes, not {size}")
    return size / float(secs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sbxfs-bench-net-"))
    data = tmp / "data"
    with open(data, "wb") as f:
        f.truncate(args.size)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    threading.Thread(target=serve, args=(sock, data, args.size), daemon=True).start()
    url = f"http://127.0.0.1:{port}/data"
    (tmp / "m").mkdir()
    m = Mount(sbxfs_binary(), tmp=tmp / "m", extra=(
        "-o", f"network=filtered,network.allow=127.0.0.1:{port} private"))
    watchdog = start_watchdog(WATCHDOG_SECONDS, m.proc)
    try:
        results = {"direct": [], "proxy": [], "tunnel": []}
        for _ in range(args.runs):
            line = subprocess.run(["sh", "-c", f"{CURL} {url}"], capture_output=True,
                                  text=True, check=True).stdout
            results["direct"].append(measure(line, args.size))
            line = run_cmd(m, f'{CURL} -x "$HTTP_PROXY" {url}')
            results["proxy"].append(measure(line, args.size))
            line = run_cmd(m, f'{CURL} -p -x "$HTTP_PROXY" {url}')
            results["tunnel"].append(measure(line, args.size))
        best = {k: max(v) for k, v in results.items()}
        print(f"download of {args.size} bytes, best of {args.runs}:")
        for k in ("direct", "proxy", "tunnel"):
            print(f"  {k:7s} {best[k] / 1e6:8.0f} MB/s")
        print(f"ratio proxy/direct {best['proxy'] / best['direct']:.2f}, "
              f"tunnel/direct {best['tunnel'] / best['direct']:.2f} (target >= 0.8)")
    finally:
        watchdog.cancel()
        m.close()
        sock.close()
        data.unlink()


if __name__ == "__main__":
    main()
