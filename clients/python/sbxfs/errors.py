"""The SDK's error classes, raised with the errno of the file operation that failed."""

import builtins
import errno as _errno


class SandboxError(Exception):
    code = "INTERNAL_ERROR"

    def __init__(self, message, *, errno=None, details=None, path=None):
        super().__init__(message)
        self.errno = errno
        self.details = details
        self.path = path


def _kind(name, code):
    return type(name, (SandboxError,), {"code": code})


SessionNotFoundError = _kind("SessionNotFoundError", "SESSION_NOT_FOUND")
SessionAlreadyExistsError = _kind("SessionAlreadyExistsError", "SESSION_ALREADY_EXISTS")
ProcessNotFoundError = _kind("ProcessNotFoundError", "PROCESS_NOT_FOUND")
ProcessExistsError = _kind("ProcessExistsError", "PROCESS_EXISTS")
ProcessReadyTimeoutError = _kind("ProcessReadyTimeoutError", "PROCESS_READY_TIMEOUT")
ProcessExitedBeforeReadyError = _kind("ProcessExitedBeforeReadyError",
                                      "PROCESS_EXITED_BEFORE_READY")
# The file errors are also Python's own, so `except FileNotFoundError` catches either.
FileNotFoundError_ = type("FileNotFoundError", (SandboxError, builtins.FileNotFoundError),
                          {"code": "FILE_NOT_FOUND"})
FileExistsError_ = type("FileExistsError", (SandboxError, builtins.FileExistsError),
                        {"code": "FILE_EXISTS"})
IsDirectoryError_ = type("IsDirectoryError", (SandboxError, builtins.IsADirectoryError),
                         {"code": "IS_DIRECTORY"})
NotDirectoryError_ = type("NotDirectoryError", (SandboxError, builtins.NotADirectoryError),
                          {"code": "NOT_DIRECTORY"})
PermissionDeniedError = _kind("PermissionDeniedError", "PERMISSION_DENIED")
ValidationError = _kind("ValidationError", "VALIDATION_FAILED")
ResourceBusyError = _kind("ResourceBusyError", "RESOURCE_BUSY")
CommandTimeoutError = _kind("CommandTimeoutError", "COMMAND_TIMEOUT")
GitCheckoutError = _kind("GitCheckoutError", "GIT_CHECKOUT_FAILED")
GitRepositoryNotFoundError = _kind("GitRepositoryNotFoundError", "GIT_REPOSITORY_NOT_FOUND")
GitBranchNotFoundError = _kind("GitBranchNotFoundError", "GIT_BRANCH_NOT_FOUND")
GitAuthenticationError = _kind("GitAuthenticationError", "GIT_AUTH_FAILED")
InvalidGitUrlError = _kind("InvalidGitUrlError", "INVALID_GIT_URL")
GitNetworkError = _kind("GitNetworkError", "GIT_NETWORK_ERROR")
GitTimeoutError = _kind("GitTimeoutError", "GIT_TIMEOUT")
ContextNotFoundError = _kind("ContextNotFoundError", "CONTEXT_NOT_FOUND")
CodeInterpreterUnavailableError = _kind("CodeInterpreterUnavailableError",
                                        "INTERPRETER_NOT_READY")
TerminalError = _kind("TerminalError", "TERMINAL_ERROR")
PortAlreadyExposedError = _kind("PortAlreadyExposedError", "PORT_ALREADY_EXPOSED")
PortNotExposedError = _kind("PortNotExposedError", "PORT_NOT_EXPOSED")
InvalidPortError = _kind("InvalidPortError", "INVALID_PORT")
# ENOSPC from ports/: [network] expose_max_ports are exposed already.
PortLimitError = _kind("PortLimitError", "PORT_LIMIT")
BackupNotFoundError = _kind("BackupNotFoundError", "BACKUP_NOT_FOUND")
# EOPNOTSUPP from network/policy: switching to or from host mode (or rules in it) needs a remount.
NetworkPolicyError = _kind("NetworkPolicyError", "NETWORK_POLICY")
# A fleet's sandboxes (fleet.py): ENOENT, EEXIST, and ENOSPC past the fleet's --max.
SandboxNotFoundError = _kind("SandboxNotFoundError", "SANDBOX_NOT_FOUND")
SandboxAlreadyExistsError = _kind("SandboxAlreadyExistsError", "SANDBOX_ALREADY_EXISTS")
SandboxLimitError = _kind("SandboxLimitError", "SANDBOX_LIMIT")

_BY_ERRNO = {
    "session": {_errno.ENOENT: SessionNotFoundError, _errno.EEXIST: SessionAlreadyExistsError},
    "process": {_errno.ENOENT: ProcessNotFoundError, _errno.EEXIST: ProcessExistsError},
    "context": {_errno.ENOENT: ContextNotFoundError},
    "terminal": {_errno.ENOENT: TerminalError, _errno.EEXIST: TerminalError},
    "port": {_errno.ENOENT: PortNotExposedError, _errno.EEXIST: PortAlreadyExposedError,
             _errno.EINVAL: InvalidPortError, _errno.ENOSPC: PortLimitError},
    "backup": {_errno.ENOENT: BackupNotFoundError},
    "sandbox": {_errno.ENOENT: SandboxNotFoundError, _errno.EEXIST: SandboxAlreadyExistsError,
                _errno.ENOSPC: SandboxLimitError},
    # E2BIG: more than 100,000 rules.
    "network": {_errno.EOPNOTSUPP: NetworkPolicyError, _errno.E2BIG: ValidationError},
    "file": {
        _errno.ENOENT: FileNotFoundError_,
        _errno.EEXIST: FileExistsError_,
        _errno.ENOTEMPTY: FileExistsError_,
        _errno.EISDIR: IsDirectoryError_,
        _errno.ENOTDIR: NotDirectoryError_,
        # A symbolic link on the way: the client follows none in the workspace.
        _errno.ELOOP: PermissionDeniedError,
        # Past read_file's max_bytes.
        _errno.EFBIG: ValidationError,
    },
}
_COMMON = {
    _errno.EACCES: PermissionDeniedError,
    _errno.EPERM: PermissionDeniedError,
    _errno.EINVAL: ValidationError,
    _errno.EBUSY: ResourceBusyError,
}


def map_error(exc, kind, what):
    """An OSError as the SDK's error for `kind` (session, process, file, ...): its message is
    `what` and the errno's words, never the host's path. A file error (`what` is then the path
    the caller gave) keeps that path in `path`, as the SDK's file errors do, and no cause, whose
    filename is the host's."""
    if not isinstance(exc, OSError) or exc.errno is None:
        return exc
    cls = _BY_ERRNO.get(kind, {}).get(exc.errno) or _COMMON.get(exc.errno, SandboxError)
    err = cls(f"{what}: {exc.strerror}", errno=_errno.errorcode.get(exc.errno, str(exc.errno)),
              path=what if kind == "file" else None)
    if kind != "file":
        err.__cause__ = exc
    return err


_GIT = {
    "not-found": GitRepositoryNotFoundError,
    "branch-not-found": GitBranchNotFoundError,
    "auth": GitAuthenticationError,
    "invalid-url": InvalidGitUrlError,
    "network": GitNetworkError,
    "timeout": GitTimeoutError,
}


def git_error(code, message):
    """`error CODE: MESSAGE`, the final line of a failed checkout."""
    cls = _GIT.get(code, GitCheckoutError)
    return cls(f"git checkout failed ({code}): {message}", details={"code": code})
