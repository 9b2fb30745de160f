"""exec and exec_stream: a command submitted through a run handle, its result from
runs/N/result."""

import base64
import codecs
import os
import queue
import threading
from dataclasses import dataclass
from typing import Optional

from .errors import CommandTimeoutError, ValidationError, map_error
from .fsio import ENV_NAME, follow, read_bytes, read_json, shell_quote, submit, write_control
from .times import iso


@dataclass
class ExecResult:
    success: bool
    exit_code: int
    stdout: str
    stderr: str
    command: str
    duration: int
    timestamp: str
    session_id: str
    run: int
    signal: Optional[str] = None
    timed_out: bool = False
    truncated: bool = False
    error: Optional[str] = None


def env_cwd_prefix(env=None, cwd=None):
    """`cd -- DIR || exit; export A=...; ` for a per-call cwd and env."""
    prefix = ""
    if cwd is not None:
        prefix += f"cd -- {shell_quote(cwd)} || exit $?; "
    for name, value in (env or {}).items():
        if not ENV_NAME.match(name):
            raise ValidationError(f"invalid environment variable name: {name}")
        if value is None:
            prefix += f"unset {name}; "
        else:
            prefix += f"export {name}={shell_quote(str(value))}; "
    return prefix


def wrap_command(command, env=None, cwd=None):
    """The command with a per-call env and cwd: in a subshell, so they hold for it alone."""
    prefix = env_cwd_prefix(env, cwd)
    if not prefix:
        return command
    return f"( {prefix}eval {shell_quote(command)}\n)"


def _decode(raw, name):
    value = raw.get(name) or ""
    if raw.get(f"{name}Encoding") == "base64":
        return base64.b64decode(value).decode("utf-8", "replace")
    return value


def to_exec_result(raw, run_dir, command):
    """The SDK's ExecResult from the daemon's result JSON; a stream past the 1 MiB the JSON
    embeds is read whole from runs/N/."""
    out = {name: _decode(raw, name) for name in ("stdout", "stderr")}
    for name in out:
        if raw.get(f"{name}Truncated") and not raw.get("truncated"):
            out[name] = read_bytes(os.path.join(run_dir, name)).decode("utf-8", "replace")
    return ExecResult(
        success=raw["success"], exit_code=raw["exitCode"], stdout=out["stdout"],
        stderr=out["stderr"], command=command, duration=raw["duration"],
        timestamp=raw["timestamp"], session_id=raw["sessionId"], run=raw["run"],
        signal=raw.get("signal"), timed_out=raw.get("timedOut", False),
        truncated=raw.get("truncated", False), error=raw.get("error"))


def submit_command(session, text, timeout):
    """Submits on the session's cmd; returns the run's directory. A per-call timeout is the
    session's `ctl timeout`, which the next command to start takes: it is written only once
    every command this client submitted to the session has ended, so that next command is
    this one."""
    if timeout is not None and (not isinstance(timeout, int) or timeout < 0):
        raise ValidationError(f"invalid timeout: {timeout!r}")
    with session._submit_lock:
        try:
            if timeout is not None:
                session._drain()
                write_control(os.path.join(session.dir, "ctl"), f"timeout {timeout}\n")
            n = submit(os.path.join(session.dir, "cmd"), text)
        except OSError as exc:
            raise map_error(exc, "session", f"session {session.id}") from None
        session._begin(n)
    return n, os.path.join(session.dir, "runs", str(n))


def _result(session, n, run_dir, command):
    try:
        raw = read_json(os.path.join(run_dir, "result"))
    finally:
        session._end(n)
    result = to_exec_result(raw, run_dir, command)
    if result.timed_out:
        err = CommandTimeoutError(f"command timed out: {command}", details=result)
        err.result = result
        raise err
    return result


def _follow_output(run_dir, on_output):
    """Threads that call on_output(stream, text) as the run's stdout and stderr come."""
    threads = []
    for stream in ("stdout", "stderr"):
        decoder = codecs.getincrementaldecoder("utf-8")("replace")

        def run(stream=stream, decoder=decoder):
            def on_chunk(data):
                text = decoder.decode(data)
                if text:
                    on_output(stream, text)
            follow(os.path.join(run_dir, stream), on_chunk)
            rest = decoder.decode(b"", final=True)
            if rest:
                on_output(stream, rest)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
    return threads


def run_exec(session, command, timeout=None, env=None, cwd=None, on_output=None):
    n, run_dir = submit_command(session, wrap_command(command, env, cwd), timeout)
    threads = _follow_output(run_dir, on_output) if on_output else []
    try:
        return _result(session, n, run_dir, command)
    finally:
        for t in threads:
            t.join()


def exec_stream(session, command, timeout=None, env=None, cwd=None):
    """Events as dicts, as the SDK's SSE events: start, stdout, stderr, complete (or error)."""
    events = queue.Queue()
    done = object()

    def produce():
        try:
            n, run_dir = submit_command(session, wrap_command(command, env, cwd), timeout)
            events.put({"type": "start", "timestamp": iso(), "command": command, "run": n,
                        "session_id": session.id})
            for t in _follow_output(run_dir, lambda s, d: events.put(
                    {"type": s, "timestamp": iso(), "data": d})):
                t.join()
            result = _result(session, n, run_dir, command)
            events.put({"type": "complete", "timestamp": iso(), "exit_code": result.exit_code,
                        "result": result})
        except Exception as exc:  # the stream's consumer gets it as an event
            events.put({"type": "error", "timestamp": iso(), "error": str(exc)})
        events.put(done)

    threading.Thread(target=produce, daemon=True).start()
    while True:
        ev = events.get()
        if ev is done:
            return
        yield ev
