"""Checkout's policy: what a session's `checkout` may connect to and read.

By default sbxfs-git refuses to connect to loopback, private, link-local, CGNAT, reserved...
addresses (`error network: HOST (ADDR) refused by policy`), checked on every address it
connects to (its own connect()), so a host name, another spelling of an address or a redirect
cannot get round it; `[session] git_allow_private = yes` lifts that. Local sources (a path,
file://) must be in the workspace or below `[session] git_local_roots` (`error policy: ...`),
on their real path, and its reads are confined with Landlock, so no symlink, .git file or
alternates file reads elsewhere. Error texts never quote what a server sent.

Every server here is local and counts the connections it gets.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sbxutil import ConfMount, read_bytes, run_proc, uniq, write_errno, started

GIT = shutil.which("git", path="/usr/bin:/bin") or "/usr/bin/git"
FINAL_RE = re.compile(r"(ok [0-9a-f]{40} \S+ \S+|error ([a-z-]+): (.*))")
SECRET = "SECRET-" + uniq("s")
TRAVERSABLE = 0o755  # sbxfs-git reaches the workspace by its host path (see test_checkout.py)


# --- servers -----------------------------------------------------------------------------------


class Listener:
    """A TCP listener that counts connections and closes them at once."""

    def __init__(self, host="127.0.0.1", reply=b""):
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            try:
                conn.settimeout(5)
                if self.reply:
                    conn.recv(4096)
                    conn.sendall(self.reply)
            except OSError:
                pass
            conn.close()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class OddHTTP:
    """Answers every GET with 200 and a content type and body that hold SECRET."""

    def __init__(self):
        self.requests = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.requests.append(self.path)
                body = f"<html>{SECRET} body</html>\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", f"application/x-{SECRET}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def pkt(text):
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


# --- mounts ------------------------------------------------------------------------------------


def start_mount(config_text, prefix="sbxfs-it-pol-", cls=ConfMount):
    m = cls(tempfile.mkdtemp(prefix=prefix), config_text)
    os.chmod(m.tmp, TRAVERSABLE)
    return started(m)


def stop_mount(m):
    problems = m.stop() if m.alive() else []
    m.abort()
    m.cleanup_tmp()
    assert not problems, "unclean shutdown of sbxfs:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def outside():
    """A repository outside the workspace, world-readable, and a root around another one."""
    base = Path(tempfile.mkdtemp(prefix="sbxfs-pol-src-"))
    os.chmod(base, 0o755)
    for name in ("out", "rooted/repo"):
        repo = base / name
        repo.mkdir(parents=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t",
               "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
        for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "c"]):
            if args[0] == "add":
                (repo / "data").write_text(f"{name} {SECRET}\n")
            res = run_proc([GIT, "-C", str(repo), *args], env=env)
            assert res.returncode == 0, res.stderr
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def strict(outside):
    """The default policy, with one local root: <outside>/rooted."""
    m = start_mount(f"[session]\ngit_local_roots = {outside}/rooted\n")
    yield m
    stop_mount(m)


@pytest.fixture(scope="module")
def private():
    m = start_mount("[session]\ngit_allow_private = yes\n")
    yield m
    stop_mount(m)


@pytest.fixture
def listener():
    srv = Listener()
    yield srv
    srv.close()


# --- helpers -----------------------------------------------------------------------------------


def checkout(s, line, timeout=60):
    """Writes one request to checkout and reads it to its end: its final line."""
    assert write_errno(Path(s) / "checkout", line + "\n") == 0, line
    text = read_bytes(Path(s) / "checkout", timeout=timeout).decode()
    final = text.splitlines()[-1]
    assert FINAL_RE.fullmatch(final), f"malformed final line {final!r} in {text!r}"
    return final


def git_repo_in(m, rel):
    """A one-commit repository at workspace path rel, made by the sandbox's commands."""
    s = m.new_session()
    out, err, code = m.run(s, f"git init -q -b main {rel} && cd {rel} && echo ws > data && "
                              f"git add data && git -c user.name=t -c user.email=t@x "
                              f"commit -qm c && echo made", timeout=60)
    assert (out, code) == (b"made\n", 0), err


def refusal_re(host, addr):
    return re.compile(rf"error network: {re.escape(host)} \({re.escape(addr)}\) refused by policy")


# --- network -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["http", "https", "git", "ssh"])
def test_loopback_listener_is_refused_and_never_reached(strict, listener, scheme):
    s = strict.new_session()
    final = checkout(s, f"{scheme}://127.0.0.1:{listener.port}/x.git dir={uniq('lo')}")
    assert final == "error network: 127.0.0.1 (127.0.0.1) refused by policy", final
    assert listener.connections == 0


def test_localhost_name_is_refused(strict, listener):
    """The check is on the address connected to, not on the URL's host."""
    s = strict.new_session()
    final = checkout(s, f"http://localhost:{listener.port}/x.git dir={uniq('lh')}")
    assert re.fullmatch(r"error network: localhost \((127\.0\.0\.1|::1)\) refused by policy",
                        final), final
    assert listener.connections == 0


@pytest.mark.parametrize("host,addr", [
    ("0x7f000001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0.0.0.0", "0.0.0.0"),
    ("[::1]", "::1"),
    ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
    ("[::]", "::"),
])
def test_other_spellings_of_this_host_are_refused(strict, listener, host, addr):
    s = strict.new_session()
    final = checkout(s, f"http://{host}:{listener.port}/x.git dir={uniq('sp')}")
    assert refusal_re(host.strip("[]"), addr).fullmatch(final), final
    assert listener.connections == 0


@pytest.mark.parametrize("addr", ["10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                                  "100.64.0.1", "224.0.0.1", "255.255.255.255", "192.0.2.1",
                                  "fd00::1", "fe80::1", "ff02::1", "64:ff9b::a01:203"])
def test_private_and_reserved_addresses_are_refused(strict, addr):
    s = strict.new_session()
    host = f"[{addr}]" if ":" in addr else addr
    final = checkout(s, f"http://{host}:80/x.git dir={uniq('priv')}", timeout=30)
    assert refusal_re(addr, addr).fullmatch(final), final


def test_allow_private_lets_the_connection_through(private, listener):
    s = private.new_session()
    final = checkout(s, f"http://127.0.0.1:{listener.port}/x.git dir={uniq('ok')}")
    assert "refused by policy" not in final and final.startswith("error network: "), final
    assert listener.connections >= 1


def test_proxy_variables_of_the_daemon_do_not_reach_sbxfs_git(listener, monkeypatch):
    """sbxfs-git's environment is the daemon's choice: a proxy in the daemon's does not
    route the clone (and with it, round the policy)."""
    proxy = Listener()
    try:
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                     "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        m = start_mount("[session]\ngit_allow_private = yes\n")
        try:
            s = m.new_session()
            checkout(s, f"http://127.0.0.1:{listener.port}/x.git dir={uniq('px')}")
        finally:
            stop_mount(m)
        assert listener.connections >= 1
        assert proxy.connections == 0
    finally:
        proxy.close()


class NetnsMount(ConfMount):
    """sbxfs in a network namespace of its own whose lo also holds a public address."""
    PUBLIC = "1.2.3.4"

    def command_line(self):
        setup = f"ip link set lo up && ip addr add {self.PUBLIC}/32 dev lo && exec \"$@\""
        return ["unshare", "-n", "sh", "-c", setup, "sh", *super().command_line()]


REDIRECTOR = r"""
import socket, sys, threading
pub, lo = socket.socket(), socket.socket()
pub.bind((sys.argv[1], 0)); lo.bind(("127.0.0.1", 0))
pub.listen(8); lo.listen(8)
def redirect():
    while True:
        c, _ = pub.accept()
        c.recv(4096)
        c.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/x.git/info/refs"
                  b"?service=git-upload-pack\r\nContent-Length: 0\r\n\r\n" % lo.getsockname()[1])
        print("redirected", flush=True)
        c.close()
def count():
    while True:
        c, _ = lo.accept()
        print("loopback reached", flush=True)
        c.close()
threading.Thread(target=count, daemon=True).start()
threading.Thread(target=redirect, daemon=True).start()
print("ready", pub.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("allow", [False, True])
def test_redirect_to_loopback_is_refused(allow):
    """An allowed (public) server redirects to 127.0.0.1: refused unless git_allow_private."""
    if not (shutil.which("unshare") and shutil.which("nsenter") and shutil.which("ip")):
        pytest.skip("needs unshare, nsenter and ip to give sbxfs a public address of its own")
    m = start_mount(f"[session]\ngit_allow_private = {'yes' if allow else 'no'}\n",
                    cls=NetnsMount)
    srv = None
    try:
        srv = subprocess.Popen(
            ["nsenter", f"--net=/proc/{m.proc.pid}/ns/net", sys.executable, "-c", REDIRECTOR,
             NetnsMount.PUBLIC], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = srv.stdout.readline().split()
        assert ready and ready[0] == "ready", ready
        s = m.new_session()
        final = checkout(s, f"http://{NetnsMount.PUBLIC}:{ready[1]}/x.git dir={uniq('rd')}")
        srv.stdin.close()
        seen = srv.stdout.read()
        srv.wait(10)
        assert "redirected" in seen, (final, seen)
        if allow:
            assert "loopback reached" in seen and "refused by policy" not in final, (final, seen)
        else:
            assert final == "error network: 127.0.0.1 (127.0.0.1) refused by policy", final
            assert "loopback reached" not in seen, seen
    finally:
        if srv and srv.poll() is None:
            srv.kill()
            srv.wait(10)
        stop_mount(m)


# --- what a server says ------------------------------------------------------------------------


def test_error_text_does_not_echo_a_content_type(private):
    srv = OddHTTP()
    try:
        s = private.new_session()
        final = checkout(s, f"http://127.0.0.1:{srv.port}/x.git dir={uniq('ct')}")
    finally:
        srv.close()
    assert srv.requests, "the server was not asked"
    assert SECRET not in final and "x-SECRET" not in final, final
    assert final == "error network: the server's reply has an unexpected content type", final


@pytest.mark.parametrize("reply,shown", [
    (pkt(f"ERR {SECRET} internal error text\n"), "the server reported an error"),
    (f"+OK {SECRET}\r\n".encode(), None),  # not git at all
])
def test_error_text_does_not_echo_a_git_protocol_reply(private, reply, shown):
    srv = Listener(reply=reply)
    try:
        s = private.new_session()
        final = checkout(s, f"git://127.0.0.1:{srv.port}/x.git dir={uniq('err')}")
    finally:
        srv.close()
    assert srv.connections >= 1
    assert SECRET not in final and "+OK" not in final, final
    assert final.startswith("error network: "), final
    assert shown is None or final.endswith(shown), final


# --- local sources -----------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["path", "file", "localhost"])
def test_local_source_outside_the_roots_is_refused(strict, outside, form):
    s = strict.new_session()
    path = f"{outside}/out"
    url = {"path": path, "file": f"file://{path}", "localhost": f"file://localhost{path}"}[form]
    rel = uniq("out")
    final = checkout(s, f"{url} dir={rel}")
    assert final == f"error policy: {path} is outside the workspace and git_local_roots", final
    assert not (strict.ws / rel).exists(), "a refused checkout made its target"


def test_missing_source_outside_the_roots_is_refused_not_missing(strict):
    s = strict.new_session()
    final = checkout(s, f"file:///root/{uniq('nope')}/x.git dir={uniq('nope')}")
    assert FINAL_RE.fullmatch(final).group(2) == "policy", final


@pytest.mark.parametrize("form", ["path", "file"])
def test_local_source_below_a_root_is_cloned(strict, outside, form):
    s = strict.new_session()
    path = f"{outside}/rooted/repo"
    rel = uniq("in")
    final = checkout(s, f"{path if form == 'path' else 'file://' + path} dir={rel}")
    assert final.startswith("ok "), final
    assert (strict.ws / rel / "data").read_text() == f"rooted/repo {SECRET}\n"


@pytest.mark.parametrize("form", ["path", "file"])
@pytest.mark.parametrize("where", ["inside", "host"])
def test_repository_in_the_workspace_is_cloned_by_default(private, form, where):
    """By its path as commands see it (/workspace/... in the sandbox) or its host path."""
    rel = uniq("wsrepo")
    git_repo_in(private, rel)
    s = private.new_session()
    path = f"{private.cmd_ws if where == 'inside' else private.ws}/{rel}"
    final = checkout(s, f"{path if form == 'path' else 'file://' + path} dir={uniq('copy')}")
    assert final.startswith("ok "), final


def test_workspace_is_read_by_its_inside_path_below_a_private_directory():
    """The workspace's host path may not be traversable by the sandbox's user; the path as
    commands see it still works (sbxfs-git reads it where the sandbox does)."""
    m = ConfMount(tempfile.mkdtemp(prefix="sbxfs-it-pol-"), "")
    try:
        m.start(timeout=10)
        assert os.stat(m.tmp).st_mode & 0o777 == 0o700
        git_repo_in(m, "src")
        s = m.new_session()
        final = checkout(s, f"{m.cmd_ws}/src dir=copy")
        assert final.startswith("ok "), final
        assert (m.ws / "copy" / "data").read_text() == "ws\n"
    finally:
        stop_mount(m)


@pytest.mark.parametrize("escape", ["{ws}/..", "{ws}/../..", "{ws}/../../etc", "{ws}x"])
def test_leaving_the_workspace_by_name_is_refused(strict, escape):
    s = strict.new_session()
    path = escape.format(ws=strict.cmd_ws)
    final = checkout(s, f"{path} dir={uniq('esc')}")
    assert final == f"error policy: {path} is outside the workspace and git_local_roots", final


def test_symlink_in_the_workspace_to_outside_is_refused(strict, outside):
    """The real path counts: a link the sandbox planted in the workspace leads nowhere."""
    s = strict.new_session()
    link = uniq("link")
    os.symlink(f"{outside}/out", strict.ws / link)
    final = checkout(s, f"{strict.ws}/{link} dir={uniq('ln')}")
    assert final == f"error policy: {strict.ws}/{link} is outside the workspace and " \
                    f"git_local_roots", final


@pytest.mark.parametrize("trick", ["alternates", "gitfile"])
def test_repository_pointing_outside_is_not_read(strict, outside, trick):
    """A workspace repository whose object store (alternates) or .git file leads outside the
    roots: the clone cannot read there (Landlock), so nothing of it reaches the clone."""
    rel = uniq(trick)
    if trick == "alternates":
        git_repo_in(strict, rel)
        alt = strict.ws / rel / ".git" / "objects" / "info" / "alternates"
        alt.write_text(f"{outside}/out/.git/objects\n")
        # one ref whose objects only exist out there
        head = run_proc([GIT, "-C", str(outside / "out"), "rev-parse", "HEAD"]).stdout.decode()
        (strict.ws / rel / ".git" / "refs" / "heads" / "stolen").write_text(head)
        src = f"{strict.ws}/{rel}"
    else:
        (strict.ws / rel).mkdir()
        (strict.ws / rel / ".git").write_text(f"gitdir: {outside}/out/.git\n")
        src = f"{strict.ws}/{rel}"
    s = strict.new_session()
    target = uniq("tr")
    final = checkout(s, f"{src} branch=stolen dir={target}" if trick == "alternates"
                     else f"{src} dir={target}")
    assert not final.startswith("ok "), final
    leaked = run_proc(["grep", "-rl", SECRET, str(strict.ws / target)]) \
        if (strict.ws / target).exists() else None
    assert leaked is None or leaked.stdout == b"", leaked.stdout


@pytest.mark.parametrize("trick", ["gitfile", "symlink", "alternates"])
def test_pointer_to_a_host_path_does_not_tell_whether_it_exists(strict, outside, trick):
    """A workspace repository whose .git file, .git symlink or alternates name a host path
    outside the roots: the checkout reads the same, byte for byte, whether that path exists or
    not, and names no host path (neither that one nor the workspace's backing or staging path
    nor the daemon's state)."""
    rel = uniq(trick)
    if trick == "alternates":
        git_repo_in(strict, rel)
        # a ref whose objects only exist out there (if anywhere)
        head = run_proc([GIT, "-C", str(outside / "out"), "rev-parse", "HEAD"]).stdout.decode()
        (strict.ws / rel / ".git" / "refs" / "heads" / "stolen").write_text(head)
    else:
        (strict.ws / rel).mkdir()
    s = strict.new_session()
    texts = []
    for there in (f"{outside}/out/.git", f"{outside}/{uniq('missing')}/.git"):
        if trick == "gitfile":
            (strict.ws / rel / ".git").write_text(f"gitdir: {there}\n")
        elif trick == "symlink":
            (strict.ws / rel / ".git").unlink(missing_ok=True)
            os.symlink(there, strict.ws / rel / ".git")
        else:
            (strict.ws / rel / ".git" / "objects" / "info" / "alternates").write_text(
                f"{there}/objects\n")
        assert write_errno(Path(s) / "checkout",
                           f"{strict.cmd_ws}/{rel} dir={uniq('t')}\n") == 0
        texts.append(read_bytes(Path(s) / "checkout", timeout=60).decode())
    assert texts[0] == texts[1], texts
    final = texts[0].splitlines()[-1]
    assert final == f"error not-found: {strict.cmd_ws}/{rel}: not a git repository, or not " \
                    f"one a checkout may read", final
    hosts = [str(outside), str(strict.state), "/run/sbxfs-"]
    if strict.cmd_ws != str(strict.ws):  # else the workspace is seen by its host path
        hosts += [str(strict.ws), str(strict.tmp)]
    for host in hosts:
        assert host not in texts[0], (host, texts[0])
