"""ExecutionSession (a directory sessions/ID/) and Sandbox (the mount, acting as the session
default)."""

import os
import re
import posixpath
import threading

from . import osio
from .remote import Remote
from . import backups, commands, contexts, files, journal, network, ports, processes, terminals
from .errors import SandboxError, SessionNotFoundError, ValidationError, map_error
from .fsio import ENV_NAME, env_value, read_text, write_control
from .git import git_checkout
from .names import check_name
from .times import iso


def env_lines(env_vars):
    """NAME=VALUE lines for an env file; a value of None unsets (-NAME)."""
    text = ""
    for name, value in (env_vars or {}).items():
        if not ENV_NAME.match(name):
            raise ValidationError(f"invalid environment variable name: {name}")
        text += f"-{name}\n" if value is None else f"{name}={env_value(value)}\n"
    return text


class ExecutionSession:
    def __init__(self, sandbox, id):
        self.sandbox = sandbox
        self.id = check_name(id, "session")
        self.dir = os.path.join(sandbox.mountpoint, "sessions", id)
        self._submit_lock = threading.Lock()
        self._inflight = set()
        self._inflight_cv = threading.Condition()

    def __repr__(self):
        return f"ExecutionSession(id={self.id!r})"

    def _begin(self, n):
        with self._inflight_cv:
            self._inflight.add(n)

    def _end(self, n):
        with self._inflight_cv:
            self._inflight.discard(n)
            self._inflight_cv.notify_all()

    def _drain(self):
        """Returns once every command this client submitted to the session has ended."""
        with self._inflight_cv:
            self._inflight_cv.wait_for(lambda: not self._inflight)

    # commands
    def exec(self, command, timeout=None, env=None, cwd=None, stream=False, on_output=None):
        return commands.run_exec(self, command, timeout=timeout, env=env, cwd=cwd,
                                 on_output=on_output)

    def exec_stream(self, command, timeout=None, env=None, cwd=None):
        return commands.exec_stream(self, command, timeout=timeout, env=env, cwd=cwd)

    # processes
    def start_process(self, command, process_id=None, env=None, cwd=None, encoding=None,
                      auto_cleanup=False, timeout=None):
        return processes.start_process(self, command, process_id=process_id, env=env, cwd=cwd,
                                       encoding=encoding, auto_cleanup=auto_cleanup,
                                       timeout=timeout)

    def list_processes(self):
        return processes.list_processes(self)

    def get_process(self, id):
        return processes.get_process(self, id)

    def kill_process(self, id, signal=None):
        processes.get_process(self, id).kill(signal)

    def kill_all_processes(self):
        return processes.kill_all_processes(self)

    def cleanup_completed_processes(self):
        return processes.cleanup_completed_processes(self)

    def get_process_logs(self, id):
        return processes.Process(self, id).get_logs()

    def stream_process_logs(self, id):
        return processes.stream_process_logs(self, id)

    # files
    def write_file(self, path, content, encoding=None):
        return files.write_file(self, path, content, encoding=encoding)

    def read_file(self, path, encoding=None, max_bytes=files.READ_FILE_MAX):
        return files.read_file(self, path, encoding=encoding, max_bytes=max_bytes)

    def read_file_stream(self, path):
        return files.read_file_stream(self, path)

    def mkdir(self, path, recursive=False):
        return files.mkdir(self, path, recursive=recursive)

    def delete_file(self, path):
        return files.delete_file(self, path)

    def rename_file(self, old_path, new_path):
        return files.rename_file(self, old_path, new_path)

    def move_file(self, source_path, destination_path):
        return files.move_file(self, source_path, destination_path)

    def list_files(self, path, recursive=False, include_hidden=False):
        return files.list_files(self, path, recursive=recursive, include_hidden=include_hidden)

    def exists(self, path):
        return files.exists(self, path)

    def watch(self, path, on_event):
        return files.watch(self, path, on_event)

    def git_checkout(self, url, branch=None, target_dir=None, depth=None,
                     clone_timeout_ms=None):
        return git_checkout(self, url, branch=branch, target_dir=target_dir, depth=depth,
                            clone_timeout_ms=clone_timeout_ms)

    # env
    def set_env_vars(self, env_vars):
        """The session's own env: in force for the commands submitted after it."""
        try:
            write_control(os.path.join(self.dir, "env"), env_lines(env_vars))
        except OSError as exc:
            raise map_error(exc, "session", f"session {self.id}") from None

    # terminals
    def create_terminal(self, command=None, cwd=None, env=None, cols=None, rows=None, id=None):
        return terminals.create_terminal(self, command=command, cwd=cwd, env=env, cols=cols,
                                         rows=rows, id=id)

    terminal = create_terminal

    # code interpreter (contexts belong to the sandbox)
    def create_code_context(self, language="python", cwd=None, env_vars=None, timeout=None,
                            id=None):
        return contexts.create_code_context(self.sandbox, language=language, cwd=cwd,
                                            env_vars=env_vars, timeout=timeout, id=id)

    def run_code(self, code, context=None, language="python", timeout=None, on_stdout=None,
                 on_stderr=None, on_result=None, on_error=None):
        return contexts.run_code(self.sandbox, code, context=context, language=language,
                                 timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr,
                                 on_result=on_result, on_error=on_error)

    def list_code_contexts(self):
        return contexts.list_code_contexts(self.sandbox)

    def delete_code_context(self, id):
        contexts.delete_code_context(self.sandbox, id)


class Sandbox(ExecutionSession):
    """The sbxfs mounted at `mountpoint`; it acts as the session `default`."""

    def __init__(self, mountpoint, workspace_path=None):
        self.mountpoint = str(mountpoint)
        super().__init__(self, "default")
        self.workspace = os.path.join(self.mountpoint, "workspace")
        # The workspace as commands see it: /workspace, and the caller's own workspace_path (the
        # backing directory, which commands see under --isolation none). Nothing a command can
        # change (a session's HOME, its cwd) decides where the workspace is.
        self.workspace_roots = ["/workspace"]
        if workspace_path:
            self.workspace_roots.insert(0, posixpath.normpath(str(workspace_path)))
        self._lock = threading.Lock()
        self._default_contexts = {}
        # One object per session, so a per-call timeout waits for every caller's commands.
        self._sessions = {"default": self}

    def create_session(self, id=None, env=None, cwd=None, command_timeout_ms=None):
        """A session with its env, cwd (made in the workspace if missing) and command timeout;
        on any failure it is removed again."""
        if id is not None:
            check_name(id, "session")
        sessions = os.path.join(self.mountpoint, "sessions")
        try:
            if id is None:
                id = read_text(os.path.join(sessions, "clone")).strip()
            else:
                osio.mkdir(os.path.join(sessions, id))
        except OSError as exc:
            raise map_error(exc, "session", f"session {id}") from None
        session = self._session(id)
        try:
            if env:
                session.set_env_vars(env)
            if cwd is not None:
                self._set_cwd(session, cwd)
            if command_timeout_ms is not None:
                write_control(os.path.join(session.dir, "timeout"), f"{command_timeout_ms}\n")
        except Exception as exc:
            try:
                osio.rmdir(session.dir)
            except OSError:
                pass
            with self._lock:
                self._sessions.pop(id, None)
            if isinstance(exc, OSError) and not isinstance(exc, SandboxError):
                raise map_error(exc, "session", f"session {id}") from None
            raise
        return session

    def _session(self, id):
        with self._lock:
            return self._sessions.setdefault(id, ExecutionSession(self, id))

    def _set_cwd(self, session, cwd):
        path = os.path.join(session.dir, "cwd")
        try:
            write_control(path, f"{env_value(cwd)}\n")
        except FileNotFoundError:
            files.mkdir(session, cwd, recursive=True)
            write_control(path, f"{env_value(cwd)}\n")

    def get_session(self, id):
        """An existing session, resumed with its env and cwd."""
        check_name(id, "session")
        if id == "clone" or not osio.isdir(os.path.join(self.mountpoint, "sessions", id)):
            raise SessionNotFoundError(f"session {id}: not found", errno="ENOENT")
        return self._session(id)

    def delete_session(self, id):
        """Ends the session's shell and every process it started."""
        check_name(id, "session")
        try:
            osio.rmdir(os.path.join(self.mountpoint, "sessions", id))
        except OSError as exc:
            raise map_error(exc, "session", f"session {id}") from None
        with self._lock:
            self._sessions.pop(id, None)
        return {"success": True, "session_id": id,
                "timestamp": iso()}

    def create_backup(self, dir, name=None):
        """A snapshot of the workspace, at one instant: {'id', 'dir'[, 'name']}."""
        return backups.create_backup(self, dir, name=name)

    def restore_backup(self, backup, force=False):
        """The backup's directory made as it was: {'success', 'id', 'dir'}."""
        return backups.restore_backup(self, backup, force=force)

    def delete_backup(self, backup):
        return backups.delete_backup(self, backup)

    def set_env_vars(self, env_vars):
        """The sandbox-wide env (the mount's env): every session, except names a session set
        itself."""
        try:
            write_control(os.path.join(self.mountpoint, "env"), env_lines(env_vars))
        except OSError as exc:
            raise map_error(exc, "session", "sandbox env") from None

    # exposed ports (ports/)
    def expose_port(self, port, name=None):
        """Makes the sandbox's port reachable from this host: {url, port, name}."""
        return ports.expose_port(self, port, name=name)

    def unexpose_port(self, port):
        """Closes it on this host and resets its connections; the server keeps running."""
        ports.unexpose_port(self, port)

    def get_exposed_ports(self):
        return ports.get_exposed_ports(self)

    # the network (network/)
    def get_network_policy(self):
        """{"mode", "allow": [{"pattern", "private"}], "deny": [pattern]}, in the order written."""
        return network.get_network_policy(self)

    def set_network_policy(self, mode=None, allow=(), deny=()):
        """A whole new policy, applied at once or not at all: a bad pattern is a ValidationError,
        a switch to or from host a NetworkPolicyError. `allow` takes patterns or dicts."""
        network.set_network_policy(self, mode=mode, allow=allow, deny=deny)

    def get_network_log(self, session=None, limit=None):
        """network/log (sessions/ID/network with `session`) as dicts by the log's fields."""
        return network.get_network_log(self, session=session, limit=limit)

    def get_journal(self, since=None, session=None, limit=None):
        """The audit journal's events kept (sessions/ID/journal with `session`), oldest
        first, from sequence number `since` on; `limit` keeps the last ones."""
        return journal.get_journal(self, since=since, session=session, limit=limit)

    def watch_journal(self, since=None, session=None, stop=None):
        """The events from `since` on (None: only new ones), then each new one as it comes: a
        generator that ends once `stop()` is true (checked at least every second)."""
        return journal.watch_journal(self, since=since, session=session, stop=stop)

    def get_metrics(self, session=None, proc=None):
        """The samples of a metrics file: [{"name", "labels", "value"}]."""
        return journal.get_metrics(self, session=session, proc=proc)


def get_sandbox(mountpoint, workspace_path=None, token=None, cafile=None):
    """The sandbox of the sbxfs mounted at `mountpoint`; a path that is no sbxfs mount (no
    sessions/default in it) is a SandboxError that says so, not a missing session later. A URL
    (http(s)://HOST:PORT/v1/sandbox/ID, with token, else $SBXFS_TOKEN, and cafile) is that
    sandbox of a fleet over sbxfs-bridge's tree routes: the same calls, each a request
    (docs/clients.md says what a mount has that HTTP has not)."""
    if isinstance(mountpoint, str) and re.match(r"^https?://", mountpoint):
        try:
            remote = Remote(mountpoint, token=token or os.environ.get("SBXFS_TOKEN"), cafile=cafile)
        except ValueError as exc:
            raise SandboxError(str(exc), errno="EINVAL") from None
        return Sandbox(remote.root, workspace_path=workspace_path)
    if not os.path.isdir(os.path.join(mountpoint, "sessions", "default")):
        raise SandboxError(f"{mountpoint}: not an sbxfs mount (it has no sessions/default)",
                           errno="ENOENT")
    return Sandbox(mountpoint, workspace_path=workspace_path)
