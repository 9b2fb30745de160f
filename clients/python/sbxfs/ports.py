"""Exposed ports: the mount's ports/ directory as the SDK's expose_port, unexpose_port and
get_exposed_ports. The url is where this host reaches the port (the daemon's listener), where
the hosted SDK gives a preview hostname."""

import os
import re

from . import osio
from .errors import InvalidPortError, ValidationError, map_error
from .fsio import parse_status, read_text, write_control

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_port(port):
    """A port as ports/ names it: an int from 1 to 65535 (not a bool)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidPortError(f"invalid port {port!r}: an integer from 1 to 65535")
    return port


def _dir(sandbox, port):
    return os.path.join(sandbox.mountpoint, "ports", str(port))


def _read(sandbox, port):
    """The SDK's shape of an exposed port, from its status file."""
    st = parse_status(read_text(os.path.join(_dir(sandbox, port), "status")))
    out = {"url": st["url"], "port": int(st["port"]), "status": "active"}
    if "name" in st:
        out["name"] = st["name"]
    return out


def expose_port(sandbox, port, name=None):
    """Exposes the sandbox's port on this host: {url, port, name}."""
    _check_port(port)
    if name is not None and (not isinstance(name, str) or _CONTROL.search(name)):
        raise ValidationError(f"port {port}: a name is one line of text")
    path = _dir(sandbox, port)
    try:
        osio.mkdir(path)
    except OSError as exc:
        raise map_error(exc, "port", f"port {port}") from None
    try:
        if name is not None:
            write_control(os.path.join(path, "name"), f"{name}\n")
        url = _read(sandbox, port)["url"]
    except OSError as exc:
        try:
            osio.rmdir(path)
        except OSError:
            pass
        raise map_error(exc, "port", f"port {port}") from None
    out = {"url": url, "port": port}
    if name is not None:
        out["name"] = name
    return out


def unexpose_port(sandbox, port):
    """Closes the port on this host: its connections are reset; the server keeps running."""
    _check_port(port)
    try:
        osio.rmdir(_dir(sandbox, port))
    except OSError as exc:
        raise map_error(exc, "port", f"port {port}") from None


def get_exposed_ports(sandbox):
    """Every exposed port: [{url, port, name?, status}], by port."""
    try:
        names = osio.listdir(os.path.join(sandbox.mountpoint, "ports"))
    except OSError as exc:
        raise map_error(exc, "port", "ports") from None
    out = []
    for port in sorted(int(n) for n in names if re.fullmatch(r"[1-9][0-9]*", n)):
        try:
            out.append(_read(sandbox, port))
        except FileNotFoundError:
            continue  # unexposed meanwhile
        except OSError as exc:
            raise map_error(exc, "port", f"port {port}") from None
    return out
