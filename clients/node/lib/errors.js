// The SDK's error classes, thrown with the errno of the file operation that failed.

export class SandboxError extends Error {
	constructor(message, { code = 'INTERNAL_ERROR', errno, cause, details, path } = {}) {
		super(message, cause ? { cause } : undefined);
		this.name = new.target.name;
		this.code = code;
		if (errno !== undefined) this.errno = errno;
		if (details !== undefined) this.details = details;
		if (path !== undefined) this.path = path;
	}
}

const kinds = {
	SessionNotFoundError: 'SESSION_NOT_FOUND',
	SessionAlreadyExistsError: 'SESSION_ALREADY_EXISTS',
	ProcessNotFoundError: 'PROCESS_NOT_FOUND',
	ProcessExistsError: 'PROCESS_EXISTS',
	FileNotFoundError: 'FILE_NOT_FOUND',
	FileExistsError: 'FILE_EXISTS',
	IsDirectoryError: 'IS_DIRECTORY',
	NotDirectoryError: 'NOT_DIRECTORY',
	PermissionDeniedError: 'PERMISSION_DENIED',
	ValidationError: 'VALIDATION_FAILED',
	ResourceBusyError: 'RESOURCE_BUSY',
	CommandTimeoutError: 'COMMAND_TIMEOUT',
	CommandError: 'COMMAND_ERROR',
	GitCheckoutError: 'GIT_CHECKOUT_FAILED',
	GitRepositoryNotFoundError: 'GIT_REPOSITORY_NOT_FOUND',
	GitBranchNotFoundError: 'GIT_BRANCH_NOT_FOUND',
	GitAuthenticationError: 'GIT_AUTH_FAILED',
	InvalidGitUrlError: 'INVALID_GIT_URL',
	GitNetworkError: 'GIT_NETWORK_ERROR',
	GitTimeoutError: 'GIT_TIMEOUT',
	ContextNotFoundError: 'CONTEXT_NOT_FOUND',
	CodeInterpreterUnavailableError: 'INTERPRETER_NOT_READY',
	TerminalError: 'TERMINAL_ERROR',
	PortAlreadyExposedError: 'PORT_ALREADY_EXPOSED',
	PortNotExposedError: 'PORT_NOT_EXPOSED',
	InvalidPortError: 'INVALID_PORT',
	PortLimitError: 'PORT_LIMIT',
	BackupNotFoundError: 'BACKUP_NOT_FOUND',
	NetworkPolicyError: 'NETWORK_POLICY',
	SandboxNotFoundError: 'SANDBOX_NOT_FOUND',
	SandboxAlreadyExistsError: 'SANDBOX_ALREADY_EXISTS',
	SandboxLimitError: 'SANDBOX_LIMIT',
};

function errorClass(name, code) {
	const cls = class extends SandboxError {
		constructor(message, opts = {}) {
			super(message, { code, ...opts });
		}
	};
	Object.defineProperty(cls, 'name', { value: name });
	return cls;
}

export const SessionNotFoundError = errorClass('SessionNotFoundError', kinds.SessionNotFoundError);
export const SessionAlreadyExistsError = errorClass('SessionAlreadyExistsError', kinds.SessionAlreadyExistsError);
export const ProcessNotFoundError = errorClass('ProcessNotFoundError', kinds.ProcessNotFoundError);
export const ProcessExistsError = errorClass('ProcessExistsError', kinds.ProcessExistsError);
export const FileNotFoundError = errorClass('FileNotFoundError', kinds.FileNotFoundError);
export const FileExistsError = errorClass('FileExistsError', kinds.FileExistsError);
export const IsDirectoryError = errorClass('IsDirectoryError', kinds.IsDirectoryError);
export const NotDirectoryError = errorClass('NotDirectoryError', kinds.NotDirectoryError);
export const PermissionDeniedError = errorClass('PermissionDeniedError', kinds.PermissionDeniedError);
export const ValidationError = errorClass('ValidationError', kinds.ValidationError);
export const ResourceBusyError = errorClass('ResourceBusyError', kinds.ResourceBusyError);
export const CommandTimeoutError = errorClass('CommandTimeoutError', kinds.CommandTimeoutError);
export const CommandError = errorClass('CommandError', kinds.CommandError);
export const GitCheckoutError = errorClass('GitCheckoutError', kinds.GitCheckoutError);
export const GitRepositoryNotFoundError = errorClass('GitRepositoryNotFoundError', kinds.GitRepositoryNotFoundError);
export const GitBranchNotFoundError = errorClass('GitBranchNotFoundError', kinds.GitBranchNotFoundError);
export const GitAuthenticationError = errorClass('GitAuthenticationError', kinds.GitAuthenticationError);
export const InvalidGitUrlError = errorClass('InvalidGitUrlError', kinds.InvalidGitUrlError);
export const GitNetworkError = errorClass('GitNetworkError', kinds.GitNetworkError);
export const GitTimeoutError = errorClass('GitTimeoutError', kinds.GitTimeoutError);
export const ContextNotFoundError = errorClass('ContextNotFoundError', kinds.ContextNotFoundError);
export const CodeInterpreterUnavailableError = errorClass('CodeInterpreterUnavailableError', kinds.CodeInterpreterUnavailableError);
export const TerminalError = errorClass('TerminalError', kinds.TerminalError);
export const PortAlreadyExposedError = errorClass('PortAlreadyExposedError', kinds.PortAlreadyExposedError);
export const PortNotExposedError = errorClass('PortNotExposedError', kinds.PortNotExposedError);
export const InvalidPortError = errorClass('InvalidPortError', kinds.InvalidPortError);
/* ENOSPC from ports/: [network] expose_max_ports are exposed already. */
export const PortLimitError = errorClass('PortLimitError', kinds.PortLimitError);
export const BackupNotFoundError = errorClass('BackupNotFoundError', kinds.BackupNotFoundError);
/* EOPNOTSUPP from network/policy: switching to or from host mode (or rules in it) needs a remount. */
export const NetworkPolicyError = errorClass('NetworkPolicyError', kinds.NetworkPolicyError);
/* A fleet's sandboxes (fleet.js): ENOENT, EEXIST, and ENOSPC past the fleet's --max. */
export const SandboxNotFoundError = errorClass('SandboxNotFoundError', kinds.SandboxNotFoundError);
export const SandboxAlreadyExistsError = errorClass('SandboxAlreadyExistsError', kinds.SandboxAlreadyExistsError);
export const SandboxLimitError = errorClass('SandboxLimitError', kinds.SandboxLimitError);

// What an errno means for each kind of object; anything else is a plain SandboxError.
const byErrno = {
	session: { ENOENT: SessionNotFoundError, EEXIST: SessionAlreadyExistsError },
	process: { ENOENT: ProcessNotFoundError, EEXIST: ProcessExistsError },
	context: { ENOENT: ContextNotFoundError },
	terminal: { ENOENT: TerminalError, EEXIST: TerminalError },
	port: { ENOENT: PortNotExposedError, EEXIST: PortAlreadyExposedError, EINVAL: InvalidPortError, ENOSPC: PortLimitError },
	backup: { ENOENT: BackupNotFoundError },
	sandbox: { ENOENT: SandboxNotFoundError, EEXIST: SandboxAlreadyExistsError, ENOSPC: SandboxLimitError },
	// E2BIG: more than 100,000 rules.
	// Node names Linux's EOPNOTSUPP ENOTSUP (the same number).
	network: { ENOTSUP: NetworkPolicyError, EOPNOTSUPP: NetworkPolicyError, E2BIG: ValidationError },
	file: {
		ENOENT: FileNotFoundError,
		EEXIST: FileExistsError,
		ENOTEMPTY: FileExistsError,
		EISDIR: IsDirectoryError,
		ENOTDIR: NotDirectoryError,
		// A symbolic link on the way: the client follows none in the workspace.
		ELOOP: PermissionDeniedError,
		// Past readFile's maxBytes.
		EFBIG: ValidationError,
	},
};
const common = {
	EACCES: PermissionDeniedError,
	EPERM: PermissionDeniedError,
	EINVAL: ValidationError,
	EBUSY: ResourceBusyError,
};

/* The errno's own words (`ENOENT: no such file or directory`) without the path Node appends
 * (`, open '/mnt/...'`): the error names what the caller named, never a path of the host. */
function reason(err) {
	const at = err.syscall ? err.message.indexOf(`, ${err.syscall}`) : -1;
	return at > 0 ? err.message.slice(0, at) : err.message;
}

/* A Node fs error (err.code is the errno's name) as the SDK's error for `kind`. A file error
 * (`what` is then the path the caller gave) keeps that path in `path`, as the SDK's file errors
 * do, and no cause: the cause's message and path are the host's. */
export function mapError(err, kind, what) {
	if (err instanceof SandboxError || !err || typeof err.code !== 'string') return err;
	const cls = byErrno[kind]?.[err.code] ?? common[err.code] ?? SandboxError;
	const opts = kind === 'file' ? { path: what } : { cause: err };
	return new cls(`${what}: ${reason(err)}`, { errno: err.code, ...opts });
}

const gitErrors = {
	'not-found': GitRepositoryNotFoundError,
	'branch-not-found': GitBranchNotFoundError,
	auth: GitAuthenticationError,
	'invalid-url': InvalidGitUrlError,
	network: GitNetworkError,
	timeout: GitTimeoutError,
};

/* `error CODE: MESSAGE`, the final line of a failed checkout. */
export function gitError(code, message) {
	const cls = gitErrors[code] ?? GitCheckoutError;
	return new cls(`git checkout failed (${code}): ${message}`, { details: { code } });
}

export const ProcessReadyTimeoutError = errorClass('ProcessReadyTimeoutError', 'PROCESS_READY_TIMEOUT');
export const ProcessExitedBeforeReadyError = errorClass('ProcessExitedBeforeReadyError', 'PROCESS_EXITED_BEFORE_READY');
