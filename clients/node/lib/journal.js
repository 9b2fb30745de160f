// The audit journal and the metrics (docs/journal.md, docs/metrics.md): getJournal reads the
// events kept, watchJournal follows new ones, getMetrics parses a metrics file. Over a mount
// or over HTTP alike (remote.js): the same files, read at offsets.
import { open } from 'node:fs/promises';
import { constants as C } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { SandboxError, ValidationError, mapError } from './errors.js';
import { checkName } from './names.js';
import { remoteOf } from './remote.js';

const CHUNK = 1 << 20;
// How long a follower waits between looks at the journal's end: a file cannot be polled from
// Node, so it looks again (over HTTP, less often).
const FOLLOW_MS = 5;
const FOLLOW_REMOTE_MS = 50;

function journalPath(sandbox, session) {
	return session === undefined
		? join(sandbox.mountpoint, 'journal')
		: join(sandbox.mountpoint, 'sessions', checkName(session, 'session'), 'journal');
}

/* A reader of the file's bytes from an offset, local or remote; close() when done. */
async function opener(path) {
	const at = remoteOf(path);
	if (at) {
		return {
			read: (offset) => at.r.bytes('GET', at.rel, { query: `?nowait&offset=${offset}` }),
			close: async () => {},
			remote: true,
		};
	}
	const fh = await open(path, C.O_RDONLY | C.O_NOFOLLOW);
	return {
		async read(offset) {
			const buf = Buffer.allocUnsafe(CHUNK);
			const { bytesRead } = await fh.read(buf, 0, CHUNK, offset);
			return buf.subarray(0, bytesRead);
		},
		close: () => fh.close(),
		remote: false,
	};
}

/* Whole lines of buf as events; the bytes of a last line not yet whole are left. */
function parseLines(buf) {
	const end = buf.lastIndexOf(0x0a) + 1;
	const events = buf.subarray(0, end).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
	return { events, rest: buf.subarray(end) };
}

function checkSince(since) {
	if (since !== undefined && (!Number.isInteger(since) || since < 0))
		throw new ValidationError(`invalid since ${JSON.stringify(since)}: a sequence number`);
}

/* Everything from offset to the end now: { events, offset } (offset: where to go on). */
async function readFrom(r, offset, since) {
	const events = [];
	let rest = Buffer.alloc(0);
	for (;;) {
		const chunk = await r.read(offset);
		if (chunk.length === 0) break;
		offset += chunk.length;
		const got = parseLines(Buffer.concat([rest, chunk]));
		rest = got.rest;
		for (const e of got.events) if (since === undefined || e.seq >= since) events.push(e);
	}
	return { events, offset: offset - rest.length };
}

/* The events kept (from sequence number `since` on), the last `limit` of them. */
export async function getJournal(sandbox, { since, session, limit } = {}) {
	checkSince(since);
	if (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
		throw new ValidationError(`invalid limit ${JSON.stringify(limit)}: a count of events`);
	const path = journalPath(sandbox, session);
	try {
		const r = await opener(path);
		try {
			const { events } = await readFrom(r, 0, since);
			return limit === undefined ? events : events.slice(Math.max(0, events.length - limit));
		} finally {
			await r.close();
		}
	} catch (err) {
		throw mapError(err, session === undefined ? 'journal' : 'session', session === undefined ? 'journal' : `session ${session}`);
	}
}

/* Calls onEvent with each event kept from `since` on (none: only new ones), then with each new
 * one as it comes, until signal aborts; resolves then. onError gets a failure, and ends it. */
export async function watchJournal(sandbox, { since, session, onEvent, onError, signal } = {}) {
	checkSince(since);
	if (typeof onEvent !== 'function') throw new ValidationError('watchJournal needs onEvent');
	const path = journalPath(sandbox, session);
	let r;
	try {
		r = await opener(path);
		const first = await readFrom(r, 0, since ?? Infinity);
		let offset = first.offset;
		for (const e of first.events) onEvent(e);
		while (!signal?.aborted) {
			const got = await readFrom(r, offset, undefined);
			offset = got.offset;
			for (const e of got.events) onEvent(e);
			if (!got.events.length)
				await sleep(r.remote ? FOLLOW_REMOTE_MS : FOLLOW_MS, undefined, { signal }).catch(() => {});
		}
	} catch (err) {
		const e = err instanceof SandboxError ? err : mapError(err, 'journal', 'journal');
		if (onError) onError(e);
		else throw e;
	} finally {
		await r?.close();
	}
}

/* One line of the text exposition format: { name, labels, value }, or null for a comment. */
function parseSample(line) {
	if (!line || line.startsWith('#')) return null;
	const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
	if (!m) throw new SandboxError(`a metrics line that is not one: ${JSON.stringify(line)}`, { errno: 'EIO' });
	const labels = {};
	for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
		labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
	return { name: m[1], labels, value: Number(m[3]) };
}

/* The samples of the sandbox's metrics (and every session's), a session's, or one of its
 * background processes' (proc). */
export async function getMetrics(sandbox, { session, proc } = {}) {
	if (proc !== undefined && session === undefined) throw new ValidationError('a proc needs its session');
	const parts = session === undefined ? ['metrics']
		: proc === undefined ? ['sessions', checkName(session, 'session'), 'metrics']
		: ['sessions', checkName(session, 'session'), 'procs', checkName(proc, 'process'), 'metrics'];
	const path = join(sandbox.mountpoint, ...parts);
	let text;
	try {
		const at = remoteOf(path);
		const r = at ? null : await open(path, C.O_RDONLY | C.O_NOFOLLOW);
		try {
			text = at ? (await at.r.readAll(at.rel)).toString('utf8') : await r.readFile('utf8');
		} finally {
			await r?.close();
		}
	} catch (err) {
		throw mapError(err, session === undefined ? 'metrics' : 'session', session === undefined ? 'metrics' : `session ${session}`);
	}
	return text.split('\n').map(parseSample).filter(Boolean);
}
