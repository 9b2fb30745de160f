// File operations on control files: whole writes, reads to EOF, run handles, snapshots. A path
// of a sandbox over HTTP (remote.js) takes the tree's routes instead: the same operation, done by
// the server on the mount.
import { open } from 'node:fs/promises';
import { writeFile } from './io.js';
import { remoteOf } from './remote.js';
import { waitRead, waitSubmit } from './waiter.js';

/* One write of `data` (string or bytes) to a control file; its errors come from write or close. */
export async function writeControl(path, data) {
	await writeFile(path, data);
}

/* Reads a file to EOF: for stdout, exit or result this waits until the command ends (or the
 * signal aborts the wait). */
export function readToEnd(path, signal) {
	const at = remoteOf(path);
	return at ? at.r.readAll(at.rel, signal) : waitRead('all', path, { signal });
}

export async function readText(path, signal) {
	return (await readToEnd(path, signal)).toString('utf8');
}

/* A result file: one JSON object and a newline, the only raw newline in it (JSON strings escape
 * theirs), so the newline ends the read with no read for the EOF after it. */
export async function readJSON(path) {
	const at = remoteOf(path);
	return JSON.parse((await (at ? at.r.readAll(at.rel) : waitRead('line', path))).toString('utf8'));
}

/* What a growing file holds now (its size is what was written so far), without waiting. */
export async function readSnapshot(path) {
	const at = remoteOf(path);
	if (at) return at.r.readNow(at.rel);
	const fh = await open(path, 'r');
	try {
		const { size } = await fh.stat();
		const buf = Buffer.alloc(size);
		let got = 0;
		while (got < size) {
			const { bytesRead } = await fh.read(buf, got, size - got, got);
			if (bytesRead === 0) break;
			got += bytesRead;
		}
		return buf.subarray(0, got);
	} finally {
		await fh.close();
	}
}

/* A run handle: `cmd` (or procs/NAME/cmd, checkout, code) opened read-write; the read after
 * the write submits and returns the number of this very submission, whoever else writes. */
export async function submit(path, text) {
	const at = remoteOf(path);
	if (at) {
		const n = Number.parseInt((await at.r.submit(at.rel, text)).toString(), 10);
		if (!Number.isInteger(n)) throw new Error(`${at.rel}: no run number in the handle's reply`);
		return n;
	}
	const fh = await open(path, 'r+');
	try {
		await fh.write(text);
		const buf = Buffer.alloc(32);
		let got = 0;
		// The reply is `N\n`: its newline ends it, with no read for the EOF after it.
		while (got === 0 || buf[got - 1] !== 0x0a) {
			const { bytesRead } = await fh.read(buf, got, buf.length - got, null);
			if (bytesRead === 0) break;
			got += bytesRead;
		}
		const n = Number.parseInt(buf.subarray(0, got).toString(), 10);
		if (!Number.isInteger(n)) throw new Error(`${path}: no run number in the handle's reply`);
		return n;
	} finally {
		await fh.close();
	}
}

/* A command on the cmd handle at `path` (after `ctlText` written to the session's ctl, if
 * given): {n, result} once it is queued; result resolves with its result JSON once it ended. On a
 * mount this is one worker's calls (waiter.js). */
export async function submitAndWait(path, text, ctlText) {
	const dir = path.slice(0, path.lastIndexOf('/'));
	const at = remoteOf(path);
	if (at) {
		if (ctlText !== undefined) await writeControl(`${dir}/ctl`, ctlText);
		const n = await submit(path, text);
		return { n, result: readJSON(`${dir}/runs/${n}/result`) };
	}
	const { n, result } = await waitSubmit(path, text, ctlText === undefined ? undefined : { path: `${dir}/ctl`, text: ctlText });
	return { n, result: result.then((bytes) => JSON.parse(bytes.toString('utf8'))) };
}

/* Calls onChunk(bytes) for everything written to a stream file until it ends (EOF), or until
 * signal aborts (checked as each chunk arrives). */
export async function follow(path, onChunk, signal) {
	const at = remoteOf(path);
	if (at) await at.r.follow(at.rel, onChunk, signal);
	else await waitRead('follow', path, { onChunk, signal });
}

/* `key value` lines (status files) as an object. */
export function parseStatus(text) {
	const out = {};
	for (const line of text.split('\n')) {
		const sp = line.indexOf(' ');
		if (sp > 0) out[line.slice(0, sp)] = line.slice(sp + 1);
	}
	return out;
}

/* A value in the one-line form env and cwd files take: bash's $'...' when it holds a
 * control byte or starts with $' (docs/semantics.md, "One line per value"). */
export function envValue(value) {
	const s = String(value);
	if (!/[\x00-\x1f\x7f]/.test(s) && !s.startsWith("$'")) return s;
	if (s.includes('\0')) throw new TypeError('a value cannot hold a NUL byte');
	let q = "$'";
	for (const ch of s) {
		const c = ch.codePointAt(0);
		if (ch === '\\') q += '\\\\';
		else if (ch === "'") q += "\\'";
		else if (ch === '\n') q += '\\n';
		else if (ch === '\t') q += '\\t';
		else if (ch === '\r') q += '\\r';
		else if (c < 0x20 || c === 0x7f) q += '\\x' + c.toString(16).padStart(2, '0');
		else q += ch;
	}
	return q + "'";
}

/* A string as one bash word. */
export function shellQuote(s) {
	return `'${String(s).replace(/'/g, `'\\''`)}'`;
}

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
