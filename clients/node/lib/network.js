// The network as files: network/policy as getNetworkPolicy and setNetworkPolicy, network/log (or
// sessions/ID/network) as getNetworkLog. docs/network.md describes the files.
import { constants as C } from 'node:fs';
import { open } from 'node:fs/promises';
import { readFile, writeFile } from './io.js';
import { remoteOf } from './remote.js';
import { join } from 'node:path';
import { ValidationError, mapError } from './errors.js';
import { checkName } from './names.js';

const MODES = ['none', 'filtered', 'host'];

// The log is a ring of at most 1 MiB; lines appended while it is read can add a little, so the
// read stops past this much instead of following a busy log forever.
const LOG_MAX = 2 << 20;
const CHUNK = 64 << 10;

/* network/policy's text: `mode MODE`, then `allow PATTERN [private]` and `deny PATTERN` lines. */
export function parsePolicy(text) {
	const out = { mode: undefined, allow: [], deny: [] };
	for (const line of text.split('\n')) {
		const [verb, pattern, marker] = line.trim().split(/\s+/);
		if (verb === 'mode') out.mode = pattern;
		else if (verb === 'allow') out.allow.push({ pattern, private: marker === 'private' });
		else if (verb === 'deny') out.deny.push(pattern);
	}
	return out;
}

/* A pattern as one word of a line: anything else (a space, a newline) would write another rule
 * than the caller meant. The daemon checks the rest, at the write(). */
function checkPattern(p) {
	if (typeof p !== 'string' || !/^[\x21-\x7e]{1,500}$/.test(p))
		throw new ValidationError(`invalid network pattern ${JSON.stringify(p)}: one word of printable ASCII`);
	return p;
}

/* The policy's text from {mode, allow, deny}: `allow` takes patterns or {pattern, private}. */
export function policyText({ mode, allow = [], deny = [] } = {}) {
	if (mode !== undefined && !MODES.includes(mode))
		throw new ValidationError(`invalid network mode ${JSON.stringify(mode)}: none, filtered or host`);
	if (!Array.isArray(allow) || !Array.isArray(deny)) throw new ValidationError('network policy: allow and deny are arrays');
	const lines = mode === undefined ? [] : [`mode ${mode}`];
	for (const rule of allow) {
		if (typeof rule === 'string') lines.push(`allow ${checkPattern(rule)}`);
		else lines.push(`allow ${checkPattern(rule?.pattern)}${rule.private ? ' private' : ''}`);
	}
	for (const p of deny) lines.push(`deny ${checkPattern(p)}`);
	return lines.map((l) => `${l}\n`).join('');
}

export async function getNetworkPolicy(sandbox) {
	try {
		return parsePolicy(await readFile(join(sandbox.mountpoint, 'network', 'policy'), 'utf8'));
	} catch (err) {
		throw mapError(err, 'network', 'network policy');
	}
}

/* Replaces the whole policy in one open: applied at the close, or nothing of it is. Without a
 * mode the mode in force stays. */
export async function setNetworkPolicy(sandbox, policy) {
	const text = policyText(policy);
	try {
		await writeFile(join(sandbox.mountpoint, 'network', 'policy'), text);
	} catch (err) {
		throw mapError(err, 'network', 'network policy');
	}
}

const dash = (s) => (s === '-' ? null : s);

/* A field as the log writes it: any byte of what the sandbox sent as %HH (docs/network.md).
 * The bytes are UTF-8, with U+FFFD for what is not. */
export function unpercent(s) {
	const bytes = [];
	for (let i = 0; i < s.length; i++) {
		if (s[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
			bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
			i += 2;
		} else {
			bytes.push(...Buffer.from(s[i], 'utf8'));
		}
	}
	return Buffer.from(bytes).toString('utf8');
}

/* One log line by docs/network.md's fields; the last field is the rest of the line. */
export function parseLogLine(line) {
	const f = line.split(' ');
	if (f.length < 11) return null;
	return {
		time: f[0],
		session: dash(f[1]),
		process: dash(f[2]),
		protocol: dash(f[3]),
		target: unpercent(f[4]),
		address: dash(unpercent(f[5])),
		decision: f[6],
		bytesFromClient: Number(f[7]),
		bytesToClient: Number(f[8]),
		durationMs: Number(f[9]),
		reason: unpercent(f.slice(10).join(' ')),
	};
}

/* Up to LOG_MAX bytes of a log as it is now: O_NONBLOCK reads stop where a blocking one would
 * wait. */
async function readLogNow(path) {
	const chunks = [];
	let total = 0;
	const fh = await open(path, C.O_RDONLY | C.O_NONBLOCK);
	try {
		while (total < LOG_MAX) {
			const buf = Buffer.allocUnsafe(CHUNK);
			let n;
			try {
				({ bytesRead: n } = await fh.read(buf, 0, CHUNK, null));
			} catch (err) {
				if (err.code === 'EAGAIN') break; // at the end, where a blocking read would wait
				throw err;
			}
			if (n === 0) break;
			chunks.push(buf.subarray(0, n));
			total += n;
		}
	} finally {
		await fh.close();
	}
	return Buffer.concat(chunks);
}

/* The log's lines held now: reads never wait at its end (O_NONBLOCK), and the ring's oldest line
 * is where a read from 0 starts. `limit` keeps the last lines. */
export async function getNetworkLog(sandbox, opts = {}) {
	const { session, limit } = opts;
	if (limit !== undefined && (!Number.isInteger(limit) || limit < 0))
		throw new ValidationError(`invalid limit ${JSON.stringify(limit)}: a count of lines`);
	const path = session === undefined
		? join(sandbox.mountpoint, 'network', 'log')
		: join(sandbox.mountpoint, 'sessions', checkName(session, 'session'), 'network');
	let bytes;
	try {
		const at = remoteOf(path);
		bytes = at ? (await at.r.readNow(at.rel)).subarray(0, LOG_MAX) : await readLogNow(path);
	} catch (err) {
		throw mapError(err, session === undefined ? 'network' : 'session', session === undefined ? 'network log' : `session ${session}`);
	}
	const text = bytes.toString('utf8');
	// Only whole lines: a read stopped at LOG_MAX may end inside one.
	const lines = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean);
	const entries = lines.map(parseLogLine).filter(Boolean);
	return limit === undefined ? entries : entries.slice(Math.max(0, entries.length - limit));
}
