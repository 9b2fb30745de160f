"""Exposed ports: ports/ at the mount's root (mkdir PORT, ports/expose, PORT/url, address, port,
name, status, rmdir), reached from the host through the daemon's relay into the sandbox's
network namespace: HTTP, a WebSocket kept open, a 100 MiB echo with a half-close, 200
connections at once, the bounds, and rmdir with a connection open.

The servers are small Python programs run as background processes (procs/); every wait is on
their `ready` file or on a bounded socket call. Under --isolation none the sandbox has the
host's network: an exposure is then the port itself (relayed no), and the tests of the relay
alone are skipped.
"""

import base64
import errno
import hashlib
import os
import random
import socket
import statistics
import struct
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from sbxutil import (Background, ConfMount, bounded, errname, errno_of, free_port,
                     isolation_none, parse_status, put_script, read_bytes, sh, started,
                     stopped_cleanly, uniq, wait_until, write_bytes, write_errno)

MAX_PORTS = 6
RELAYED = not isolation_none()
needs_relay = pytest.mark.skipif(not RELAYED, reason="--isolation none: no relay")

SERVERS = r'''
import base64, hashlib, http.server, socket, socketserver, struct, sys, threading

mode, port = sys.argv[1], int(sys.argv[2])
host = sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1"

class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512
    address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

class Echo(socketserver.BaseRequestHandler):
    """Echoes until EOF, then ends its own side: a half-close passes both ways."""
    def handle(self):
        while True:
            data = self.request.recv(1 << 16)
            if not data:
                break
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

class WebSocket(socketserver.StreamRequestHandler):
    """The handshake, then every text or binary frame echoed; a close frame answered."""
    def handle(self):
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            byte = self.rfile.read(1)
            if not byte:
                return
            head += byte
        key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
               if l.lower().startswith(b"sec-websocket-key:")][0]
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        while True:
            hdr = self.rfile.read(2)
            if len(hdr) < 2:
                return
            op, n = hdr[0] & 0x0F, hdr[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if hdr[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            self.wfile.write(frame(op, data))
            if op == 8:
                return

def frame(op, data):
    n = len(data)
    size = bytes([n]) if n < 126 else bytes([126]) + struct.pack("!H", n)
    return bytes([0x80 | op]) + size + data

class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

handler = {"echo": Echo, "ws": WebSocket, "http": Quiet}[mode]
Server((host, port), handler).serve_forever()
'''


@pytest.fixture(scope="module")
def sbx():
    """The module's sbxfs: at most MAX_PORTS exposed ports."""
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-ports-"),
                          f"[network]\nexpose_max_ports = {MAX_PORTS}\n"))
    try:
        yield m
    finally:
        stopped_cleanly(m, "ports' sbxfs")


@pytest.fixture(scope="module")
def servers(sbx):
    """The servers' script, as the sandbox sees it."""
    return put_script(sbx, SERVERS)


@pytest.fixture(autouse=True)
def _no_ports_left(request):
    """Each test starts with nothing exposed on the module's mount."""
    yield
    if "sbx" in request.fixturenames:
        ports = request.getfixturevalue("sbx").mnt / "ports"
        for name in os.listdir(ports):
            if name != "expose":
                bounded(os.rmdir, ports / name)


# --- helpers -----------------------------------------------------------------------------------


def sandbox_port():
    """A port for a server in the sandbox: free on the host too, for --isolation none."""
    return free_port()


def serve(m, script, mode, port, host="127.0.0.1"):
    """Starts `python3 SCRIPT MODE PORT HOST` as a background process of the default session;
    returns its directory once it listens."""
    return start(m, f"exec python3 {script} {mode} {port} {host}", port)


def start(m, cmd, port):
    """Starts cmd as a background process of the default session, a server of port; returns
    its directory once it listens."""
    p = m.sessions / "default" / "procs" / uniq("srv")
    bounded(os.mkdir, p)
    write_bytes(p / "cmd", cmd)
    ready = read_bytes(p / "ready", timeout=20)
    assert ready == f"{port}\n".encode(), (ready, read_bytes(p / "stderr", timeout=5))
    return p


def expose(m, port):
    """mkdir ports/PORT; the (host, port) its url names."""
    bounded(os.mkdir, m.mnt / "ports" / str(port))
    return host_addr(m, port)


def host_addr(m, port):
    d = m.mnt / "ports" / str(port)
    address = read_bytes(d / "address", timeout=5).decode().strip()
    host_port = int(read_bytes(d / "port", timeout=5))
    url = read_bytes(d / "url", timeout=5).decode()
    assert url == f"http://{address}:{host_port}/\n", url
    return address, host_port


def port_status(m, port):
    return parse_status(read_bytes(m.mnt / "ports" / str(port) / "status", timeout=5))


def connect(addr, timeout=10):
    return socket.create_connection(addr, timeout=timeout)


def recv_exactly(sock, n):
    chunks, got = [], 0
    while got < n:
        b = sock.recv(min(1 << 20, n - got))
        if not b:
            raise EOFError(f"EOF after {got} of {n} bytes")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def ended(sock):
    """True once the peer ended the connection (EOF or a reset); waits at most the timeout."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def turned_away(addr):
    """A connection to addr is reset (at once: even the connect may see it) or ended."""
    try:
        sock = connect(addr)
    except ConnectionResetError:
        return True
    with sock:
        return ended(sock)


def refused(addr):
    try:
        socket.create_connection(addr, timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def ws_open(addr):
    """A WebSocket client connection: the handshake done, its accept key checked."""
    sock = connect(addr)
    key = base64.b64encode(os.urandom(16))
    sock.sendall(b"GET /chat HTTP/1.1\r\nHost: sandbox\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: " + key + b"\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += recv_exactly(sock, 1)
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                              .digest())
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert b"Sec-WebSocket-Accept: " + accept in head, head
    return sock


def ws_send(sock, data, op=1):
    mask = os.urandom(4)
    n = len(data)
    size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack("!H", n)
    sock.sendall(bytes([0x80 | op]) + size + mask +
                 bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def ws_recv(sock):
    hdr = recv_exactly(sock, 2)
    n = hdr[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", recv_exactly(sock, 2))[0]
    return hdr[0] & 0x0F, recv_exactly(sock, n)


def neighbour_echo(m, other, stop):
    """Times of `echo alive` in session `other` until stop() says so (at least one)."""
    times = []
    while not times or not stop():
        t0 = time.monotonic()
        assert sh(m, other, "echo alive", timeout=20) == ("alive\n", "", 0)
        times.append(time.monotonic() - t0)
    return times


def summary(times):
    return (f"n={len(times)} median={statistics.median(times) * 1000:.1f} ms "
            f"max={max(times) * 1000:.1f} ms")


# --- ports/ as files ---------------------------------------------------------------------------


def test_ports_directory_lists_expose_and_each_port(sbx):
    ports = sbx.mnt / "ports"
    assert "ports" in os.listdir(sbx.mnt)
    assert os.listdir(ports) == ["expose"]
    a, b, c = sandbox_port(), sandbox_port(), sandbox_port()
    expose(sbx, a)
    write_bytes(ports / "expose", f"{b}\n", flags=os.O_WRONLY)
    # As a shell's `>` opens it (O_TRUNC): the close has nothing to apply, and says nothing.
    write_bytes(ports / "expose", f"{c}\n")
    bounded(os.rmdir, ports / str(c))
    assert sorted(os.listdir(ports)) == sorted(["expose", str(a), str(b)])
    assert sorted(os.listdir(ports / str(a))) == ["address", "name", "port", "status", "url"]
    st = parse_status(read_bytes(ports / str(a) / "status", timeout=5))
    address, host_port = host_addr(sbx, a)
    assert st["port"] == str(a) and st["url"] == f"http://{address}:{host_port}/"
    assert st["relayed"] == ("yes" if RELAYED else "no")
    assert (st["connections"], st["accepted"], st["refused"]) == ("0", "0", "0")
    if RELAYED:
        assert address == "127.0.0.1" and host_port != a
    else:
        assert (address, host_port) == ("127.0.0.1", a)
    bounded(os.rmdir, ports / str(a))
    assert sorted(os.listdir(ports)) == sorted(["expose", str(b)])
    assert not os.path.exists(ports / str(a) / "url")


def test_bad_names_and_errors(sbx):
    ports = sbx.mnt / "ports"
    for name in ["0", "65536", "99999", "abc", "080", "-1", "+80", " 80", "80 ", "1e3"]:
        assert errno_of(os.mkdir, ports / name) == errno.EINVAL, name
    for text in ["0\n", "65536", "abc\n", "080", "80 80\n", "\n"]:
        assert write_errno(ports / "expose", text, flags=os.O_WRONLY) == errno.EINVAL, text
    port = sandbox_port()
    expose(sbx, port)
    assert errno_of(os.mkdir, ports / str(port)) == errno.EEXIST
    assert write_errno(ports / "expose", f"{port}\n", flags=os.O_WRONLY) == errno.EEXIST
    assert errno_of(os.mkdir, ports / "expose") == errno.EEXIST
    assert errno_of(os.mkdir, ports / str(port) / "x") == errno.EPERM
    assert errno_of(os.rmdir, ports / "expose") == errno.ENOTDIR
    assert errno_of(os.rmdir, ports / "1") == errno.ENOENT
    assert errno_of(os.rmdir, ports / "abc") == errno.ENOENT
    assert errno_of(os.open, ports / str(port) / "url", os.O_WRONLY) == errno.EACCES
    assert errno_of(os.open, ports / "expose", os.O_RDONLY) == errno.EACCES
    assert errno_of(os.unlink, ports / str(port) / "url") == errno.EPERM


def test_the_port_cap_gives_enospc(sbx):
    ports = [sandbox_port() for _ in range(MAX_PORTS + 1)]
    for p in ports[:MAX_PORTS]:
        expose(sbx, p)
    assert errno_of(os.mkdir, sbx.mnt / "ports" / str(ports[-1])) == errno.ENOSPC
    assert write_errno(sbx.mnt / "ports" / "expose", str(ports[-1]),
                       flags=os.O_WRONLY) == errno.ENOSPC
    bounded(os.rmdir, sbx.mnt / "ports" / str(ports[0]))
    expose(sbx, ports[-1])


def test_name_file(sbx):
    port = sandbox_port()
    expose(sbx, port)
    name = sbx.mnt / "ports" / str(port) / "name"
    assert read_bytes(name, timeout=5) == b""
    write_bytes(name, "web app\n")
    assert read_bytes(name, timeout=5) == b"web app\n"
    assert port_status(sbx, port)["name"] == "web app"
    for bad in ["a\tb\n", "a\nb\n", "x" * 129, "\x1b[31m"]:
        assert write_errno(name, bad) == errno.EINVAL, repr(bad)
    assert read_bytes(name, timeout=5) == b"web app\n"
    write_bytes(name, "")
    assert read_bytes(name, timeout=5) == b""
    assert "name" not in port_status(sbx, port)


# --- through the relay -------------------------------------------------------------------------


def test_http_server_fetched_from_the_host_then_unexposed(sbx):
    port = sandbox_port()
    site = uniq("site")
    (sbx.ws / site).mkdir()
    body = os.urandom(300_000)
    (sbx.ws / site / "blob.bin").write_bytes(body)
    proc = start(sbx, f"exec python3 -m http.server --directory {sbx.cmd_ws}/{site} "
                 f"--bind 127.0.0.1 {port}", port)
    try:
        addr = expose(sbx, port)
        url = read_bytes(sbx.mnt / "ports" / str(port) / "url", timeout=5).decode().strip()
        with bounded(urllib.request.urlopen, url + "blob.bin", timeout=10) as r:
            assert r.status == 200 and r.read() == body
        st = port_status(sbx, port)
        assert st["accepted"] == ("1" if RELAYED else "0") and st["refused"] == "0"
        bounded(os.rmdir, sbx.mnt / "ports" / str(port))
        if RELAYED:
            assert refused(addr), "the host port still answers after rmdir"
    finally:
        bounded(os.rmdir, proc)


@needs_relay
def test_nothing_listening_inside_resets_the_connection(sbx):
    port = sandbox_port()
    addr = expose(sbx, port)
    assert bounded(turned_away, addr)
    wait_until(lambda: port_status(sbx, port)["refused"] == "1", 5, "the refusal counted")
    assert port_status(sbx, port)["accepted"] == "0"


def test_websocket_kept_open_while_other_requests_go_through(sbx, servers):
    ws_port, http_port = sandbox_port(), sandbox_port()
    # IPv6 loopback only: the relay tries [::1] when 127.0.0.1 refuses
    ws = serve(sbx, servers, "ws", ws_port, host="::1")
    web = start(sbx, f"exec python3 -m http.server --bind 127.0.0.1 {http_port}", http_port)
    try:
        ws_addr, web_addr = expose(sbx, ws_port), expose(sbx, http_port)
        if not RELAYED:
            ws_addr = ("::1", ws_port)
        sock = bounded(ws_open, ws_addr)
        with sock:
            for msg in [b"hello", b"x" * 1000, "h\u00e9llo w\u00f6rld".encode()]:
                ws_send(sock, msg)
                assert bounded(ws_recv, sock) == (1, msg)
            for _ in range(5):
                with bounded(urllib.request.urlopen, f"http://{web_addr[0]}:{web_addr[1]}/",
                             timeout=10) as r:
                    assert r.status == 200
            if RELAYED:
                assert port_status(sbx, ws_port)["connections"] == "1"
            ws_send(sock, b"still here", op=2)
            assert bounded(ws_recv, sock) == (2, b"still here")
            ws_send(sock, b"", op=8)
            assert bounded(ws_recv, sock) == (8, b"")
            assert bounded(ended, sock)
        if RELAYED:
            wait_until(lambda: port_status(sbx, ws_port)["connections"] == "0", 5,
                       "the closed WebSocket to leave the relay")
    finally:
        bounded(os.rmdir, ws)
        bounded(os.rmdir, web)


def test_100mib_echo_with_half_close_and_a_neighbour_answering(sbx, servers):
    port = sandbox_port()
    proc = serve(sbx, servers, "echo", port)
    other = sbx.new_session()
    try:
        addr = expose(sbx, port)
        block = random.Random(25).randbytes(1 << 20)
        total = 100 << 20
        sent, got = hashlib.sha256(), hashlib.sha256()
        sock = connect(addr, timeout=30)

        def send_all():
            for i in range(total >> 20):
                chunk = struct.pack("!Q", i) + block[8:]
                sent.update(chunk)
                sock.sendall(chunk)
            sock.shutdown(socket.SHUT_WR)

        def recv_all():
            n = 0
            while True:
                b = sock.recv(1 << 20)
                if not b:
                    return n
                got.update(b)
                n += len(b)

        t0 = time.monotonic()
        writer, reader = Background(send_all), Background(recv_all)
        times = neighbour_echo(sbx, other, reader.done)
        writer.result(60)
        n = reader.result(60)
        dt = time.monotonic() - t0
        sock.close()
        assert n == total and got.hexdigest() == sent.hexdigest()
        print(f"\n100 MiB echoed through the exposed port in {dt:.2f} s "
              f"({2 * total / dt / 2**20:.0f} MiB/s both ways); neighbour echo {summary(times)}")
        assert max(times) < 2.0, f"a neighbour's echo took {max(times):.2f} s"
    finally:
        bounded(os.rmdir, proc)
        bounded(os.rmdir, other)


def test_200_connections_at_once_all_served(sbx, servers):
    port = sandbox_port()
    (sbx.ws / "hello.txt").write_text("hello\n")
    proc = serve(sbx, servers, "http", port)
    other = sbx.new_session()
    try:
        addr = expose(sbx, port)
        results = []
        lock = threading.Lock()
        gate = threading.Barrier(200)

        def one():
            gate.wait()
            try:
                with socket.create_connection(addr, timeout=30) as s:
                    s.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
                    data = b""
                    while (b := s.recv(65536)):
                        data += b
                outcome = "ok" if data.endswith(b"\r\n\r\nhello\n") else f"bad {data[:60]!r}"
            except (ConnectionResetError, ConnectionRefusedError) as exc:
                outcome = type(exc).__name__
            with lock:
                results.append(outcome)

        threads = [threading.Thread(target=one, daemon=True) for _ in range(200)]
        for t in threads:
            t.start()
        times = neighbour_echo(sbx, other, lambda: not any(t.is_alive() for t in threads))
        for t in threads:
            t.join(60)
        counts = {k: results.count(k) for k in set(results)}
        print(f"\n200 connections at once: {counts}; neighbour echo {summary(times)}")
        assert len(results) == 200 and counts.get("ok") == 200, counts
        assert max(times) < 2.0, f"a neighbour's echo took {max(times):.2f} s"
        if RELAYED:
            wait_until(lambda: port_status(sbx, port)["connections"] == "0", 10,
                       "every connection to leave the relay")
            assert port_status(sbx, port)["accepted"] == "200"
    finally:
        bounded(os.rmdir, proc)
        bounded(os.rmdir, other)


@needs_relay
def test_rmdir_resets_an_open_connection(sbx, servers):
    port = sandbox_port()
    proc = serve(sbx, servers, "echo", port)
    try:
        addr = expose(sbx, port)
        with connect(addr) as sock:
            sock.sendall(b"ping")
            assert bounded(recv_exactly, sock, 4) == b"ping"
            t0 = time.monotonic()
            bounded(os.rmdir, sbx.mnt / "ports" / str(port))
            assert bounded(ended, sock)
            assert time.monotonic() - t0 < 5
        assert refused(addr)
        # the server inside is untouched: exposed again, it answers
        with connect(expose(sbx, port)) as sock:
            sock.sendall(b"again")
            assert bounded(recv_exactly, sock, 5) == b"again"
    finally:
        bounded(os.rmdir, proc)


# --- own mounts --------------------------------------------------------------------------------


@needs_relay
def test_the_connection_cap_resets_past_it_and_the_relay_survives_a_launcher_restart():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-ports-cap-"),
                          "[network]\nexpose_max_connections = 3\n"))
    try:
        script = put_script(m, SERVERS)
        port = sandbox_port()
        serve(m, script, "echo", port)
        addr = expose(m, port)
        open_ = []
        for i in range(3):
            s = connect(addr)
            s.sendall(b"%d" % i)
            assert bounded(recv_exactly, s, 1) == b"%d" % i
            open_.append(s)
        assert bounded(turned_away, addr)
        st = port_status(m, port)
        assert (st["connections"], st["accepted"], st["refused"]) == ("3", "3", "1")
        open_.pop().close()
        wait_until(lambda: port_status(m, port)["connections"] == "2", 5, "a slot to free")
        with connect(addr) as s:
            s.sendall(b"z")
            assert bounded(recv_exactly, s, 1) == b"z"
        for s in open_:
            s.close()
        # a new launcher is a new network namespace: the exposure follows it
        launcher = [p for p in os.listdir("/proc") if p.isdigit() and _launcher_of(m, int(p))]
        assert len(launcher) == 1, launcher
        os.kill(int(launcher[0]), 9)
        wait_until(lambda: "the launcher died" in m.daemon_log(), 10, "the launcher's death")
        assert sh(m, m.sessions / "default", "echo up", timeout=20) == ("up\n", "", 0)
        serve(m, script, "echo", port)
        with connect(addr) as s:
            s.sendall(b"new")
            assert bounded(recv_exactly, s, 3) == b"new"
    finally:
        stopped_cleanly(m, "capped ports' sbxfs")


def _launcher_of(m, pid):
    """pid is mount m's launcher: sbxfs-launcher's program, below m's daemon, with its holder
    below it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if not f.read().split(b"\0")[0].endswith(b"launcher"):
                return False
        with open(f"/proc/{pid}/status") as f:
            ppid = int(next(l for l in f if l.startswith("PPid:")).split()[1])
        with open(f"/proc/{ppid}/cmdline", "rb") as f:
            parent_is_launcher = f.read().split(b"\0")[0].endswith(b"launcher")
    except (OSError, StopIteration):
        return False
    if parent_is_launcher:
        return False
    q = pid
    while q > 1:
        if q == m.proc.pid:
            return True
        try:
            with open(f"/proc/{q}/status") as f:
                q = int(next(l for l in f if l.startswith("PPid:")).split()[1])
        except (OSError, StopIteration):
            return False
    return False


def test_host_network_exposes_the_port_itself():
    m = started(ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-ports-host-"),
                          "[sandbox]\nnetwork = host\n"))
    try:
        script = put_script(m, SERVERS)
        port = sandbox_port()
        serve(m, script, "echo", port)
        addr = expose(m, port)
        assert addr == ("127.0.0.1", port)
        assert port_status(m, port)["relayed"] == "no"
        with connect(addr) as s:
            s.sendall(b"direct")
            assert bounded(recv_exactly, s, 6) == b"direct"
        bounded(os.rmdir, m.mnt / "ports" / str(port))
    finally:
        stopped_cleanly(m, "host network sbxfs")
