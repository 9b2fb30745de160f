// Types of sbxfs-client: the hosted Sandbox SDK's session API over a local sbxfs mount.

export interface ExecResult {
	success: boolean;
	exitCode: number;
	stdout: string;
	stderr: string;
	command: string;
	/** Milliseconds. */
	duration: number;
	/** ISO 8601 start. */
	timestamp: string;
	sessionId: string;
	/** The command's number in the session (runs/N). */
	run: number;
	signal: string | null;
	timedOut: boolean;
	truncated: boolean;
	error: string | null;
}

export interface ExecOptions {
	/** Milliseconds; overrides the session's commandTimeoutMs for this command. */
	timeout?: number;
	/** For this command only (it runs in a subshell then). */
	env?: Record<string, string | undefined>;
	cwd?: string;
	stream?: boolean;
	onOutput?: (stream: 'stdout' | 'stderr', data: string) => void;
}

export type ExecEvent =
	| { type: 'start'; timestamp: string; command: string; run: number; sessionId: string }
	| { type: 'stdout' | 'stderr'; timestamp: string; data: string }
	| { type: 'complete'; timestamp: string; exitCode: number; result: ExecResult }
	| { type: 'error'; timestamp: string; error: string };

export type ProcessStatus = 'starting' | 'running' | 'completed' | 'failed' | 'killed' | 'error';

export interface ProcessOptions {
	processId?: string;
	env?: Record<string, string | undefined>;
	cwd?: string;
	encoding?: string;
	/** Remove the process once it has ended (its logs go with it). */
	autoCleanup?: boolean;
	/** Milliseconds it may run. */
	timeout?: number;
}

export interface ProcessLogs {
	stdout: string;
	stderr: string;
	processId: string;
}

/** JSON.stringify gives the SDK's Process: these fields, dates as ISO 8601. */
export declare class Process {
	readonly id: string;
	readonly sessionId: string;
	pid: number;
	command: string;
	status: ProcessStatus;
	startTime: Date | undefined;
	endTime: Date | undefined;
	exitCode: number | undefined;
	refresh(): Promise<this>;
	getStatus(): Promise<ProcessStatus>;
	kill(signal?: string | number): Promise<void>;
	getLogs(): Promise<ProcessLogs>;
	waitForLog(pattern: string | RegExp, timeout?: number): Promise<{ line: string; match?: RegExpMatchArray }>;
	waitForPort(port: number, opts?: { timeout?: number }): Promise<void>;
	waitForExit(timeout?: number): Promise<{ exitCode: number }>;
}

export type ProcessLogEvent =
	| { type: 'stdout' | 'stderr'; timestamp: string; data: string; processId: string }
	| { type: 'exit'; timestamp: string; exitCode: number; processId: string }
	| { type: 'error'; timestamp: string; error: string };

export interface FileOpResult {
	success: boolean;
	path: string;
	timestamp: string;
	exitCode?: number;
}

export interface ReadFileResult extends FileOpResult {
	content: string;
	encoding: 'utf-8' | 'base64';
	isBinary: boolean;
	size: number;
}

export interface FileInfo {
	name: string;
	absolutePath: string;
	relativePath: string;
	type: 'file' | 'directory' | 'symlink' | 'other';
	size: number;
	modifiedAt: string;
	mode: string;
	permissions: { readable: boolean; writable: boolean; executable: boolean };
}

export interface ListFilesResult extends FileOpResult {
	files: FileInfo[];
	count: number;
}

export type FileStreamEvent =
	| { type: 'metadata'; mimeType: string; size: number; isBinary: boolean; encoding: 'utf-8' | 'base64' }
	| { type: 'chunk'; data: string }
	| { type: 'complete'; bytesRead: number }
	| { type: 'error'; timestamp: string; error: string };

export interface WatchEvent {
	type: 'create' | 'modify' | 'delete';
	path: string;
}

export interface WatchOptions {
	recursive?: boolean;
	onEvent?: (event: WatchEvent) => void;
	onError?: (error: Error) => void;
	signal?: AbortSignal;
}

export interface GitCheckoutResult {
	success: boolean;
	repoUrl: string;
	branch: string;
	targetDir: string;
	commit: string;
	timestamp: string;
}

export interface TerminalOptions {
	id?: string;
	/** An argv, or a shell line; none: the session's interactive shell. */
	command?: string[] | string;
	cwd?: string;
	env?: Record<string, string | undefined>;
	cols?: number;
	rows?: number;
}

export declare class Terminal {
	readonly id: string;
	write(data: string | Uint8Array): Promise<void>;
	resize(cols: number, rows: number): Promise<void>;
	interrupt(): Promise<void>;
	terminate(signal?: string): Promise<void>;
	output(): Promise<string>;
	screen(): Promise<string>;
	waitFor(pattern: string): Promise<string>;
	getStatus(): Promise<Record<string, string>>;
	waitForExit(): Promise<{ exitCode: number }>;
	close(): Promise<void>;
}

export type CodeLanguage = 'python' | 'javascript' | 'typescript';

export interface CodeContext {
	id: string;
	language: CodeLanguage;
	/** The directory its interpreter starts in: the workspace unless one was given. */
	cwd: string;
	createdAt: Date;
	lastUsed: Date;
}

export interface CreateContextOptions {
	id?: string;
	language?: CodeLanguage;
	cwd?: string;
	envVars?: Record<string, string>;
	timeout?: number;
}

export interface OutputMessage {
	text: string;
	timestamp: number;
}

export interface Result {
	text?: string;
	html?: string;
	png?: string;
	jpeg?: string;
	svg?: string;
	latex?: string;
	markdown?: string;
	javascript?: string;
	json?: unknown;
	chart?: unknown;
	data?: unknown;
	/** True for the value of the cell's last expression. */
	isMainResult?: boolean;
}

export interface ExecutionError {
	name: string;
	value: string;
	traceback: string[];
}

export interface Execution {
	results: Result[];
	logs: { stdout: string[]; stderr: string[] };
	error?: ExecutionError;
	executionCount: number;
}

export interface RunCodeOptions {
	context?: CodeContext | string;
	language?: CodeLanguage;
	timeout?: number;
	onStdout?: (output: OutputMessage) => void;
	onStderr?: (output: OutputMessage) => void;
	onResult?: (result: Result) => void | Promise<void>;
	onError?: (error: ExecutionError) => void | Promise<void>;
}

export declare class ExecutionSession {
	readonly id: string;
	exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
	execStream(command: string, opts?: ExecOptions): ReadableStream<Uint8Array>;

	startProcess(command: string, opts?: ProcessOptions): Promise<Process>;
	listProcesses(): Promise<Process[]>;
	getProcess(id: string): Promise<Process>;
	killProcess(id: string, signal?: string | number): Promise<void>;
	killAllProcesses(): Promise<number>;
	cleanupCompletedProcesses(): Promise<number>;
	getProcessLogs(id: string): Promise<ProcessLogs>;
	streamProcessLogs(id: string): ReadableStream<Uint8Array>;

	writeFile(path: string, content: string, opts?: { encoding?: 'utf-8' | 'base64' }): Promise<FileOpResult>;
	/** A regular file only; at most maxBytes (default 32 MiB) are read, past them a
	 * ValidationError (errno EFBIG): readFileStream reads any size. */
	readFile(path: string, opts?: { encoding?: 'utf-8' | 'base64'; maxBytes?: number }): Promise<ReadFileResult>;
	readFileStream(path: string): ReadableStream<Uint8Array>;
	mkdir(path: string, opts?: { recursive?: boolean }): Promise<FileOpResult & { recursive: boolean }>;
	deleteFile(path: string): Promise<FileOpResult>;
	renameFile(oldPath: string, newPath: string): Promise<FileOpResult & { newPath: string }>;
	moveFile(sourcePath: string, destinationPath: string): Promise<FileOpResult & { newPath: string }>;
	listFiles(path: string, opts?: { recursive?: boolean; includeHidden?: boolean }): Promise<ListFilesResult>;
	exists(path: string): Promise<FileOpResult & { exists: boolean }>;
	watch(path: string, opts?: WatchOptions): Promise<{ path: string; stop(): void }>;
	gitCheckout(
		url: string,
		opts?: { branch?: string; targetDir?: string; depth?: number; cloneTimeoutMs?: number },
	): Promise<GitCheckoutResult>;

	/** An undefined (or null) value unsets the variable. */
	setEnvVars(vars: Record<string, string | undefined | null>): Promise<void>;

	createTerminal(opts?: TerminalOptions): Promise<Terminal>;
	terminal(opts?: TerminalOptions): Promise<Terminal>;

	createCodeContext(opts?: CreateContextOptions): Promise<CodeContext>;
	runCode(code: string, opts?: RunCodeOptions): Promise<Execution>;
	runCodeStream(code: string, opts?: RunCodeOptions): ReadableStream<Uint8Array>;
	listCodeContexts(): Promise<Array<Pick<CodeContext, 'id'> & Partial<CodeContext>>>;
	deleteCodeContext(id: string): Promise<void>;
}

export interface SessionOptions {
	id?: string;
	env?: Record<string, string | undefined>;
	/** Made in the workspace when missing. */
	cwd?: string;
	commandTimeoutMs?: number;
}

export interface ExposePortOptions {
	/** A name for the port: one line of text, at most 128 bytes. */
	name?: string;
}

export interface ExposedPort {
	/** Where this host reaches the port: http://127.0.0.1:HOST_PORT/ (the daemon's listener). */
	url: string;
	/** The port in the sandbox. */
	port: number;
	name?: string;
}

export interface ExposedPortInfo extends ExposedPort {
	status: 'active';
}

export interface BackupOptions {
	/** The workspace or a directory in it, as commands see it (/workspace/...). */
	dir: string;
	/** A label, kept in the returned object. */
	name?: string;
}

/** A snapshot of the whole workspace (snapshots/ID), taken at one instant; restoring it
 * restores dir alone. */
export interface DirectoryBackup {
	id: string;
	dir: string;
	name?: string;
}

export interface RestoreBackupOptions {
	/** End what runs in the sandbox first; without it a restore while something runs is a
	 * ResourceBusyError. */
	force?: boolean;
}

export type NetworkMode = 'none' | 'filtered' | 'host';

/** An `allow` rule of network/policy: `private` lets its hosts have non-public addresses. */
export interface NetworkAllowRule {
	pattern: string;
	private: boolean;
}

/** network/policy as read: rules in the order written. */
export interface NetworkPolicy {
	mode: NetworkMode;
	allow: NetworkAllowRule[];
	/** Deny patterns; deny wins over allow wherever it stands. */
	deny: string[];
}

/** A whole new policy (applied at once, or not at all); without mode the mode in force stays.
 * A string in allow is a rule without `private`. */
export interface NetworkPolicyInput {
	mode?: NetworkMode;
	allow?: (string | NetworkAllowRule)[];
	deny?: string[];
}

/** One line of network/log, by docs/network.md's fields ('-' is null). */
export interface NetworkLogEntry {
	/** When the connection was accepted: UTC ISO 8601 with milliseconds. */
	time: string;
	/** The session's id, or `context:NAME`; null for a session removed meanwhile. */
	session: string | null;
	/** Always null: the proxy does not find the process. */
	process: string | null;
	protocol: 'connect' | 'http' | 'socks' | null;
	/** HOST:PORT as asked ([IPv6]:PORT). */
	target: string;
	/** The address connected to. */
	address: string | null;
	decision: 'allow' | 'deny' | 'fail';
	bytesFromClient: number;
	bytesToClient: number;
	durationMs: number;
	/** The rule that decided, or why (`no rule`, `mode none`, ...). */
	reason: string;
}

export interface JournalEvent {
	v: number;
	seq: number;
	time: string;
	kind: string;
	session?: string;
	[field: string]: unknown;
}

export interface JournalOptions {
	/** Events with this sequence number or a later one. */
	since?: number;
	/** That session's events only (sessions/ID/journal). */
	session?: string;
	/** The last this many events. */
	limit?: number;
}

export interface WatchJournalOptions {
	since?: number;
	session?: string;
	onEvent: (event: JournalEvent) => void;
	onError?: (err: Error) => void;
	signal?: AbortSignal;
}

export interface MetricsOptions {
	/** A session's metrics (sessions/ID/metrics) instead of the sandbox's and every session's. */
	session?: string;
	/** One of that session's background processes (sessions/ID/procs/NAME/metrics). */
	proc?: string;
}

export interface MetricSample {
	name: string;
	labels: Record<string, string>;
	value: number;
}

export interface NetworkLogOptions {
	/** That session's lines only (sessions/ID/network). */
	session?: string;
	/** The last this many lines. */
	limit?: number;
}

export declare class Sandbox extends ExecutionSession {
	readonly mountpoint: string;
	createSession(opts?: SessionOptions): Promise<ExecutionSession>;
	getSession(id: string): Promise<ExecutionSession>;
	deleteSession(id: string): Promise<{ success: boolean; sessionId: string; timestamp: string }>;
	/** Makes the sandbox's port reachable from this host (ports/PORT). */
	exposePort(port: number, opts?: ExposePortOptions): Promise<ExposedPort>;
	/** Closes it on this host and resets its connections; the server keeps running. */
	unexposePort(port: number): Promise<void>;
	getExposedPorts(): Promise<ExposedPortInfo[]>;
	getNetworkPolicy(): Promise<NetworkPolicy>;
	/** Bad patterns are a ValidationError, a switch to or from host a NetworkPolicyError; either
	 * way the policy in force stays. */
	setNetworkPolicy(policy: NetworkPolicyInput): Promise<void>;
	/** The lines the log's ring holds now (the last 1 MiB; 256 KiB for a session), oldest first. */
	getNetworkLog(opts?: NetworkLogOptions): Promise<NetworkLogEntry[]>;
	/** The audit journal's events kept (docs/journal.md), oldest first. */
	getJournal(opts?: JournalOptions): Promise<JournalEvent[]>;
	/** Each event from `since` on (none: only new ones), then each new one, until `signal`
	 * aborts; resolves then. */
	watchJournal(opts: WatchJournalOptions): Promise<void>;
	/** The samples of a metrics file (docs/metrics.md). */
	getMetrics(opts?: MetricsOptions): Promise<MetricSample[]>;
	createBackup(opts: BackupOptions): Promise<DirectoryBackup>;
	restoreBackup(backup: DirectoryBackup, opts?: RestoreBackupOptions): Promise<{ success: boolean; id: string; dir: string }>;
	deleteBackup(backup: DirectoryBackup): Promise<{ success: boolean; id: string }>;
}

export interface SandboxOptions {
	/** Another path commands see the workspace at, besides /workspace (its backing directory,
	 * under --isolation none); file calls take paths under it too. */
	workspacePath?: string;
	/** For a URL (http(s)://HOST:PORT/v1/sandbox/ID): the bearer token sbxfs-bridge takes
	 * (else $SBXFS_TOKEN). */
	token?: string;
	/** For an https URL: the CA that signed the server's certificate, if not a public one. */
	ca?: string | Uint8Array;
}

/** A mount's path, or a sandbox's URL over sbxfs-bridge (opts.token). */
export declare function getSandbox(mountpoint: string, opts?: SandboxOptions): Sandbox;

export interface FleetSandboxInfo {
	sandboxId: string;
	/** starting, running, stopping, failed, sleeping or waking */
	state: string;
	/** Its daemon's, 0 when none runs (sleeping, failed). */
	pid: number;
	restarts: number;
	/** Why it failed or was last started again; null for none. */
	reason: string | null;
}

export interface CreateSandboxOptions extends SandboxOptions {
	/** This id (1 to 64 of A-Z a-z 0-9 . _ -); without it, a fresh one from the fleet. */
	id?: string;
	/** Its own config (ini text, as sbxfs.ini(5)): it runs with it once create resolves. */
	config?: string;
	/** A tar archive of this host's (plain or zstd; a snapshot's `archive`): its workspace is
	 * restored from it (kept as its snapshot `template`). */
	template?: string;
}

/** A sandbox of a fleet: the mount FLEET/ID/fs. */
export declare class FleetSandbox extends Sandbox {
	readonly sandboxId: string;
	readonly fleet: Fleet;
	getInfo(): Promise<FleetSandboxInfo>;
	/** true keeps it from sleeping after [sandbox] sleep_after idle (FLEET/ID/keep_alive). */
	setKeepAlive(on: boolean): Promise<void>;
	getConfig(): Promise<string>;
	/** Replaces its config whole; resolves once it runs with it. */
	setConfig(text: string): Promise<void>;
	/** Destroys it: processes, mounts, uid and files. */
	kill(): Promise<void>;
	destroy(): Promise<void>;
}

/** The sandboxes of an sbxfs-fleet mounted at root. */
export declare class Fleet {
	constructor(root: string);
	readonly root: string;
	/** Up once it resolves; SandboxAlreadyExistsError, SandboxLimitError past the fleet's --max. */
	create(opts?: CreateSandboxOptions): Promise<FleetSandbox>;
	list(): Promise<FleetSandboxInfo[]>;
	getInfo(id: string): Promise<FleetSandboxInfo>;
	/** The sandbox there is; SandboxNotFoundError if none. */
	connect(id: string, opts?: SandboxOptions): Promise<FleetSandbox>;
	/** The sandbox, made if it is not there. */
	getSandbox(id: string, opts?: SandboxOptions): Promise<FleetSandbox>;
	kill(id: string): Promise<void>;
	setKeepAlive(id: string, on: boolean): Promise<void>;
	getConfig(id: string): Promise<string>;
	setConfig(id: string, text: string): Promise<void>;
	status(): Promise<Record<string, string | number>>;
}

export declare function getFleet(root: string): Promise<Fleet>;

export declare function parseSSEStream<T = ExecEvent>(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<T>;
export declare function streamEvents<T = ExecEvent>(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<T>;

export declare class SandboxError extends Error {
	code: string;
	/** The errno's name of the file operation that failed (ENOENT, EEXIST, ...). */
	errno?: string;
	details?: unknown;
	/** A file call's error: the path the caller gave (never the host's). */
	path?: string;
}
export declare class SessionNotFoundError extends SandboxError {}
export declare class SessionAlreadyExistsError extends SandboxError {}
export declare class ProcessNotFoundError extends SandboxError {}
export declare class ProcessExistsError extends SandboxError {}
export declare class ProcessReadyTimeoutError extends SandboxError {}
export declare class ProcessExitedBeforeReadyError extends SandboxError {}
export declare class FileNotFoundError extends SandboxError {}
export declare class FileExistsError extends SandboxError {}
export declare class IsDirectoryError extends SandboxError {}
export declare class NotDirectoryError extends SandboxError {}
export declare class PermissionDeniedError extends SandboxError {}
export declare class ValidationError extends SandboxError {}
export declare class ResourceBusyError extends SandboxError {}
export declare class CommandTimeoutError extends SandboxError {
	result?: ExecResult;
}
export declare class CommandError extends SandboxError {}
export declare class GitCheckoutError extends SandboxError {}
export declare class GitRepositoryNotFoundError extends SandboxError {}
export declare class GitBranchNotFoundError extends SandboxError {}
export declare class GitAuthenticationError extends SandboxError {}
export declare class InvalidGitUrlError extends SandboxError {}
export declare class GitNetworkError extends SandboxError {}
export declare class GitTimeoutError extends SandboxError {}
export declare class ContextNotFoundError extends SandboxError {}
export declare class CodeInterpreterUnavailableError extends SandboxError {}
export declare class TerminalError extends SandboxError {}
export declare class PortAlreadyExposedError extends SandboxError {}
export declare class PortNotExposedError extends SandboxError {}
export declare class InvalidPortError extends SandboxError {}
export declare class PortLimitError extends SandboxError {}
export declare class BackupNotFoundError extends SandboxError {}
/** EOPNOTSUPP from network/policy: host mode is switched to or from only by a remount. */
export declare class NetworkPolicyError extends SandboxError {}
export declare class SandboxNotFoundError extends SandboxError {}
export declare class SandboxAlreadyExistsError extends SandboxError {}
/** ENOSPC from the fleet: its --max sandboxes exist already (its status says so). */
export declare class SandboxLimitError extends SandboxError {}
