"""The sandbox's network as files: [sandbox] network = none | filtered | host, network/policy
(live, all or nothing), the proxy (HTTP CONNECT, plain HTTP, SOCKS5 with remote names) and
network/log.

Every server is the tests' own. The filtered-mode daemon runs in a network namespace the module
makes (`ip netns add`): its loopback interface carries documentation-range "public" addresses
(198.51.100.x, 203.0.113.x), a private one (10.9.8.7) and the metadata address
(169.254.169.254), an HTTP server listens on all of them, and a DNS server answers for the test
names on the address the host's /etc/resolv.conf names, added to that namespace too: the proxy
resolves names as it would on the host, and nothing leaves the namespace (it has no route out).
The daemon is entered into the namespace with nsenter --net only, so its FUSE mount stays in the
tests' mount namespace. The none-mode tests run a daemon in the host's namespace: in none mode
nothing is ever connected.

Documentation ranges are not public to the address policy (as for checkouts): rules for the
test names carry `private`, and one test shows the same name refused without it.
"""

import errno
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from sbxutil import (REPO_ROOT, ConfMount, SbxMount, ctl, isolation_none, read_bytes,
                     read_pipe_until, started, stopped_cleanly, uniq, wait_until, write_bytes,
                     write_errno)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="filtered mode needs a root daemon"),
    pytest.mark.skipif(isolation_none(), reason="the network policy needs isolation = bwrap"),
]

PUBLIC = "198.51.100.10"   # www.allowed.test, a.wild.test, deny.wild.test
OTHER = "198.51.100.11"    # other.test
GITHOST = "203.0.113.10"   # git.test
PRIVATE = "10.9.8.7"       # private.test
META = "169.254.169.254"   # meta.test
NAMES = {
    "www.allowed.test": PUBLIC, "a.wild.test": PUBLIC, "b.a.wild.test": PUBLIC,
    "wild.test": PUBLIC, "deny.wild.test": PUBLIC, "other.test": OTHER, "git.test": GITHOST,
    "private.test": PRIVATE, "meta.test": META, "loop.test": "127.0.0.1",
}

DNS_PY = r'''
import socket, sys
names = dict(a.split("=") for a in sys.argv[2:])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
while True:
    q, peer = s.recvfrom(512)
    if len(q) < 12:
        continue
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += 1 + q[i]
    qtype = int.from_bytes(q[i + 1:i + 3], "big")
    name = ".".join(labels).lower()
    addr = names.get(name)
    question = q[12:i + 5]
    rcode = 0 if addr else 3
    answer = b""
    if addr and qtype == 1:
        answer = (b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04"
                  + socket.inet_aton(addr))
    head = q[:2] + bytes([0x81, 0x80 | rcode]) + b"\x00\x01" + \
        (b"\x00\x01" if answer else b"\x00\x00") + b"\x00\x00\x00\x00"
    s.sendto(head + question + answer, peer)
'''

HTTP_PY = r'''
import os, sys, time, threading
from http.server import ThreadingHTTPServer, SimpleHTTPRequestHandler
root, log = sys.argv[1], sys.argv[2]
lock = threading.Lock()
def note(text):
    with lock, open(log, "a") as f:
        f.write(text + "\n")
class H(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
    def do_GET(self):
        note("%s %s %s" % (self.connection.getsockname()[0], self.headers.get("Host"), self.path))
        if self.path == "/hello":
            body = ("hello %s\n" % self.headers.get("Host")).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body)))
            self.end_headers(); self.wfile.write(body)
        elif self.path == "/redirect":
            self.send_response(302); self.send_header("Location", "http://other.test/hello")
            self.send_header("Content-Length", "0"); self.end_headers()
        elif self.path.startswith("/slow"):
            self.send_response(200); self.end_headers()
            for _ in range(40):
                self.wfile.write(b"x" * 65536); self.wfile.flush(); time.sleep(0.05)
        else:
            super().do_GET()
class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
for port in sys.argv[3:]:
    srv = S(("0.0.0.0", int(port)), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
note("ready")
while True:
    time.sleep(3600)
'''


def resolver_address():
    """The first nameserver of the host's resolv.conf, which the proxy's lookups go to."""
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver" and "." in parts[1]:
            return parts[1]
    return "127.0.0.53"


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, timeout=30, **kw)


class Internet:
    """A network namespace with the test hosts' addresses, their HTTP server and DNS."""

    def __init__(self, tmp):
        self.name = uniq("sbxnet")
        self.procs = []
        try:
            self.start(tmp)
        except BaseException:
            self.close()
            raise

    def start(self, tmp):
        self.tmp = Path(tmp)
        self.log = self.tmp / "http.log"
        self.root = self.tmp / "www"
        self.root.mkdir()
        run("ip", "netns", "add", self.name)
        ns = ("ip", "-n", self.name)
        run(*ns, "link", "set", "lo", "up")
        self.dns = resolver_address()
        addrs = {PUBLIC, OTHER, GITHOST, PRIVATE, META}
        if not self.dns.startswith("127."):
            addrs.add(self.dns)
        for a in sorted(addrs):
            run(*ns, "addr", "add", a + "/32", "dev", "lo")
        self.make_repo()
        dns = self.tmp / "dnsd.py"
        dns.write_text(DNS_PY)
        http = self.tmp / "httpd.py"  # not http.py: it would shadow the http package
        http.write_text(HTTP_PY)
        exe = ("ip", "netns", "exec", self.name)
        self.procs.append(subprocess.Popen(
            [*exe, sys.executable, str(dns), self.dns,
             *(f"{k}={v}" for k, v in NAMES.items())], stderr=subprocess.DEVNULL))
        self.procs.append(subprocess.Popen(
            [*exe, sys.executable, str(http), str(self.root), str(self.log), "80", "8080"],
            stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while "ready" not in self.requests():
            assert time.monotonic() < deadline, "the test HTTP server did not start"
            time.sleep(0.05)

    def make_repo(self):
        src = self.tmp / "src"
        src.mkdir()
        git = ("git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t")
        run("git", "init", "-q", "-b", "main", str(src))
        (src / "README").write_text("network test repository\n")
        run(*git, "add", "README")
        run(*git, "commit", "-qm", "first")
        run("git", "clone", "-q", "--bare", str(src), str(self.root / "repo.git"))
        run("git", "-C", str(self.root / "repo.git"), "update-server-info")

    def requests(self):
        return self.log.read_text() if self.log.exists() else ""

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)


class NetMount(ConfMount):
    """A daemon entered into the test network namespace (its network only)."""

    def __init__(self, tmp, config_text, netns):
        super().__init__(tmp, config_text)
        self.netns = netns

    def command_line(self):
        return ["nsenter", f"--net=/run/netns/{self.netns}", *super().command_line()]


POLICY = textwrap.dedent("""\
    mode filtered
    allow www.allowed.test private
    allow www.allowed.test:8080 private
    allow *.wild.test private
    deny deny.wild.test
    allow git.test private
    allow other.test
    allow private.test
    allow meta.test
    allow loop.test
    """)


@pytest.fixture(scope="module")
def inet():
    tmp = tempfile.mkdtemp(prefix="sbxfs-net-")
    net = Internet(tmp)
    try:
        yield net
    finally:
        net.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def fm(inet):
    """A filtered-mode daemon in the test network, with POLICY."""
    m = NetMount(tempfile.mkdtemp(prefix="sbxfs-it-net-"), "[sandbox]\nnetwork = filtered\n",
                 inet.name)
    started(m)
    try:
        set_policy(m, POLICY)
        yield m
    finally:
        stopped_cleanly(m, "filtered-mode sbxfs")


def set_policy(m, text):
    write_bytes(m.mnt / "network" / "policy", text)


def sh(m, s, cmd, timeout=30):
    out, err, code = m.run(s, cmd, timeout=timeout)
    return out.decode(errors="replace"), err.decode(errors="replace"), code


def log_text(m, path=None, wait_for=None, timeout=10):
    """What the log holds now (read without waiting at its end); with wait_for, polls until
    that text is in it."""
    path = path or m.mnt / "network" / "log"
    deadline = time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        data = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
        text = data.decode()
        if wait_for is None or wait_for in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def log_line(m, needle, **kw):
    """The last log line holding needle (waits for it)."""
    text = log_text(m, wait_for=needle, **kw)
    lines = [line for line in text.splitlines() if needle in line]
    assert lines, f"no log line with {needle!r} in:\n{text}"
    return lines[-1].split(" ", 10)


# --- none mode ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nm():
    m = SbxMount(tempfile.mkdtemp(prefix="sbxfs-it-none-"))
    started(m)
    try:
        yield m
    finally:
        stopped_cleanly(m, "none-mode sbxfs")


def test_none_mode_fails_at_once_and_names_the_policy(nm):
    s = nm.sessions / "default"
    out, err, code = sh(nm, s, "s=$(date +%s%N); getent hosts example.com; r=$?; "
                        "echo $r $(( ($(date +%s%N) - s) / 1000000 ))")
    rc, ms = out.split()
    assert rc != "0" and int(ms) < 1000, out
    out, err, code = sh(nm, s, "s=$(date +%s%N); curl -sS -m 20 http://example.com/x; "
                        "echo; echo ms $(( ($(date +%s%N) - s) / 1000000 ))")
    assert "sbxfs network policy: example.com:80 denied (mode none)" in out
    assert int(out.split("ms ")[1]) < 1000
    line = log_line(nm, "example.com:80")
    assert line[1] == "default" and line[3] == "http" and line[6] == "deny"
    assert line[10] == "mode none"
    assert read_bytes(nm.mnt / "network" / "policy") == b"mode none\n"
    assert "network none" in read_bytes(nm.mnt / "limits").decode()


@pytest.mark.skipif(not shutil.which("npm"), reason="npm is not installed")
def test_none_mode_npm_fails_at_once(nm):
    out, err, code = sh(nm, nm.sessions / "default",
                        "cd /tmp && s=$(date +%s); npm install --no-audit is-number 2>&1 | "
                        "grep -m1 403; echo secs $(( $(date +%s) - s ))", timeout=60)
    assert "403" in out and int(out.split("secs ")[1]) < 10, out


def test_mode_host_cannot_be_set_live(nm):
    assert write_errno(nm.mnt / "network" / "policy", "mode host\n") == 95  # EOPNOTSUPP
    assert read_bytes(nm.mnt / "network" / "policy") == b"mode none\n"


# --- filtered mode ------------------------------------------------------------------------------


def curl(m, s, args, timeout=30):
    out, err, code = sh(m, s, f"curl -sS -m 10 {args}", timeout=timeout)
    return out, err, code


def test_allowed_name_through_each_protocol(fm, inet):
    s = fm.sessions / "default"
    out, _, code = curl(fm, s, "http://www.allowed.test/hello")
    assert code == 0 and out == "hello www.allowed.test\n"
    out, _, code = curl(fm, s, "-p http://www.allowed.test:8080/hello")  # a CONNECT tunnel
    assert code == 0 and out == "hello www.allowed.test:8080\n"
    out, _, code = curl(fm, s, '-x "$ALL_PROXY" http://a.wild.test/hello')  # SOCKS5, remote DNS
    assert code == 0 and out == "hello a.wild.test\n"
    http = log_line(fm, "http www.allowed.test:80 ")
    assert http[5] == PUBLIC and http[6] == "allow" and http[10] == "allow www.allowed.test private"
    assert int(http[8]) > 0 and int(http[7]) > 0
    tunnel = log_line(fm, "connect www.allowed.test:8080 ")
    assert tunnel[10] == "allow www.allowed.test:8080 private"
    socks = log_line(fm, "socks a.wild.test:80 ")
    assert socks[6] == "allow" and socks[10] == "allow *.wild.test private"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", http[0])


def test_denied_names_wildcards_ports_and_deny_over_allow(fm):
    s = fm.sessions / "default"
    cases = {
        "http://nowhere.test/hello": "nowhere.test:80 denied (no rule)",
        "http://wild.test/hello": "wild.test:80 denied (no rule)",  # *.D is below D only
        "http://www.allowed.test:8081/hello": "www.allowed.test:8081 denied (no rule)",
        "http://deny.wild.test/hello": "deny.wild.test:80 denied (deny deny.wild.test)",
    }
    for url, reason in cases.items():
        out, _, code = curl(fm, s, url)
        assert out == f"sbxfs network policy: {reason}\n", url
    out, err, code = curl(fm, s, "-p http://deny.wild.test/hello")
    assert code != 0 and "403" in err
    out, err, code = curl(fm, s, '-x "$ALL_PROXY" http://deny.wild.test/hello')
    assert code != 0
    line = log_line(fm, "socks deny.wild.test:80 ")
    assert line[6] == "deny" and line[10] == "deny deny.wild.test"
    out, _, _ = curl(fm, s, "http://b.a.wild.test/hello")
    assert out == "hello b.a.wild.test\n"


def test_non_public_addresses_refused_without_a_connection(fm, inet):
    s = fm.sessions / "default"
    for name, addr in (("private.test", PRIVATE), ("meta.test", META), ("loop.test", "127.0.0.1"),
                       ("other.test", OTHER)):
        out, _, code = curl(fm, s, f"http://{name}/hello")
        assert out.startswith(f"sbxfs network policy: {name}:80 denied (address {addr} is "
                              "not public"), out
        line = log_line(fm, f"http {name}:80 ")
        assert line[5] == "-" and line[6] == "deny"
    seen = inet.requests()
    for addr in (PRIVATE, META, OTHER):
        assert not re.search(rf"^{re.escape(addr)} ", seen, re.M), seen


def test_redirect_to_a_denied_name(fm):
    out, err, code = curl(fm, fm.sessions / "default", "-L http://www.allowed.test/redirect")
    assert out.startswith("sbxfs network policy: other.test:80 denied (address "), out


def test_git_python_and_node_use_the_proxy(fm):
    s = fm.sessions / "default"
    out, err, code = sh(fm, s, "rm -rf /tmp/r && git clone -q http://git.test/repo.git /tmp/r "
                        "&& cat /tmp/r/README")
    assert code == 0 and out == "network test repository\n", err
    assert log_line(fm, "http git.test:80 ")[6] == "allow"
    out, err, code = sh(fm, s, "python3 -c 'import urllib.request as u; "
                        "print(u.urlopen(\"http://a.wild.test/hello\").read().decode(), end=\"\")'")
    assert code == 0 and out == "hello a.wild.test\n", err
    if not shutil.which("node"):
        return
    # Node's fetch honours the proxy variables from Node 24 (NODE_USE_ENV_PROXY); before that
    # it resolves names itself, and must fail at once, not hang.
    out, err, code = sh(fm, s, "s=$(date +%s%N); node -e 'fetch(\"http://a.wild.test/hello\")"
                        ".then(r => r.text()).then(t => process.stdout.write(t), "
                        "e => { console.log(\"failed\", e.cause && e.cause.code); })'; "
                        "echo ms $(( ($(date +%s%N) - s) / 1000000 ))")
    major = int(subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"],
                               capture_output=True, text=True).stdout)
    if major >= 24:
        assert out.startswith("hello a.wild.test\n"), out
    else:
        assert out.startswith("failed"), out
        assert int(out.split("ms ")[1]) < 5000, out


def test_policy_change_applies_to_new_connections(fm):
    s = fm.sessions / "default"
    job = fm.new_session()
    fm.submit(job, "curl -sS -m 30 -o /tmp/slow http://www.allowed.test/slow; "
                   "echo $? $(stat -c %s /tmp/slow)")
    log_line(fm, "www.allowed.test:80", timeout=5)
    time.sleep(0.3)  # the download is under way
    try:
        set_policy(fm, POLICY + "deny www.allowed.test\n")
        out, _, _ = curl(fm, s, "http://www.allowed.test/hello")
        assert out == "sbxfs network policy: www.allowed.test:80 denied (deny www.allowed.test)\n"
        assert fm.read(job, "stdout", timeout=30) == b"0 2621440\n"
    finally:
        set_policy(fm, POLICY)
    assert curl(fm, s, "http://www.allowed.test/hello")[0] == "hello www.allowed.test\n"


def test_bad_policy_lines_apply_nothing(fm):
    path = fm.mnt / "network" / "policy"
    before = read_bytes(path)
    for bad in ("allow\n", "allow *.*.test\n", "allow a.test:0\n", "allow a.test:70000\n",
                "deny a.test private\n", "mode bridge\n", "permit a.test\n",
                "allow a b c\n", "allow bad_host!\n", "allow [::1\n"):
        assert write_errno(path, "allow fine.test\n" + bad) == 22, bad  # EINVAL at write()
        assert read_bytes(path) == before
    assert write_errno(path, "mode host\n") == 95
    assert read_bytes(path) == before


def test_ten_thousand_rules(fm):
    rules = "".join(f"allow host{i}.example.test\n" for i in range(10000))
    t = time.monotonic()
    set_policy(fm, POLICY + rules)
    try:
        took = time.monotonic() - t
        text = read_bytes(fm.mnt / "network" / "policy").decode()
        assert text.count("\n") == POLICY.count("\n") + 10000
        assert took < 5, took
        t = time.monotonic()
        out, _, _ = curl(fm, fm.sessions / "default", "http://host9999.example.test/")
        assert out.startswith("sbxfs proxy: host9999.example.test:80: cannot resolve"), out
        assert time.monotonic() - t < 5
    finally:
        set_policy(fm, POLICY)


def test_mode_switches_live_between_none_and_filtered(fm):
    s = fm.sessions / "default"
    set_policy(fm, "mode none\n" + POLICY.split("\n", 1)[1])
    try:
        out, _, _ = curl(fm, s, "http://www.allowed.test/hello")
        assert out == "sbxfs network policy: www.allowed.test:80 denied (mode none)\n"
        assert "network none" in read_bytes(fm.mnt / "limits").decode()
    finally:
        set_policy(fm, POLICY)
    assert curl(fm, s, "http://www.allowed.test/hello")[0] == "hello www.allowed.test\n"


def test_a_log_reads_to_its_end_and_tail_f_follows_it(fm):
    """network/log and sessions/ID/network read like a log file on disk: to their current end,
    then EOF, so cat and grep return (an agent's tool that waits for a command does not stall);
    the same open reads the next line once it is written, and tail -f follows."""
    s = fm.new_session()
    name = s.name
    fd = os.open(s / "network", os.O_RDONLY)
    try:
        assert os.read(fd, 4096) == b"", "a log with no line is empty"
        curl(fm, s, "http://a.wild.test/hello")
        line = wait_until(lambda: os.read(fd, 4096), 10, "the new line").decode()
        assert line.count("\n") == 1 and f" {name} - http a.wild.test:80 " in line
        assert os.read(fd, 4096) == b""
    finally:
        os.close(fd)
    whole = run("cat", str(fm.mnt / "network" / "log")).stdout.decode()
    assert f" {name} - http a.wild.test:80 " in whole
    assert run("cat", str(s / "network")).stdout.decode() == line
    assert int(run("grep", "-c", f" {name} ", str(fm.mnt / "network" / "log")).stdout) == 1
    tail = subprocess.Popen(["tail", "-n", "0", "-f", str(s / "network")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.2)  # tail -f has taken the size it follows from
        curl(fm, s, "http://www.allowed.test/hello")
        read_pipe_until(tail.stdout, f" {name} - http www.allowed.test:80 ".encode(), 10)
    finally:
        tail.kill()
        tail.wait()
    # the whole log has every session's lines, a session's its own only
    curl(fm, fm.sessions / "default", "http://a.wild.test/hello")
    whole = log_text(fm, wait_for=" default - http a.wild.test:80 ")
    own = log_text(fm, path=s / "network")
    assert own.strip() and all(f" {name} " in line for line in own.splitlines())
    assert any(" default " in line for line in whole.splitlines())
    # the same connections in the journal, with their session and rule
    journal = [json.loads(line) for line in (fm.mnt / "journal").read_bytes().splitlines()]
    conns = [e for e in journal if e["kind"] == "net.connection" and e.get("session") == name]
    assert any(e["host"] == "a.wild.test" and e["port"] == 80 and e["proto"] == "http"
               and e["verdict"] in ("allow", "deny") for e in conns), conns
    assert all("rule" in e for e in conns)


@pytest.mark.heavy
def test_thousand_connections_leave_the_daemon_answering(fm):
    bomb = fm.new_session()
    calm = fm.new_session()
    script = fm.ws / "conns.py"
    script.write_text(textwrap.dedent("""\
        import os, socket, time
        port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
        socks = []
        for _ in range(1000):
            s = socket.socket()
            s.connect(("127.0.0.1", port))
            s.send(b"GET http://www.allowed.test/hello HTTP/1.1\\r\\n")  # never finished
            socks.append(s)
        print("open", len(socks), flush=True)
        time.sleep(4)
        """))
    fm.submit(bomb, f"python3 {fm.cmd_ws}/conns.py")
    times = []
    for _ in range(6):  # while the connections pile up and are held
        t = time.monotonic()
        out, _, code = sh(fm, calm, "echo hi")
        times.append(time.monotonic() - t)
        assert out == "hi\n"
        time.sleep(0.3)
    assert fm.read(bomb, "stdout", timeout=60) == b"open 1000\n"
    assert max(times) < 3, times
    # none sent a whole head, so none was any session's: past 128 such, the oldest went
    line = log_line(fm, "dropped: no credential yet when 128 newer connections waited",
                    timeout=10)
    assert line[1] == bomb.name and line[6] == "deny"
    # the neighbour still gets through while those are held
    assert curl(fm, calm, "http://www.allowed.test/hello")[0] == "hello www.allowed.test\n"


def test_limits_and_policy_file(fm):
    assert "network filtered" in read_bytes(fm.mnt / "limits").decode()
    text = read_bytes(fm.mnt / "network" / "policy").decode()
    assert text == POLICY
    assert sorted(os.listdir(fm.mnt / "network")) == ["log", "policy"]
    env = fm.read_env(fm.sessions / "default")
    secret, port = re.fullmatch(r"http://sbxfs:([0-9a-f]{32})@127\.0\.0\.1:(\d+)",
                                env["HTTP_PROXY"]).groups()
    assert env["ALL_PROXY"] == f"socks5h://sbxfs:{secret}@127.0.0.1:{port}"
    assert env["NO_PROXY"] == "localhost,127.0.0.1,::1"


def registry_host():
    try:
        url = subprocess.run(["npm", "config", "get", "registry"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"https?://([^/:]+)", url)
    return m.group(1) if m else None


@pytest.mark.skipif(not shutil.which("npm"), reason="npm is not installed")
def test_npm_through_the_proxy(fresh_mount_conf):
    host = registry_host()
    if not host:
        pytest.skip("no npm registry configured")
    m = fresh_mount_conf(f"[sandbox]\nnetwork = filtered\n[network]\nallow = {host} private\n")
    out, err, code = sh(m, m.sessions / "default",
                        "cd /tmp && npm install --no-audit --no-fund is-number 2>&1 | tail -3; "
                        "ls node_modules", timeout=120)
    if "is-number" not in out:
        if "ENOTFOUND" in out or "cannot resolve" in log_text(m) or "connect:" in log_text(m):
            pytest.skip(f"the registry is not reachable from here: {out[-300:]}")
    assert "is-number" in out, out
    assert log_line(m, f"connect {host}:443 ")[6] == "allow"


@pytest.fixture
def fresh_mount_conf():
    mounts = []

    def make(text):
        m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-npm-"), text)
        mounts.append(m)
        return started(m)

    yield make
    for m in mounts:
        m.discard()


def test_a_context_has_its_own_listener_and_lines(fm):
    ctx = fm.mnt / "contexts" / uniq("ctx")
    os.mkdir(ctx)
    try:
        fd = os.open(ctx / "code", os.O_RDWR)
        try:
            os.write(fd, b"import urllib.request as u\n"
                         b"u.urlopen('http://a.wild.test/hello').read().decode()\n")
            n = int(os.read(fd, 32))
        finally:
            os.close(fd)
        res = json.loads(read_bytes(ctx / "cells" / str(n) / "result", timeout=60))
        assert [r.get("text") for r in res["results"]] == ["'hello a.wild.test\\n'"], res
        line = log_line(fm, f"context:{ctx.name} - http a.wild.test:80 ")
        assert line[6] == "allow"
    finally:
        os.rmdir(ctx)


def proxy_pid(m):
    """The pid of the daemon's sbxfs-netproxy (its child)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if comm == "sbxfs-netproxy" and ppid == m.proc.pid:
            return int(entry)
    return None


def test_a_dead_proxy_is_restarted_with_the_policy_and_listeners(fm):
    pid = proxy_pid(fm)
    assert pid, "no sbxfs-netproxy child of the daemon"
    status = Path(f"/proc/{pid}/status").read_text()
    nobody = pwd.getpwnam("nobody").pw_uid
    assert re.search(rf"^Uid:\s+{nobody}\s", status, re.M), "the proxy does not run as nobody"
    assert re.search(r"^Seccomp:\s+2$", status, re.M), "the proxy has no seccomp filter"
    os.kill(pid, 9)
    deadline = time.monotonic() + 10
    while proxy_pid(fm) in (None, pid):
        assert time.monotonic() < deadline, "sbxfs-netproxy was not restarted"
        time.sleep(0.05)
    out, _, _ = curl(fm, fm.sessions / "default", "--retry 3 --retry-connrefused "
                     "http://www.allowed.test/hello")
    assert out == "hello www.allowed.test\n"
    out, _, _ = curl(fm, fm.sessions / "default", "http://deny.wild.test/hello")
    assert out == "sbxfs network policy: deny.wild.test:80 denied (deny deny.wild.test)\n"


# A SOCKS5 request whose host name is chosen to forge a line: spaces that would make fields of
# their own, a newline that would make a line, control bytes and bytes over 0x7f (which used to
# drop the record). The proxy refuses each name; its line holds it %HH-escaped, in one field.
FORGE_PY = r"""
import os, socket, sys
url = os.environ["ALL_PROXY"]
port = int(url.rsplit(":", 1)[1])
secret = url.split(":")[2].split("@")[0].encode()
name = bytes.fromhex(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"\x05\x01\x02")
assert s.recv(2) == b"\x05\x02"
s.sendall(b"\x01\x05sbxfs" + bytes([len(secret)]) + secret)
assert s.recv(2) == b"\x01\x00"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x01\xbb")
print(s.recv(10)[:2].hex())
"""

FORGED = [
    b"bank.example 93.184.216.34 allow 4096 1048576 250 allow bank.example",
    b"x.test\n2026-01-01T00:00:00.000Z default - socks ok.test:443 1.2.3.4 allow 1 1 1 allow",
    b"ctl\x01\x1b[2Jbyte\x7f\xff\xc3\xa9.test",
    b"100%25.test",
]


def test_a_forged_socks_name_is_one_escaped_field(fm, inet):
    s = fm.new_session()
    script = fm.ws / "forge.py"
    script.write_text(FORGE_PY)
    for name in FORGED:
        out, err, code = sh(fm, s, f"python3 {fm.cmd_ws}/forge.py {name.hex()}")
        assert code == 0 and out.startswith("05"), (out, err)
    # the request is refused before its port is read: the line says port 0; names are matched
    # in lower case, and logged so; one with a colon is bracketed, as an IPv6 address is
    def target(n, esc):
        n = n.lower()
        host = ("".join(f"%{b:02X}" if b < 0x21 or b > 0x7e or b == 0x25 else chr(b) for b in n)
                if esc else n.decode(errors="replace"))
        return (f"[{host}]" if b":" in n else host) + ":0"
    want = [f"socks {target(n, True)} " for n in FORGED]
    text = log_text(fm, wait_for=want[-1])
    # one line per connection, no more (no line of its own from a newline in a name)
    lines = [line for line in text.splitlines() if line.split(" ")[1] == s.name]
    assert len(lines) == len(FORGED), text
    for needle in want:
        line = next((line for line in lines if needle in line), None)
        assert line is not None, (needle, text)
        f = line.split(" ", 10)
        assert f[3] == "socks" and f[6] == "deny" and f[10] == "malformed SOCKS request", line
    # both clients give the name back as it was sent, and the line as a denial
    sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))
    from sbxfs.network import parse_log_line
    for n, needle in zip(FORGED, want):
        line = next(line for line in lines if needle in line)
        e = parse_log_line(line)
        assert e["decision"] == "deny" and e["target"] == target(n, False), e
    js = ("import {parseLogLine} from '%s';" % (REPO_ROOT / "clients/node/lib/network.js") +
          "const lines = JSON.parse(process.argv[1]);" +
          "console.log(JSON.stringify(lines.map((l) => parseLogLine(l))));")
    res = subprocess.run(["node", "--input-type=module", "-e", js, json.dumps(lines)],
                         capture_output=True, timeout=30, check=True)
    got = {e["target"]: e["decision"] for e in json.loads(res.stdout)}
    for n in FORGED:
        assert got[target(n, False)] == "deny", got


# --- each session's credential ------------------------------------------------------------------


def session_proxy(m, s):
    """A session's proxy credential and port, from its HTTP_PROXY."""
    got = re.fullmatch(r"http://sbxfs:([0-9a-f]{32})@127\.0\.0\.1:(\d+)",
                       m.read_env(s)["HTTP_PROXY"])
    return got.group(1), int(got.group(2))


def test_a_request_without_its_sessions_credential_is_refused_and_logged(fm, inet):
    s = fm.new_session()
    secret, port = session_proxy(fm, s)
    code_of = "-s -o /dev/null -w '%{http_code}' "
    for proxy, why in ((f"http://127.0.0.1:{port}", "no credential"),
                       (f"http://sbxfs:{'0' * 32}@127.0.0.1:{port}", "wrong credential"),
                       (f"http://root:{secret}@127.0.0.1:{port}", "wrong credential")):
        out, err, _ = curl(fm, s, f"{code_of} -x {proxy} http://www.allowed.test/hello")
        assert out == "407", (proxy, out, err)
        # a CONNECT's own answer is %{http_connect}
        out, _, _ = curl(fm, s, f"-s -o /dev/null -w '%{{http_connect}}' -p -x {proxy} "
                                "http://www.allowed.test/hello")
        assert out == "407", (proxy, out)
        line = log_line(fm, f"{s.name} - http www.allowed.test:80 - deny 0 0 ")
        assert line[10].startswith(why), line
    # the reason reaches the tool: the answer's body says it
    out, _, _ = curl(fm, s, f"-x http://127.0.0.1:{port} http://www.allowed.test/hello")
    assert out == "sbxfs proxy: no credential (the session's proxy address carries it)\n"
    # SOCKS5 without the username and password: refused at its greeting
    _, _, code = curl(fm, s, f"-x socks5h://127.0.0.1:{port} http://www.allowed.test/hello")
    assert code != 0
    assert "SOCKS5 without a username and password" in log_line(fm, f"{s.name} - socks ")[10]
    _, _, code = curl(fm, s, f"-x socks5h://sbxfs:{'1' * 32}@127.0.0.1:{port} "
                             "http://www.allowed.test/hello")
    assert code != 0
    # with it, through either protocol
    assert curl(fm, s, "http://www.allowed.test/hello")[0] == "hello www.allowed.test\n"
    assert curl(fm, s, '-x "$ALL_PROXY" http://a.wild.test/hello')[0] == "hello a.wild.test\n"


def test_the_credential_not_the_port_says_whose_request_it_is(fm, inet):
    a, b = fm.new_session(), fm.new_session()
    a_secret, _ = session_proxy(fm, a)
    _, b_port = session_proxy(fm, b)
    out, _, code = curl(fm, a, f"-x http://sbxfs:{a_secret}@127.0.0.1:{b_port} "
                               "http://www.allowed.test/hello")
    assert code == 0 and out == "hello www.allowed.test\n"
    text = log_text(fm, wait_for=f"{a.name} - http www.allowed.test:80 ")
    assert f"{a.name} - http www.allowed.test:80 " in text
    assert f"{b.name} - http www.allowed.test:80 " not in text
    assert f"{a.name} - http" in log_text(fm, fm.sessions / a.name / "network")


HOLD_PY = r"""
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    socks.append(s)
open("/workspace/held", "w").write(str(len(socks)))
time.sleep(60)
"""


def test_idle_connections_to_another_sessions_port_starve_nothing(fm, inet):
    """300 connections held open, sending nothing, from one session to another's proxy port:
    the other's requests, a clone and downloads, all get through meanwhile."""
    attacker, victim = fm.new_session(), fm.new_session()
    _, victim_port = session_proxy(fm, victim)
    (fm.ws / "hold.py").write_text(HOLD_PY)
    held = fm.ws / "held"
    if held.exists():
        held.unlink()
    fm.submit(attacker, f"python3 {fm.cmd_ws}/hold.py {victim_port} 300")
    try:
        wait_until(held.exists, 30, "300 connections held")
        for _ in range(5):
            assert curl(fm, victim, "http://www.allowed.test/hello")[0] == \
                "hello www.allowed.test\n"
        out, err, code = sh(fm, victim, "rm -rf /tmp/v && git clone -q http://git.test/repo.git "
                                        "/tmp/v && cat /tmp/v/README")
        assert code == 0 and out == "network test repository\n", err
    finally:
        assert ctl(attacker, "kill KILL\n") in (0, errno.ESRCH)


def test_a_sessions_connection_limit_is_its_own(inet):
    """connections_max bounds each session's own connections: one that holds its share of
    tunnels is refused more (503, logged), another session is not."""
    m = NetMount(tempfile.mkdtemp(prefix="sbxfs-it-net-cap-"),
                 "[sandbox]\nnetwork = filtered\n[network]\nconnections_max = 8\n", inet.name)
    started(m)
    try:
        set_policy(m, POLICY)
        greedy, other = m.new_session(), m.new_session()
        secret, port = session_proxy(m, greedy)
        (m.ws / "tunnels.py").write_text(TUNNELS_PY)
        out, err, code = sh(m, greedy, f"python3 {m.cmd_ws}/tunnels.py {port} {secret} 12")
        assert code == 0, err
        assert sorted(out.split()) == sorted(["200"] * 8 + ["503"] * 4), out
        line = log_line(m, f"{greedy.name} - connect www.allowed.test:80 - deny")
        assert line[10] == "connection limit 8 of the session", line
        assert curl(m, other, "http://www.allowed.test/hello")[0] == "hello www.allowed.test\n"
    finally:
        stopped_cleanly(m, "connection-limit sbxfs")


# Opens n CONNECT tunnels with the session's credential and holds them all, printing each
# answer's status.
TUNNELS_PY = r"""
import base64, socket, sys
port, secret, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
auth = base64.b64encode(f"sbxfs:{secret}".encode()).decode()
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"CONNECT www.allowed.test:80 HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n"
              "\r\n".encode())
    print(s.recv(4096).split()[1].decode(), flush=True)
    socks.append(s)
"""


# What a tool prints of a refusal, each measured behind the policy's deny: npm and Python's
# http.client (so pip) print the status line's reason phrase, curl -v and git with
# GIT_CURL_VERBOSE show the status line; curl and git themselves print only the code.
REASON = "sbxfs network policy: deny.wild.test:443 denied (deny deny.wild.test)"


def test_a_refusal_reaches_the_tools_own_message(fm):
    s = fm.sessions / "default"
    out, err, code = sh(fm, s, "python3 -c 'import urllib.request as u; "
                        "u.urlopen(\"https://deny.wild.test/\")' 2>&1 | tail -1")
    assert f"Tunnel connection failed: 403 Forbidden by {REASON}" in out, out
    out, err, code = sh(fm, s, "curl -sS -v -m 10 https://deny.wild.test/ 2>&1")
    assert f"< HTTP/1.1 403 Forbidden by {REASON}" in out, out
    out, err, code = sh(fm, s, "GIT_CURL_VERBOSE=1 git ls-remote https://deny.wild.test/r.git "
                        "2>&1 | grep -m1 'HTTP/1.1 403'")
    assert f"HTTP/1.1 403 Forbidden by {REASON}" in out, out
    # Plain HTTP through the proxy: the body says it too (curl prints it).
    out, _, _ = curl(fm, s, "http://deny.wild.test/hello")
    assert out == "sbxfs network policy: deny.wild.test:80 denied (deny deny.wild.test)\n"


@pytest.mark.skipif(not shutil.which("npm"), reason="npm is not installed")
def test_npm_names_the_refusal(fm):
    out, err, code = sh(fm, fm.sessions / "default",
                        "cd /tmp && npm_config_registry=https://deny.wild.test/ "
                        "npm install --no-audit --fetch-retries=0 is-number 2>&1 | grep -m3 -i "
                        "'403\\|sbxfs'", timeout=90)
    assert f"403 Forbidden by {REASON} - GET https://deny.wild.test/is-number" in out, out
