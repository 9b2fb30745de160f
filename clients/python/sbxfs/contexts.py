"""Code interpreter contexts: contexts/NAME/ at the mount's root (issue 14), cells by run
handle."""

import json
import os
import re
import threading
import time

from . import osio
from .errors import CodeInterpreterUnavailableError, ValidationError, map_error
from .fsio import ENV_NAME, env_value, follow, read_text, submit, write_control
from .names import check_name, is_name
from .times import iso

LANGUAGES = ("python", "javascript", "typescript")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _root(sandbox):
    d = os.path.join(sandbox.mountpoint, "contexts")
    if not osio.isdir(d):
        raise CodeInterpreterUnavailableError(
            f"{sandbox.mountpoint} has no contexts/: this sbxfs has no code interpreter contexts")
    return d


def _fail(exc, id):
    return map_error(exc, "context", f"code context {id}")


def create_code_context(sandbox, language="python", cwd=None, env_vars=None, timeout=None,
                        id=None):
    if language not in LANGUAGES:
        raise ValidationError(f"unknown language: {language}")
    for name in env_vars or {}:
        if not ENV_NAME.match(name):
            raise ValidationError(f"invalid environment variable name: {name}")
    if id is not None:
        check_name(id, "code context")
    root = _root(sandbox)
    try:
        if id is None:
            id = read_text(os.path.join(root, "clone")).strip()
        else:
            osio.mkdir(os.path.join(root, id))
    except OSError as exc:
        raise _fail(exc, id) from None
    d = os.path.join(root, id)
    try:
        write_control(os.path.join(d, "language"), f"{language}\n")
        if cwd:
            write_control(os.path.join(d, "cwd"), f"{cwd}\n")
        if env_vars:
            write_control(os.path.join(d, "env"),
                          "".join(f"{k}={env_value(v)}\n" for k, v in env_vars.items()))
        if timeout:
            write_control(os.path.join(d, "timeout"), f"{timeout}\n")
        # Read back: with none given it is the one the interpreter starts in, the workspace.
        cwd = read_text(os.path.join(d, "cwd")).removesuffix("\n")
    except OSError as exc:
        # Removed again, so that a bad cwd or env leaves none of the mount's 16 contexts taken.
        try:
            osio.rmdir(d)
        except OSError:
            pass
        raise _fail(exc, id) from None
    now = iso()
    return {"id": id, "language": language, "cwd": cwd, "created_at": now, "last_used": now}


def list_code_contexts(sandbox):
    root = _root(sandbox)
    out = []
    for id in sorted(osio.listdir(root)):
        if id == "clone" or not is_name(id):
            continue

        def read(name):
            try:
                return read_text(os.path.join(root, id, name)).removesuffix("\n")
            except OSError:
                return None
        out.append({"id": id, "language": read("language"), "cwd": read("cwd")})
    return out


def delete_code_context(sandbox, id):
    check_name(id, "code context")
    try:
        osio.rmdir(os.path.join(_root(sandbox), id))
    except OSError as exc:
        raise _fail(exc, id) from None


def _snake_keys(result):
    """A displayed value's keys in Python naming (`isMainResult` -> `is_main_result`); the
    format names are lowercase already, and the values (a `json` one included) stay as given."""
    return {_CAMEL.sub(r"_\1", k).lower(): v for k, v in result.items()}


def _context_id(sandbox, context, language):
    """The context given, else one per language kept by the sandbox."""
    if context is not None:
        return check_name(context if isinstance(context, str) else context["id"], "code context")
    with sandbox._lock:
        if language not in sandbox._default_contexts:
            sandbox._default_contexts[language] = create_code_context(sandbox, language)["id"]
        return sandbox._default_contexts[language]


def run_code(sandbox, code, context=None, language="python", timeout=None, on_stdout=None,
             on_stderr=None, on_result=None, on_error=None):
    """The SDK's Execution in Python naming: results (`is_main_result`, formats), logs
    {stdout, stderr}, error, execution_count."""
    id = _context_id(sandbox, context, language)
    d = os.path.join(_root(sandbox), id)
    try:
        if timeout:
            write_control(os.path.join(d, "ctl"), f"timeout {timeout}\n")
        n = submit(os.path.join(d, "code"), code)
    except OSError as exc:
        raise _fail(exc, id) from None
    cell = os.path.join(d, "cells", str(n))
    threads = []
    for stream, callback in (("stdout", on_stdout), ("stderr", on_stderr)):
        if callback:
            def on_chunk(data, callback=callback):
                callback({"text": data.decode("utf-8", "replace"), "timestamp": time.time()})
            t = threading.Thread(target=follow, daemon=True,
                                 args=(os.path.join(cell, stream), on_chunk))
            t.start()
            threads.append(t)
    result = json.loads(read_text(os.path.join(cell, "result")))
    for t in threads:
        t.join()
    results = [_snake_keys(r) for r in result.get("results") or []]
    for r in results:
        if on_result:
            on_result(r)
    if result.get("error") and on_error:
        on_error(result["error"])
    return {"results": results, "logs": result.get("logs") or {"stdout": [], "stderr": []},
            "error": result.get("error"), "execution_count": result.get("executionCount", n)}
