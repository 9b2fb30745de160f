// Background processes: sessions/ID/procs/NAME/ as the SDK's Process objects.
import { mkdir, readdir, rmdir } from './io.js';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import {
	ProcessExitedBeforeReadyError,
	ProcessReadyTimeoutError,
	mapError,
} from './errors.js';
import { envCwdPrefix } from './commands.js';
import { follow, parseStatus, readSnapshot, readText, submit, writeControl } from './fsio.js';
import { checkName, isName } from './names.js';
import { sseStream } from './sse.js';

const STATES = { idle: 'starting', starting: 'starting', running: 'running' };

function unixTime(value) {
	return value && value !== '-' ? new Date(Number(value) * 1000) : undefined;
}

function signalName(signal) {
	return String(signal ?? 'TERM').replace(/^SIG/, '');
}

/* read(signal), aborted with onTimeout() after `ms` (none when ms is not set). */
async function withTimeout(read, ms, onTimeout) {
	if (!ms) return read(undefined);
	const abort = new AbortController();
	const timer = setTimeout(() => abort.abort(onTimeout()), ms);
	try {
		return await read(abort.signal);
	} finally {
		clearTimeout(timer);
	}
}

export class Process {
	constructor(session, id) {
		this.id = checkName(id, 'process');
		// Not enumerable: the session leads back to the sandbox, which refers to itself, and the
		// directory is the host's, so JSON.stringify(process) could not give the SDK's shape.
		Object.defineProperties(this, {
			session: { value: session },
			dir: { value: join(session.dir, 'procs', id) },
		});
		this.sessionId = session.id;
		this.pid = 0;
		this.command = '';
		this.status = 'starting';
		this.startTime = undefined;
		this.endTime = undefined;
		this.exitCode = undefined;
	}

	_fail(err) {
		return mapError(err, 'process', `process ${this.id}`);
	}

	/* Reads status and cmd again; returns this. */
	async refresh() {
		try {
			const st = parseStatus(await readText(join(this.dir, 'status')));
			this.status = STATES[st.state] ?? st.state;
			this.pid = Number(st.pid) || 0;
			this.startTime = unixTime(st.started);
			this.endTime = unixTime(st.ended);
			this.exitCode = st.exit && st.exit !== '-' ? Number(st.exit) : undefined;
			this.command = this.command || (await readText(join(this.dir, 'cmd'))).replace(/\n$/, '');
		} catch (err) {
			throw this._fail(err);
		}
		return this;
	}

	async getStatus() {
		return (await this.refresh()).status;
	}

	/* The signal goes to its whole tree; KILL follows after the session's grace unless it is KILL. */
	async kill(signal) {
		try {
			await writeControl(join(this.dir, 'ctl'), `kill ${signalName(signal)}\n`);
		} catch (err) {
			if (err.code !== 'ESRCH') throw this._fail(err);
		}
	}

	async getLogs() {
		try {
			const [stdout, stderr] = await Promise.all(
				['stdout', 'stderr'].map((s) => readSnapshot(join(this.dir, s))),
			);
			return { stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8'), processId: this.id };
		} catch (err) {
			throw this._fail(err);
		}
	}

	/* Waits until a line of stdout or stderr holds `pattern` (a string or a RegExp). */
	async waitForLog(pattern, timeout) {
		const abort = new AbortController();
		const test = (line) => (typeof pattern === 'string' ? line.includes(pattern) : pattern.test(line));
		let found;
		const watch = (stream) => {
			const decoder = new StringDecoder('utf8');
			let pending = '';
			return follow(
				join(this.dir, stream),
				(bytes) => {
					pending += decoder.write(bytes);
					const lines = pending.split('\n');
					pending = lines.pop();
					for (const line of lines) if (!found && test(line)) found = line;
					if (found) abort.abort();
				},
				abort.signal,
			).then(() => {
				if (!found && pending && test(pending)) found = pending;
				if (found) abort.abort();
			});
		};
		const timer = timeout ? setTimeout(() => abort.abort(), timeout) : undefined;
		try {
			await Promise.all([watch('stdout'), watch('stderr')]);
		} catch (err) {
			abort.abort();
			throw this._fail(err);
		} finally {
			clearTimeout(timer);
		}
		if (found === undefined && abort.signal.aborted)
			throw new ProcessReadyTimeoutError(`process ${this.id}: no log line matching ${pattern} within ${timeout} ms`);
		if (found === undefined)
			throw new ProcessExitedBeforeReadyError(`process ${this.id} ended without a log line matching ${pattern}`);
		const match = typeof pattern === 'string' ? undefined : found.match(pattern);
		return { line: found, match: match ?? undefined };
	}

	/* Waits until its tree listens on TCP `port` (from its `ports` file). */
	async waitForPort(port, { timeout } = {}) {
		const deadline = timeout ? Date.now() + timeout : Infinity;
		for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
			let ports;
			try {
				ports = (await readText(join(this.dir, 'ports'))).split('\n');
			} catch (err) {
				throw this._fail(err);
			}
			if (ports.includes(String(port))) return;
			const status = await this.getStatus();
			if (status !== 'running' && status !== 'starting')
				throw new ProcessExitedBeforeReadyError(`process ${this.id} ended (${status}) before listening on port ${port}`);
			if (Date.now() + delay > deadline)
				throw new ProcessReadyTimeoutError(`process ${this.id}: port ${port} not listening within ${timeout} ms`);
			await new Promise((r) => setTimeout(r, delay));
		}
	}

	async waitForExit(timeout) {
		const text = await withTimeout(
			(signal) => readText(join(this.dir, 'exit'), signal),
			timeout,
			() => new ProcessReadyTimeoutError(`process ${this.id} still running after ${timeout} ms`),
		).catch((err) => {
			throw this._fail(err);
		});
		await this.refresh();
		return { exitCode: Number(text) };
	}
}

function procsDir(session) {
	return join(session.dir, 'procs');
}

export async function startProcess(session, command, opts = {}) {
	const id = opts.processId ?? `proc-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
	const proc = new Process(session, id);
	const text = `${envCwdPrefix(opts.env, opts.cwd)}${command}`;
	try {
		await mkdir(proc.dir);
		if (opts.timeout) await writeControl(join(proc.dir, 'ctl'), `timeout ${opts.timeout}\n`);
		await submit(join(proc.dir, 'cmd'), text);
	} catch (err) {
		throw proc._fail(err);
	}
	proc.command = command;
	await proc.refresh();
	if (opts.autoCleanup)
		readText(join(proc.dir, 'exit'))
			.then(() => rmdir(proc.dir).catch(() => {}))
			.catch(() => {});
	return proc;
}

export async function getProcess(session, id) {
	return new Process(session, id).refresh();
}

export async function listProcesses(session) {
	let names;
	try {
		names = (await readdir(procsDir(session))).filter((n) => n !== 'ctl' && isName(n));
	} catch (err) {
		throw mapError(err, 'session', `session ${session.id}`);
	}
	const procs = await Promise.all(names.map((n) => getProcess(session, n).catch(() => null)));
	return procs.filter(Boolean);
}

export async function killProcess(session, id, signal) {
	await (await getProcess(session, id)).kill(signal);
}

/* Every running process of the session gets TERM (then KILL after the grace); returns how many. */
export async function killAllProcesses(session) {
	const running = (await listProcesses(session)).filter((p) => p.status === 'running');
	try {
		await writeControl(join(procsDir(session), 'ctl'), 'kill\n');
	} catch (err) {
		throw mapError(err, 'session', `session ${session.id}`);
	}
	return running.length;
}

/* Forgets every process that has ended; returns how many. */
export async function cleanupCompletedProcesses(session) {
	let count = 0;
	for (const p of await listProcesses(session)) {
		if (p.status === 'running' || p.status === 'starting') continue;
		try {
			await rmdir(p.dir);
			count++;
		} catch (err) {
			if (err.code !== 'ENOENT') throw p._fail(err);
		}
	}
	return count;
}

export async function getProcessLogs(session, id) {
	return new Process(session, id).getLogs();
}

/* stdout and stderr events as they come, then `exit`, as SSE. A bad id throws here, before
 * there is a stream. */
export function streamProcessLogs(session, id) {
	const proc = new Process(session, id);
	return sseStream(async (emit, signal) => {
		await proc.refresh();
		const now = () => new Date().toISOString();
		await Promise.all(
			['stdout', 'stderr'].map((type) => {
				const decoder = new StringDecoder('utf8');
				return follow(join(proc.dir, type), (bytes) => {
					const data = decoder.write(bytes);
					if (data) emit({ type, timestamp: now(), data, processId: id });
				}, signal);
			}),
		);
		if (signal.aborted) return;
		const { exitCode } = await proc.waitForExit();
		emit({ type: 'exit', timestamp: now(), exitCode, processId: id });
	});
}
