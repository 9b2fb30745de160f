"""sbxfs: the hosted Sandbox SDK's session API, in Python naming (snake_case methods and
keywords, dicts and dataclasses for results), over a local sbxfs mount or a fleet of them. Standard library only;
the files are the protocol. Calls block; use threads to run several at once."""

from .commands import ExecResult
from .errors import (BackupNotFoundError, CodeInterpreterUnavailableError, CommandTimeoutError, ContextNotFoundError,
                     GitAuthenticationError, GitBranchNotFoundError, GitCheckoutError,
                     GitNetworkError, GitRepositoryNotFoundError, GitTimeoutError,
                     InvalidGitUrlError, InvalidPortError, NetworkPolicyError,
                     PermissionDeniedError,
                     PortAlreadyExposedError, PortLimitError, PortNotExposedError,
                     ProcessExistsError,
                     ProcessExitedBeforeReadyError, ProcessNotFoundError,
                     ProcessReadyTimeoutError, ResourceBusyError, SandboxAlreadyExistsError,
                     SandboxError, SandboxLimitError, SandboxNotFoundError,
                     SessionAlreadyExistsError, SessionNotFoundError, TerminalError,
                     ValidationError)
from .errors import FileExistsError_ as FileExistsError  # noqa: A001 (also Python's own)
from .errors import FileNotFoundError_ as FileNotFoundError  # noqa: A001
from .errors import IsDirectoryError_ as IsDirectoryError
from .errors import NotDirectoryError_ as NotDirectoryError
from .fleet import Fleet, FleetSandbox, get_fleet
from .processes import Process
from .session import ExecutionSession, Sandbox, get_sandbox
from .terminals import Terminal

__all__ = [
    "get_sandbox", "Sandbox", "ExecutionSession", "get_fleet", "Fleet", "FleetSandbox", "ExecResult", "Process", "Terminal",
    "SandboxError", "SessionNotFoundError", "SessionAlreadyExistsError", "ProcessNotFoundError",
    "ProcessExistsError", "ProcessReadyTimeoutError", "ProcessExitedBeforeReadyError",
    "FileNotFoundError", "FileExistsError", "IsDirectoryError", "NotDirectoryError",
    "PermissionDeniedError", "ValidationError", "ResourceBusyError", "CommandTimeoutError",
    "GitCheckoutError", "GitRepositoryNotFoundError", "GitBranchNotFoundError",
    "GitAuthenticationError", "InvalidGitUrlError", "GitNetworkError", "GitTimeoutError",
    "ContextNotFoundError", "CodeInterpreterUnavailableError", "TerminalError",
    "PortAlreadyExposedError", "PortNotExposedError", "InvalidPortError", "PortLimitError",
    "BackupNotFoundError", "NetworkPolicyError", "SandboxNotFoundError",
    "SandboxAlreadyExistsError", "SandboxLimitError",
]
