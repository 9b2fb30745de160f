"""Actors for the POSIX suite: each is a helper process with its own uid, gid, supplementary
groups and umask that runs the calls of posixops.py (or of os) on request, so a test can act as
root or as an unprivileged user, or as several users at once, through the same mount.

    a = Actor("alice", uid=4001, gid=4001, groups=[4100])
    a.mkdir(path, 0o755)                 # raises OSError like the call would
    assert a.err("rmdir", path) == errno.ENOTEMPTY
    fd = a.open(path, os.O_RDWR)         # the helper's fd, usable in later calls

Calls are bounded (IO_TIMEOUT): a hung daemon fails the test instead of hanging it.
"""

import os
import pickle
import select
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from sbxutil import IO_TIMEOUT, SbxMount, abort_all_mounts, started  # noqa: F401

HERE = Path(__file__).resolve().parent

SERVER_LOOP = r'''
import os, pickle, struct, sys, traceback
os.umask(int(os.environ["POSIX_UMASK"], 8))
_in, _out = sys.stdin.buffer, sys.stdout.buffer
def _msg():
    hdr = _in.read(4)
    if len(hdr) < 4:
        return None
    return pickle.loads(_in.read(struct.unpack("<I", hdr)[0]))
while True:
    req = _msg()
    if req is None:
        break
    name, args, kwargs = req
    try:
        fn = globals().get(name) if not name.startswith("os.") else getattr(os, name[3:])
        if fn is None:
            fn = getattr(os, name)
        res = ("ok", fn(*args, **kwargs))
    except OSError as e:
        res = ("oserr", e.errno, str(e))
    except BaseException:
        res = ("exc", traceback.format_exc())
    data = pickle.dumps(res)
    _out.write(struct.pack("<I", len(data)) + data)
    _out.flush()
'''


def _plain(x):
    """Paths and str subclasses as plain str: the helper only knows the standard library."""
    if isinstance(x, (str, os.PathLike)) and type(x) is not str:
        return os.fspath(x) if not isinstance(x, str) else str.__str__(x)
    return x


class Actor:
    """A helper process acting as one identity. uid None: the test's own identity (root)."""

    def __init__(self, name, uid=None, gid=None, groups=(), umask=0o022):
        self.name = name
        self.uid, self.gid, self.groups = uid, gid, list(groups)
        source = (HERE / "posixops.py").read_text() + SERVER_LOOP
        cmd = ["/usr/bin/python3", "-c", source]
        if uid is not None:
            grp = (["--groups=" + ",".join(str(g) for g in groups)] if groups
                   else ["--clear-groups"])
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", *grp, "--"] + cmd
        env = {"PATH": "/usr/bin:/bin", "POSIX_UMASK": f"{umask:o}", "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd="/", env=env, start_new_session=True)
        self.pid = self.proc.pid
        ident = self.call("identity")
        self.pid = ident[3]

    def call(self, name, *args, timeout=IO_TIMEOUT, **kwargs):
        args = tuple(_plain(x) for x in args)
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        data = pickle.dumps((name, args, kwargs))
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pytest.fail(f"actor {self.name} is gone (exit {self.proc.poll()})", pytrace=False)
        out = self.proc.stdout
        deadline = time.monotonic() + timeout
        buf = b""
        need = 4
        length = None
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                self.proc.kill()
                pytest.fail(f"actor {self.name}: {name}{args!r} still blocked after "
                            f"{timeout}s (daemon hung?)", pytrace=False)
            chunk = os.read(out.fileno(), need - len(buf))
            if not chunk:
                pytest.fail(f"actor {self.name} died during {name}{args!r}", pytrace=False)
            buf += chunk
            if length is None and len(buf) >= 4:
                length = struct.unpack("<I", buf[:4])[0]
                buf = buf[4:]
                need = length
        res = pickle.loads(buf)
        if res[0] == "ok":
            return res[1]
        if res[0] == "oserr":
            raise OSError(res[1], res[2])
        pytest.fail(f"actor {self.name}: {name}{args!r} raised:\n{res[1]}", pytrace=False)

    def err(self, name, *args, **kwargs):
        """errno of the call, 0 if it succeeded."""
        try:
            self.call(name, *args, **kwargs)
        except OSError as e:
            return e.errno
        return 0

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *a, **k: self.call(name, *a, **k)

    def quit(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


class AllowOtherMount(SbxMount):
    """An sbxfs mount other users can reach: -o allow_other, and a 0755 temp dir."""

    def __init__(self, tmp, config_text=None):
        super().__init__(tmp)
        os.chmod(self.tmp, 0o755)
        self.config = None
        if config_text is not None:
            self.config = self.tmp / "sbxfs.ini"
            self.config.write_text(config_text)

    def command_line(self):
        cmd = super().command_line()
        extra = ["-o", "allow_other"]
        if self.config:
            extra += ["-c", str(self.config)]
        return cmd[:-1] + extra + cmd[-1:]


def start_mount(prefix, config_text=None):
    m = AllowOtherMount(tempfile.mkdtemp(prefix=prefix), config_text)
    return started(m)
