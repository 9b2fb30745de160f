// ExecutionSession (a directory sessions/ID/) and Sandbox (the mount, acting as session default).
import { mkdir, readFile as fsReadFile, rmdir, stat } from './io.js';
import { join, posix } from 'node:path';
import * as backups from './backups.js';
import * as code from './contexts.js';
import * as commands from './commands.js';
import { SessionNotFoundError, ValidationError, mapError } from './errors.js';
import * as files from './files.js';
import * as journal from './journal.js';
import { ENV_NAME, envValue, writeControl } from './fsio.js';
import { gitCheckout } from './git.js';
import { checkName } from './names.js';
import * as network from './network.js';
import * as ports from './ports.js';
import * as procs from './processes.js';
import { createTerminal } from './terminals.js';
import { watch } from './watch.js';

/* NAME=VALUE lines for an env file; an undefined or null value unsets (-NAME). */
export function envLines(vars) {
	let text = '';
	for (const [name, value] of Object.entries(vars ?? {})) {
		if (!ENV_NAME.test(name)) throw new ValidationError(`invalid environment variable name: ${name}`);
		text += value === undefined || value === null ? `-${name}\n` : `${name}=${envValue(value)}\n`;
	}
	return text;
}

export class ExecutionSession {
	// The order of this client's calls on the session, and its commands still running: private,
	// so that JSON.stringify(session) shows the session, not the client's state.
	#lock = Promise.resolve();
	#inflight = new Set();

	constructor(sandbox, id) {
		// Not enumerable: the sandbox refers to itself, and JSON.stringify(session) would throw.
		Object.defineProperty(this, 'sandbox', { value: sandbox, writable: true });
		this.id = checkName(id, 'session');
		this.dir = join(sandbox.mountpoint, 'sessions', id);
	}

	/* Runs fn once every earlier fn of this session has settled. */
	_serialize(fn) {
		const run = this.#lock.then(fn);
		this.#lock = run.catch(() => {});
		return run;
	}

	/* Keeps a running command's result promise until it settles. */
	_track(promise) {
		this.#inflight.add(promise);
		const forget = () => this.#inflight.delete(promise);
		promise.then(forget, forget);
		return promise;
	}

	/* Resolves once every command this client submitted to the session has ended. */
	async _drain() {
		while (this.#inflight.size) await Promise.allSettled([...this.#inflight]);
	}

	exec(command, opts) {
		return commands.exec(this, command, opts);
	}
	execStream(command, opts) {
		return commands.execStream(this, command, opts);
	}

	startProcess(command, opts) {
		return procs.startProcess(this, command, opts);
	}
	listProcesses() {
		return procs.listProcesses(this);
	}
	getProcess(id) {
		return procs.getProcess(this, id);
	}
	killProcess(id, signal) {
		return procs.killProcess(this, id, signal);
	}
	killAllProcesses() {
		return procs.killAllProcesses(this);
	}
	cleanupCompletedProcesses() {
		return procs.cleanupCompletedProcesses(this);
	}
	getProcessLogs(id) {
		return procs.getProcessLogs(this, id);
	}
	streamProcessLogs(id) {
		return procs.streamProcessLogs(this, id);
	}

	writeFile(path, content, opts) {
		return files.writeFile(this, path, content, opts);
	}
	readFile(path, opts) {
		return files.readFile(this, path, opts);
	}
	readFileStream(path) {
		return files.readFileStream(this, path);
	}
	mkdir(path, opts) {
		return files.mkdir(this, path, opts);
	}
	deleteFile(path) {
		return files.deleteFile(this, path);
	}
	renameFile(oldPath, newPath) {
		return files.renameFile(this, oldPath, newPath);
	}
	moveFile(sourcePath, destinationPath) {
		return files.moveFile(this, sourcePath, destinationPath);
	}
	listFiles(path, opts) {
		return files.listFiles(this, path, opts);
	}
	exists(path) {
		return files.exists(this, path);
	}
	watch(path, opts) {
		return watch(this, path, opts);
	}
	gitCheckout(url, opts) {
		return gitCheckout(this, url, opts);
	}

	/* The session's own env: in force for the commands submitted after it. */
	async setEnvVars(vars) {
		try {
			await writeControl(join(this.dir, 'env'), envLines(vars));
		} catch (err) {
			throw mapError(err, 'session', `session ${this.id}`);
		}
	}

	createTerminal(opts) {
		return createTerminal(this, opts);
	}
	terminal(opts) {
		return createTerminal(this, opts);
	}

	createCodeContext(opts) {
		return code.createCodeContext(this.sandbox, opts);
	}
	runCode(source, opts) {
		return code.runCode(this.sandbox, source, opts);
	}
	runCodeStream(source, opts) {
		return code.runCodeStream(this.sandbox, source, opts);
	}
	listCodeContexts() {
		return code.listCodeContexts(this.sandbox);
	}
	deleteCodeContext(id) {
		return code.deleteCodeContext(this.sandbox, id);
	}
}

export class Sandbox extends ExecutionSession {
	#sessions = new Map(); // the session objects this client made, by id

	constructor(mountpoint, opts = {}) {
		super({ mountpoint }, 'default');
		this.sandbox = this;
		this.mountpoint = mountpoint;
		this.dir = join(mountpoint, 'sessions', 'default');
		this.workspace = join(mountpoint, 'workspace');
		// The workspace as commands see it: /workspace, and the caller's own workspacePath (the
		// backing directory, which commands see under --isolation none). Nothing a command can
		// change (a session's HOME, its cwd) decides where the workspace is.
		this.workspaceRoots = ['/workspace'];
		if (opts.workspacePath) this.workspaceRoots.unshift(posix.normalize(opts.workspacePath).replace(/(.)\/+$/, '$1'));
	}

	_session(id) {
		let s = this.#sessions.get(id);
		if (!s) {
			s = id === 'default' ? this : new ExecutionSession(this, id);
			this.#sessions.set(id, s);
		}
		return s;
	}

	/* A session with its env, cwd (made in the workspace if missing) and command timeout; on
	 * any failure it is removed again. */
	async createSession(opts = {}) {
		const { id, env, cwd, commandTimeoutMs } = opts;
		if (id !== undefined) checkName(id, 'session');
		let sid = id;
		try {
			if (sid === undefined) sid = (await fsReadFile(join(this.mountpoint, 'sessions', 'clone'), 'utf8')).trim();
			else await mkdir(join(this.mountpoint, 'sessions', sid));
		} catch (err) {
			throw mapError(err, 'session', `session ${id}`);
		}
		const session = new ExecutionSession(this, sid);
		try {
			if (env) await session.setEnvVars(env);
			if (cwd !== undefined) await this._setCwd(session, cwd);
			if (commandTimeoutMs !== undefined) await writeControl(join(session.dir, 'timeout'), `${commandTimeoutMs}\n`);
		} catch (err) {
			await rmdir(session.dir).catch(() => {});
			throw mapError(err, 'session', `session ${sid}`);
		}
		this.#sessions.set(sid, session);
		return session;
	}

	async _setCwd(session, cwd) {
		const file = join(session.dir, 'cwd');
		try {
			await writeControl(file, `${envValue(cwd)}\n`);
		} catch (err) {
			if (err.code !== 'ENOENT') throw err;
			await files.mkdir(session, cwd, { recursive: true });
			await writeControl(file, `${envValue(cwd)}\n`);
		}
	}

	/* An existing session, resumed with its env and cwd. */
	async getSession(id) {
		checkName(id, 'session');
		const st = await stat(join(this.mountpoint, 'sessions', id)).catch((err) => {
			throw mapError(err, 'session', `session ${id}`);
		});
		if (!st.isDirectory() || id === 'clone') throw new SessionNotFoundError(`session ${id}: not found`);
		return this._session(id);
	}

	/* Ends the session's shell and every process it started. */
	async deleteSession(id) {
		checkName(id, 'session');
		try {
			await rmdir(join(this.mountpoint, 'sessions', id));
		} catch (err) {
			throw mapError(err, 'session', `session ${id}`);
		}
		this.#sessions.delete(id);
		return { success: true, sessionId: id, timestamp: new Date().toISOString() };
	}

	/* A snapshot of the workspace, at one instant: {id, dir[, name]}. */
	createBackup(opts) {
		return backups.createBackup(this, opts);
	}
	/* The backup's directory made as it was: {success, id, dir}. */
	restoreBackup(backup, opts) {
		return backups.restoreBackup(this, backup, opts);
	}
	deleteBackup(backup) {
		return backups.deleteBackup(this, backup);
	}

	/* The sandbox-wide env (the mount's env): every session, except names a session set itself. */
	async setEnvVars(vars) {
		try {
			await writeControl(join(this.mountpoint, 'env'), envLines(vars));
		} catch (err) {
			throw mapError(err, 'session', 'sandbox env');
		}
	}

	exposePort(port, opts) {
		return ports.exposePort(this, port, opts);
	}
	unexposePort(port) {
		return ports.unexposePort(this, port);
	}
	getExposedPorts() {
		return ports.getExposedPorts(this);
	}

	/* network/policy: {mode, allow: [{pattern, private}], deny: [pattern]}. */
	getNetworkPolicy() {
		return network.getNetworkPolicy(this);
	}
	setNetworkPolicy(policy) {
		return network.setNetworkPolicy(this, policy);
	}
	/* network/log, or sessions/ID/network with {session}, as objects by the log's fields. */
	getNetworkLog(opts) {
		return network.getNetworkLog(this, opts);
	}
	/* The audit journal (journal, or sessions/ID/journal with {session}) and the metrics. */
	getJournal(opts) {
		return journal.getJournal(this, opts);
	}
	watchJournal(opts) {
		return journal.watchJournal(this, opts);
	}
	getMetrics(opts) {
		return journal.getMetrics(this, opts);
	}
}
