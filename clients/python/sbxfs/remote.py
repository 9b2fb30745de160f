"""A sandbox over HTTP: its tree through sbxfs-bridge's /v1/sandbox/ID/fs/ routes
(docs/api.md), under a root path of its own, so that the client's modules, which name files by
path, reach it with the same calls as a mount (osio.py and fsio.py send a path under such a
root here). Every call is one request on a kept-alive connection of the calling thread; an
error answer comes back as the OSError of the errno the server's file operation met, so the
client's errors are the same as on a mount."""

import errno as _errno
import http.client
import itertools
import json
import os
import re
import ssl
import threading
import urllib.parse

_roots = {}
_serial = itertools.count(1)
_URL_PATH = re.compile(r"^/v1/sandbox/[A-Za-z0-9._-]{1,64}/?$")
ROOT_PREFIX = "/@sbxfs-remote-"


def remote_of(path):
    """(Remote, the path below its root) for a path under a remote root, else None."""
    path = str(path)
    if not path.startswith(ROOT_PREFIX):
        return None
    root, _, rel = path.partition("/")[2].partition("/")
    remote = _roots.get("/" + root)
    return (remote, rel) if remote else None


def _oserror(name, fallback):
    num = getattr(_errno, name, None) if isinstance(name, str) else None
    if num is None:
        return OSError(_errno.EIO, fallback)
    return OSError(num, os.strerror(num))


class Remote:
    def __init__(self, url, token=None, cafile=None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not _URL_PATH.match(u.path):
            raise ValueError(f"{url}: a sandbox's URL is http(s)://HOST:PORT/v1/sandbox/ID")
        self.scheme, self.host, self.port = u.scheme, u.hostname, u.port
        self.base = u.path.rstrip("/") + "/fs/"
        self.token = token
        self.context = ssl.create_default_context(cafile=cafile) if u.scheme == "https" else None
        self.local = threading.local()
        self.root = f"{ROOT_PREFIX}{next(_serial)}"
        _roots[self.root] = self

    def _new_conn(self):
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, context=self.context)
        return http.client.HTTPConnection(self.host, self.port)

    def _url(self, rel, query):
        names = [urllib.parse.quote(n, safe="") for n in rel.split("/") if n]
        return self.base + "/".join(names) + query

    def request(self, method, rel, query="", body=None, timeout=None):
        """The response (2xx; its body unread), or the OSError of the server's answer. A kept
        connection the server closed meanwhile is opened again, once."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None)
            fresh = conn is None
            if fresh:
                conn = self.local.conn = self._new_conn()
            conn.timeout = timeout
            try:
                conn.request(method, self._url(rel, query), body=body, headers=headers)
                res = conn.getresponse()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                self.local.conn = None
                if fresh or attempt:
                    raise OSError(_errno.EIO, f"{self.host}: {exc}") from None
            except OSError as exc:
                conn.close()
                self.local.conn = None
                raise OSError(_errno.EIO, f"{self.host}: {exc}") from None
        if res.status < 300:
            return res
        data = res.read()
        try:
            e = json.loads(data)
        except ValueError:
            e = {}
        name = e.get("errno") or {401: "EACCES", 404: "ENOENT"}.get(res.status)
        raise _oserror(name, e.get("error") or f"HTTP {res.status}")

    def _bytes(self, method, rel, query="", body=None):
        return self.request(method, rel, query, body).read()

    def read_all(self, rel):
        return self._bytes("GET", rel)

    def read_now(self, rel):
        return self._bytes("GET", rel, "?nowait")

    def read_at(self, rel, offset):
        """What the file holds now from offset on (at most 16 MiB a call)."""
        return self._bytes("GET", rel, f"?nowait&offset={int(offset)}")

    def write(self, rel, data):
        self._bytes("PUT", rel, body=data.encode() if isinstance(data, str) else bytes(data))

    def submit(self, rel, text):
        return self._bytes("PUT", rel, "?reply", text.encode() if isinstance(text, str) else text)

    def follow(self, rel, on_chunk, stop=None):
        res = self.request("GET", rel)
        try:
            while chunk := res.read1(1 << 16):
                on_chunk(chunk)
                if stop is not None and stop():
                    # the rest of this answer is not read: the connection goes with it
                    self.local.conn.close()
                    self.local.conn = None
                    return
        finally:
            res.close()

    def stat(self, rel):
        return json.loads(self._bytes("GET", rel, "?stat"))

    def listdir(self, rel):
        """[{name, type}]; a name that is not UTF-8 is left out (no path of the client can name
        it)."""
        return [e for e in json.loads(self._bytes("GET", rel + "/")) if "name" in e]

    def mkdir(self, rel):
        self._bytes("POST", rel)

    def remove(self, rel):
        self._bytes("DELETE", rel)

    def rename(self, a, b):
        target = "/".join(urllib.parse.quote(n, safe="") for n in b.split("/") if n)
        self._bytes("POST", a, f"?rename={target}")
