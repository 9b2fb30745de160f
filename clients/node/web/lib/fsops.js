// What sbxfs-web does on the mount, and the checks that keep it inside it. Through the Node
// client (../../index.js) where it has the call: creating and deleting sessions, terminals
// and contexts, starting, listing and killing processes. Directly, as file operations, what
// it has not: the session list with state, cwd and latest command, a command's submission
// that returns its run number at once, runs/ and their output followed without holding a
// thread, a terminal's raw output from the ring and its input, process logs' tails, snapshots
// (taken, listed, restored, deleted), and the workspace read by descriptor. Exposed ports and the
// network's policy and log go through the client too. Names from requests are checked against sbxfs's own name
// rule before they become a path component, so no request can name a path outside the mount.
import { constants as C } from 'node:fs';
import { open, readdir, rmdir, readFile, writeFile, realpath, readlink, lstat, mkdir } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { getSandbox, Terminal } from '../../index.js';

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const NUMBER = /^[1-9][0-9]{0,9}$/;
const CHUNK = 1 << 16;
const LOG_TAIL = 256 * 1024;
const FILE_MAX = 1 << 20;
const COMMAND_SHOWN = 1000; /* of a session's latest command in the list */
const NET_LINES = 50; /* of network/log on the page */
const JOURNAL_TAIL = 1 << 20; /* of the journal read for the page */
const JOURNAL_SHOWN = 200; /* events on the page */
const KIND = /^[a-z.]{0,40}$/;

/* An error a handler turns into an HTTP status. */
export class WebError extends Error {
	constructor(status, message) {
		super(message);
		this.status = status;
	}
}

export function checkName(name, what = 'name') {
	if (typeof name !== 'string' || !NAME.test(name) || name === '.' || name === '..')
		throw new WebError(400, `bad ${what}`);
	return name;
}

export function checkKind(kind) {
	if (typeof kind !== 'string' || !KIND.test(kind)) throw new WebError(400, 'bad kind');
	return kind;
}

export function checkNumber(n) {
	if (typeof n !== 'string' || !NUMBER.test(n)) throw new WebError(400, 'bad number');
	return n;
}

/* A TCP port: an integer from 1 to 65535. */
export function checkPort(port) {
	if (!Number.isInteger(port) || port < 1 || port > 65535) throw new WebError(400, 'bad port');
	return port;
}

/* A port as a path part names it: its decimal digits. */
export function portOf(part) {
	if (typeof part !== 'string' || !/^[1-9][0-9]{0,4}$/.test(part)) throw new WebError(400, 'bad port');
	return checkPort(Number(part));
}

/* `key value` lines as an object. */
export function parseStatus(text) {
	const out = {};
	for (const line of text.split('\n')) {
		const sp = line.indexOf(' ');
		if (sp > 0) out[line.slice(0, sp)] = line.slice(sp + 1);
	}
	return out;
}

/* A file of the mount, its parts checked names: never anything but a child path. */
export class Mount {
	constructor(root) {
		this.root = root;
		this.sandbox = getSandbox(root);
	}

	/* The client's session object (its files are checked names' paths). */
	client(id) {
		return this.sandbox.getSession(checkName(id, 'session'));
	}

	path(...parts) {
		return join(this.root, ...parts);
	}

	session(id, ...rest) {
		return this.path('sessions', checkName(id, 'session'), ...rest);
	}

	async text(...parts) {
		return (await readFile(this.path(...parts))).toString('utf8');
	}

	/* Everything the file holds now, without waiting at its end (O_NONBLOCK): for output
	 * files of something running; the last `tail` bytes. */
	async snapshot(file, tail = LOG_TAIL) {
		const fh = await open(file, C.O_RDONLY | C.O_NONBLOCK);
		const chunks = [];
		let total = 0;
		try {
			for (;;) {
				const buf = Buffer.allocUnsafe(CHUNK);
				let n;
				try {
					({ bytesRead: n } = await fh.read(buf, 0, CHUNK, null));
				} catch (e) {
					if (e.code === 'EAGAIN') break;
					throw e;
				}
				if (n === 0) break;
				chunks.push(buf.subarray(0, n));
				total += n;
				while (total - chunks[0].length >= tail) total -= chunks.shift().length;
			}
		} finally {
			await fh.close();
		}
		const all = Buffer.concat(chunks);
		return all.subarray(Math.max(0, all.length - tail));
	}

	async names(dir) {
		const list = await readdir(dir);
		return list.filter((n) => NAME.test(n) && n !== 'ctl' && n !== 'clone');
	}

	/* sessions */
	async sessions() {
		const ids = await this.names(this.path('sessions'));
		const out = [];
		for (const id of ids.sort()) {
			try {
				const status = parseStatus(await this.text('sessions', id, 'status'));
				out.push({
					id,
					state: status.state,
					run: status.command ? Number(status.command) : 0,
					cwd: (await this.text('sessions', id, 'cwd')).replace(/\n$/, ''),
					command: (await this.text('sessions', id, 'cmd')).slice(0, COMMAND_SHOWN),
				});
			} catch (e) {
				if (e.code !== 'ENOENT') throw e; /* removed meanwhile */
			}
		}
		return out;
	}

	async createSession(id) {
		const opts = id === undefined || id === '' ? {} : { id: checkName(id, 'session') };
		return (await this.sandbox.createSession(opts)).id;
	}

	async deleteSession(id) {
		if (checkName(id, 'session') === 'default') throw new WebError(409, 'the default session cannot be removed');
		await this.sandbox.deleteSession(id);
	}

	/* A run handle on cmd: the number of this very command, whoever else writes. */
	async exec(id, command) {
		if (typeof command !== 'string' || command === '' || command.includes('\0'))
			throw new WebError(400, 'bad command');
		return submit(this.session(id, 'cmd'), command);
	}

	async killCommand(id) {
		await writeFile(this.session(id, 'ctl'), 'kill\n');
	}

	async runs(id, limit = 50) {
		const nums = (await this.names(this.session(id, 'runs'))).map(Number).filter(Number.isInteger);
		nums.sort((a, b) => b - a);
		const out = [];
		for (const n of nums.slice(0, limit)) {
			try {
				out.push(await this.run(id, String(n)));
			} catch (e) {
				if (e.code !== 'ENOENT') throw e; /* left the history meanwhile */
			}
		}
		return out;
	}

	async run(id, n) {
		const dir = this.session(id, 'runs', checkNumber(n));
		const status = parseStatus((await readFile(join(dir, 'status'))).toString());
		return {
			n: Number(n),
			command: (await readFile(join(dir, 'cmd'))).toString(),
			state: status.run_state,
			exit: status.exit === '-' ? null : Number(status.exit),
			duration: Number(status.duration),
			started: Number(status.started),
			timedOut: status.timed_out === 'yes',
			signal: Number(status.signal) || 0,
			error: status.error ?? null,
		};
	}

	runFile(id, n, file) {
		return this.session(id, 'runs', checkNumber(n), file);
	}

	/* background processes */
	/* The client's processes, with their ports (which it does not read). */
	async procs(id) {
		const list = await (await this.client(id)).listProcesses();
		const out = [];
		for (const p of list.filter((p) => NAME.test(p.id)).sort((a, b) => (a.id < b.id ? -1 : 1))) {
			let ports = [];
			try {
				ports = (await readFile(this.session(id, 'procs', p.id, 'ports'))).toString().split('\n').filter(Boolean).map(Number);
			} catch (e) {
				if (e.code !== 'ENOENT') throw e;
			}
			out.push({ name: p.id, command: p.command, state: p.status, pid: p.pid, exit: p.exitCode ?? null, ports });
		}
		return out;
	}

	async startProc(id, name, command) {
		if (typeof command !== 'string' || command === '' || command.includes('\0'))
			throw new WebError(400, 'bad command');
		await (await this.client(id)).startProcess(command, { processId: checkName(name) });
	}

	/* Not the client's getLogs: that reads whole logs (up to output_cap), the page shows a tail. */
	async procLogs(id, name) {
		const dir = this.session(id, 'procs', checkName(name));
		return {
			stdout: (await this.snapshot(join(dir, 'stdout'))).toString('utf8'),
			stderr: (await this.snapshot(join(dir, 'stderr'))).toString('utf8'),
		};
	}

	async killProc(id, name) {
		await (await this.client(id)).killProcess(checkName(name));
	}

	async removeProc(id, name) {
		await rmdir(this.session(id, 'procs', checkName(name)));
	}

	/* exposed ports: the sandbox's, through the client (ports/) */
	async ports() {
		return (await this.sandbox.getExposedPorts()).map(({ port, url, name }) => ({ port, url, name: name ?? '' }));
	}

	async exposePort(port, name) {
		if (name !== undefined && name !== '' && (typeof name !== 'string' || /[\x00-\x1f\x7f]/.test(name) || Buffer.byteLength(name) > 128))
			throw new WebError(400, 'bad name');
		return this.sandbox.exposePort(checkPort(port), name ? { name } : {});
	}

	async unexposePort(port) {
		await this.sandbox.unexposePort(checkPort(port));
	}

	/* The journal's last events (the root's, or a session's), read from the file's end: the
	 * last JOURNAL_TAIL bytes, whole lines, filtered by kind (a prefix: "cmd." or "cmd.end"). */
	async journal(session, kind) {
		const file = session ? join(this.session(session), 'journal') : this.path('journal');
		const fh = await open(file, C.O_RDONLY | C.O_NOFOLLOW);
		let buf;
		try {
			const { size } = await fh.stat();
			const from = Math.max(0, size - JOURNAL_TAIL);
			buf = Buffer.allocUnsafe(size - from);
			const { bytesRead } = await fh.read(buf, 0, buf.length, from);
			buf = buf.subarray(0, bytesRead);
			if (from > 0) buf = buf.subarray(buf.indexOf(0x0a) + 1);
		} finally {
			await fh.close();
		}
		const text = buf.toString('utf8');
		const events = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((l) => JSON.parse(l));
		const kept = kind ? events.filter((e) => e.kind.startsWith(kind)) : events;
		return kept.slice(-JOURNAL_SHOWN);
	}

	/* What the sandbox and each session use now, through the client (metrics). */
	metrics() {
		return this.sandbox.getMetrics();
	}

	/* the network: its policy and the log's last lines, through the client (network/) */
	async network() {
		const policy = await this.sandbox.getNetworkPolicy();
		return { ...policy, log: await this.sandbox.getNetworkLog({ limit: NET_LINES }) };
	}

	/* A whole new policy; the client checks each pattern is one word, the daemon the rest. */
	async setNetworkPolicy({ mode, allow, deny }) {
		const rule = (r) => typeof r === 'string' || (r && typeof r.pattern === 'string' && typeof r.private === 'boolean');
		if ((mode !== undefined && typeof mode !== 'string') || !Array.isArray(allow) || !Array.isArray(deny) || !allow.every(rule))
			throw new WebError(400, 'bad policy');
		await this.sandbox.setNetworkPolicy({ mode, allow, deny });
	}

	/* terminals */
	async terms(id) {
		const names = await this.names(this.session(id, 'terms'));
		const out = [];
		for (const name of names.sort()) {
			try {
				out.push(parseStatus(await this.text('sessions', id, 'terms', name, 'status')));
			} catch (e) {
				if (e.code !== 'ENOENT') throw e;
			}
		}
		return out;
	}

	async createTerm(id, name) {
		await (await this.client(id)).createTerminal({ id: checkName(name) });
	}

	async removeTerm(id, name) {
		await new Terminal(await this.client(id), checkName(name)).close();
	}

	term(id, name, file) {
		return this.session(id, 'terms', checkName(name), file);
	}

	async resizeTerm(id, name, rows, cols) {
		if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 1 || cols < 1 ||
		    rows > 1000 || cols > 1000)
			throw new WebError(400, 'bad size');
		await new Terminal(await this.client(id), checkName(name)).resize(cols, rows);
	}

	/* interpreter contexts (issue 14): only where the mount has contexts/ */
	/* snapshots: each with its state, time and size, newest first ([] on a mount without) */
	async snapshots() {
		let names;
		try {
			names = (await this.names(this.path('snapshots'))).filter((n) => n !== 'import');
		} catch {
			return [];
		}
		const out = [];
		for (const name of names) {
			try {
				const st = parseStatus(await this.text('snapshots', name, 'status'));
				out.push({ name, state: st.state ?? '', time: st.time ?? '', size: Number(st.size ?? 0) });
			} catch {} /* deleted meanwhile */
		}
		return out.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
	}
	/* Returns once it is taken; no name: the next free one. */
	async takeSnapshot(name) {
		if (!name) return (await this.text('snapshots', 'clone')).trim();
		await mkdir(this.path('snapshots', checkName(name, 'snapshot')));
		return name;
	}
	/* Without force, EBUSY while something runs in the sandbox. */
	async restoreSnapshot(name, force) {
		await writeFile(this.path('snapshots', checkName(name, 'snapshot'), 'ctl'), force ? 'restore force\n' : 'restore\n');
	}
	async deleteSnapshot(name) {
		await rmdir(this.path('snapshots', checkName(name, 'snapshot')));
	}

	async hasContexts() {
		try {
			return (await lstat(this.path('contexts'))).isDirectory();
		} catch {
			return false;
		}
	}

	context(name, ...rest) {
		return this.path('contexts', checkName(name, 'context'), ...rest);
	}

	async contexts() {
		const list = (await this.sandbox.listCodeContexts()).filter((c) => NAME.test(c.id));
		return list.map((c) => ({ name: c.id, language: c.language ?? '' })).sort((a, b) => (a.name < b.name ? -1 : 1));
	}

	async createContext(name, language) {
		if (language !== undefined && !/^(python|javascript|typescript)$/.test(language))
			throw new WebError(400, 'bad language');
		const opts = { language };
		if (name !== undefined && name !== '') opts.id = checkName(name, 'context');
		return (await this.sandbox.createCodeContext(opts)).id;
	}

	async removeContext(name) {
		await this.sandbox.deleteCodeContext(checkName(name, 'context'));
	}

	async runCell(name, code) {
		if (typeof code !== 'string' || code.includes('\0')) throw new WebError(400, 'bad code');
		return submit(this.context(name, 'code'), code);
	}

	cellFile(name, n, file) {
		return this.context(name, 'cells', checkNumber(n), file);
	}

	/* The workspace, read-only: a directory's entries or a file's first MiB. The path is
	 * resolved, then opened, then the descriptor's own path is checked, so a symlink (or a
	 * rename racing the check) cannot lead out of workspace/. */
	async workspace(rel) {
		if (typeof rel !== 'string' || rel.includes('\0')) throw new WebError(400, 'bad path');
		const base = await realpath(this.path('workspace'));
		const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
		if (parts.includes('..')) throw new WebError(400, 'bad path');
		let real;
		try {
			real = await realpath(join(base, ...parts));
		} catch (e) {
			throw e.code === 'ENOENT' ? new WebError(404, 'no such file') : e;
		}
		if (!inside(base, real)) throw new WebError(403, 'outside the workspace');
		const fh = await open(real, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_NOCTTY);
		try {
			if (!inside(base, await readlink(`/proc/self/fd/${fh.fd}`)))
				throw new WebError(403, 'outside the workspace');
			const st = await fh.stat();
			if (st.isDirectory()) {
				const entries = await readdir(`/proc/self/fd/${fh.fd}`, { withFileTypes: true });
				return {
					type: 'dir',
					entries: entries.map((d) => ({ name: d.name, dir: d.isDirectory() })).sort(
						(a, b) => (a.name < b.name ? -1 : 1)),
				};
			}
			if (!st.isFile()) throw new WebError(403, 'not a regular file');
			const len = Math.min(st.size, FILE_MAX);
			const buf = Buffer.alloc(len);
			const { bytesRead } = await fh.read(buf, 0, len, 0);
			return { type: 'file', size: st.size, data: buf.subarray(0, bytesRead) };
		} finally {
			await fh.close();
		}
	}
}

function inside(base, p) {
	return p === base || p.startsWith(base + sep);
}

/* Opens cmd (or code) read-write, writes, reads back the number of this submission. */
async function submit(file, text) {
	const fh = await open(file, 'r+');
	try {
		await fh.write(text);
		const buf = Buffer.alloc(32);
		let got = 0;
		for (;;) {
			const { bytesRead } = await fh.read(buf, got, buf.length - got, null);
			if (bytesRead === 0) break;
			got += bytesRead;
		}
		const n = Number.parseInt(buf.subarray(0, got).toString(), 10);
		if (!Number.isInteger(n)) throw new Error(`${file}: no number in the handle's reply`);
		return n;
	} finally {
		await fh.close();
	}
}

/* Wakes a follow() from its pause at once, and has it look again soon after: output is
 * due (a key was typed into the terminal it follows). */
export class Nudge {
	wake() {
		this.poked = true;
		this.done?.();
	}
}

/* Follows a stream file (stdout, stderr, terms/out) to its EOF with O_NONBLOCK reads and a
 * short pause (10 to 80 ms) when there is nothing new, so no thread of the pool is ever
 * parked in a read a closing browser could not release. onChunk(bytes) for each piece;
 * stops at abort. */
export async function follow(file, onChunk, signal, nudge = new Nudge()) {
	const fh = await open(file, C.O_RDONLY | C.O_NONBLOCK);
	let idle = 10;
	try {
		while (!signal?.aborted) {
			const buf = Buffer.allocUnsafe(CHUNK);
			let n;
			try {
				({ bytesRead: n } = await fh.read(buf, 0, CHUNK, null));
			} catch (e) {
				if (e.code !== 'EAGAIN') throw e;
				await sleep(idle, signal, nudge);
				idle = nudge.poked ? 1 : Math.min(idle * 2, 80);
				nudge.poked = false;
				continue;
			}
			if (n === 0) return true;
			idle = 10;
			await onChunk(buf.subarray(0, n));
		}
		return false;
	} finally {
		await fh.close();
	}
}

/* A writer that never waits in a thread: O_NONBLOCK writes, EAGAIN retried after a pause,
 * at most `cap` bytes pending (then it fails with EAGAIN). */
export class Writer {
	static async open(file, cap = 1 << 20) {
		const w = new Writer();
		w.fh = await open(file, C.O_WRONLY | C.O_NONBLOCK);
		w.cap = cap;
		w.queue = [];
		w.pending = 0;
		w.busy = null;
		return w;
	}

	write(bytes) {
		if (this.pending + bytes.length > this.cap) throw Object.assign(new Error('input queue full'), { code: 'EAGAIN' });
		this.queue.push(bytes);
		this.pending += bytes.length;
		if (!this.busy) this.busy = this.drain().finally(() => (this.busy = null));
		return this.busy;
	}

	async drain() {
		while (this.queue.length) {
			const b = this.queue[0];
			let n;
			try {
				({ bytesWritten: n } = await this.fh.write(b, 0, b.length));
			} catch (e) {
				if (e.code !== 'EAGAIN') {
					this.queue = [];
					this.pending = 0;
					throw e;
				}
				await sleep(20);
				continue;
			}
			this.pending -= n;
			if (n === b.length) this.queue.shift();
			else this.queue[0] = b.subarray(n);
		}
	}

	async close() {
		await this.busy?.catch(() => {});
		await this.fh.close();
	}
}

function sleep(ms, signal, nudge) {
	return new Promise((resolve) => {
		if (nudge?.poked) return resolve(); /* woken while it was reading */
		const t = setTimeout(done, ms);
		function done() {
			clearTimeout(t);
			signal?.removeEventListener('abort', done);
			if (nudge) nudge.done = null;
			resolve();
		}
		signal?.addEventListener('abort', done, { once: true });
		if (nudge) nudge.done = done;
	});
}
