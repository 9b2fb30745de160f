// Commands the Bridge runs, each a submission on a session's `cmd` of the sandbox's mount
// (the Node client's submitCommand) with its output read from runs/N/: exec answered as
// Server-Sent Events (stdout and stderr as base64 chunks, then exit or error), and the
// workspace archived (persist) or filled from an archive (hydrate) by tar inside the sandbox.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { submitCommand, wrapCommand } from '../../../lib/commands.js';
import { shellQuote } from '../../../lib/fsio.js';
import { at, openDir } from '../../../lib/beneath.js';
import { BridgeError, invalid, toBridgeError } from './errors.js';
import { EventWriter, outputEvent, sse } from './events.js';
import { Nudge, pump, receive } from './stream.js';

export const WORKSPACE = '/workspace';
const HYDRATE_MAX = 1 << 30;
const KEEPALIVE_MS = 15000;
/* How long a command may take to be answered from its result alone: its first output waits
 * that long at most. */
const FOLLOW_AFTER_MS = 5;

/* A path as the Bridge takes it (relative ones under /workspace), normalized; null if it is
 * not /workspace or beneath it. */
export function inWorkspace(path) {
	if (typeof path !== 'string' || path.includes('\0')) return null;
	const abs = posix.normalize(path.startsWith('/') ? path : `${WORKSPACE}/${path}`).replace(/(.)\/$/, '$1');
	return abs === WORKSPACE || abs.startsWith(`${WORKSPACE}/`) ? abs : null;
}

/* The command of an ExecRequest body, with its cwd: 400 for a bad body, 403 for a cwd outside
 * /workspace (as the Bridge). */
export function commandOf(body) {
	if (!body || !Array.isArray(body.argv) || body.argv.length === 0) throw invalid('argv must be a non-empty array');
	if (!body.argv.every((a) => typeof a === 'string' && !a.includes('\0')))
		throw invalid('argv must be strings without NUL bytes');
	if (body.timeout_ms !== undefined && (!Number.isInteger(body.timeout_ms) || body.timeout_ms < 0))
		throw invalid('timeout_ms must be a non-negative integer');
	let cwd;
	if (body.cwd !== undefined) {
		cwd = inWorkspace(body.cwd);
		if (cwd === null) throw new BridgeError(403, 'invalid_request', 'cwd must resolve to a location within /workspace');
	}
	const command = body.argv.map(shellQuote).join(' ');
	return { text: wrapCommand(command, cwd === undefined ? {} : { cwd }), timeout: body.timeout_ms };
}

/* Submits; {runDir, result}: result settles with the run's result JSON once it ended. */
async function start(session, text, timeout) {
	try {
		const { runDir, raw } = await submitCommand(session, text, timeout);
		return { runDir, result: raw };
	} catch (err) {
		throw toBridgeError(err, 'exec', [502, 'exec_transport_error']);
	}
}

/* A stream's bytes as the result embeds them, or null when it holds only a part. */
function embedded(r, name) {
	if (r.truncated || r[`${name}Truncated`]) return null;
	const v = r[name] ?? '';
	return Buffer.from(v, r[`${name}Encoding`] === 'base64' ? 'base64' : 'utf8');
}

/* The result, if the command ends within FOLLOW_AFTER_MS and its result embeds both streams
 * whole: [result, [[stream, bytes], ...]]; else null. */
async function endedEarly(result) {
	let timer;
	const early = await Promise.race([result.then((r) => r, () => null),
		new Promise((r) => (timer = setTimeout(r, FOLLOW_AFTER_MS, null)))]);
	clearTimeout(timer);
	if (!early) return null;
	const parts = ['stdout', 'stderr'].map((s) => [s, embedded(early, s)]);
	return parts.every(([, b]) => b !== null) ? [early, parts] : null;
}

/* Both output files of runDir to onChunk(stream, bytes), to their ends; the result nudges the
 * readers out of their pauses, so the last bytes follow the end at once. onChunk is done with
 * the bytes once its promise settles (their buffers are read into again). */
function followOutput(runDir, result, onChunk, signal) {
	const nudges = [new Nudge(), new Nudge()];
	result.then(() => nudges.forEach((n) => n.wake()), () => {});
	return Promise.all(['stdout', 'stderr'].map((s, i) =>
		pump(join(runDir, s), (bytes) => onChunk(s, bytes), { signal, nudge: nudges[i], reuse: true })));
}

/* The output to onChunk, from the result when the command ends early (no file of it is
 * opened), else followed. */
async function readOutput(runDir, result, onChunk) {
	const early = await endedEarly(result);
	if (!early) return followOutput(runDir, result, onChunk);
	for (const [s, b] of early[1]) if (b.length) await onChunk(s, b);
}

/* POST .../exec (its body checked by commandOf): 200 and the event stream once the command is
 * accepted. A command that ends early is one write: headers, events and end. */
export async function execStream(session, { text, timeout }, res) {
	const { runDir, result } = await start(session, text, timeout);
	res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
	const early = await endedEarly(result);
	if (early) {
		res.cork();
		for (const [s, b] of early[1]) if (b.length) res.write(outputEvent(s, b));
		res.end(ending(early[0], timeout));
		res.uncork();
		return;
	}
	res.flushHeaders();
	const ac = new AbortController();
	res.on('close', () => ac.abort());
	const events = new EventWriter(res, ac.signal);
	/* A command silent for long still moves bytes: the server's idle bound is for stalls. */
	const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
	let last;
	try {
		await followOutput(runDir, result, (s, bytes) => events.write(s, bytes), ac.signal);
		last = ending(await result, timeout);
	} catch (err) {
		last = sse('error', JSON.stringify({ error: `exec failed: ${err.code ?? err.message}`, code: 'exec_transport_error' }));
	} finally {
		clearInterval(keepalive);
	}
	res.end(last);
}

/* The last event of a command's stream, from its result. */
function ending(r, timeout) {
	if (r.timedOut) return sse('error', JSON.stringify({ error: `command timed out after ${timeout} ms`, code: 'exec_error' }));
	if (r.exitCode === null || r.exitCode === undefined)
		return sse('error', JSON.stringify({ error: r.error ?? `command ended by ${r.signal ?? 'a signal'}`, code: 'exec_error' }));
	return sse('exit', JSON.stringify({ exit_code: r.exitCode }));
}

/* Runs a command to its end with its stdout spooled to a host file (any size): {file, code,
 * stderr}; the caller removes file's directory. */
async function runSpooled(session, text) {
	const { runDir, result } = await start(session, text);
	const dir = await mkdtemp(join(tmpdir(), 'sbxfs-bridge-'));
	const file = join(dir, 'out');
	const out = await open(file, 'wx', 0o600);
	let stderr = Buffer.alloc(0);
	try {
		await readOutput(runDir, result, async (s, bytes) => {
			if (s === 'stdout') await out.write(bytes);
			else if (stderr.length < 4096) stderr = Buffer.concat([stderr, bytes]).subarray(0, 4096);
		});
	} finally {
		await out.close();
	}
	const r = await result;
	return { dir, file, code: r.exitCode, stderr: stderr.toString('utf8').trim() };
}

/* An exclude of persist: a path under /workspace, as tar's --exclude takes it (relative). */
function excludeOf(path) {
	if (path.includes('..')) throw invalid('exclude paths must not contain ".."');
	const abs = inWorkspace(path);
	if (abs === null || abs === WORKSPACE) throw invalid(`exclude ${JSON.stringify(path)} is not beneath /workspace`);
	return `--exclude=./${abs.slice(WORKSPACE.length + 1)}`;
}

/* POST .../persist: the workspace as a tar archive, made by tar in the sandbox and spooled
 * here, so that a failure is a 502 with tar's words rather than a cut stream. */
export async function persist(session, excludes, res) {
	const args = ['tar', '-cf', '-', ...excludes.map(excludeOf), '-C', WORKSPACE, '.'];
	const { dir, file, code, stderr } = await runSpooled(session, args.map(shellQuote).join(' '));
	try {
		if (code !== 0) throw new BridgeError(502, 'workspace_archive_read_error', `tar failed (exit ${code}): ${stderr}`);
		const { size } = await stat(file);
		res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': size });
		await pipeline(createReadStream(file), res);
	} finally {
		await rm(dir, { recursive: true, force: true });
	}
}

/* POST .../hydrate: the body (a tar archive) written to a new file of the workspace, extracted
 * there by tar in the sandbox, then removed. What tar does with the archive's names is tar's
 * inside the sandbox; the host only writes one new file by descriptor. */
export async function hydrate(session, workspace, req) {
	const name = `.sbxfs-hydrate-${randomBytes(8).toString('hex')}.tar`;
	const dir = await openDir(workspace, []);
	let size = 0;
	try {
		/* Readable by the sandbox's user, whose tar reads it. */
		const fh = await open(at(dir, name), 'wx', 0o644);
		try {
			size = await receive(req, fh, HYDRATE_MAX);
		} finally {
			await fh.close();
		}
		if (size === 0) throw invalid('Empty tar payload');
		const text = ['tar', '-xf', `${WORKSPACE}/${name}`, '-C', WORKSPACE].map(shellQuote).join(' ');
		const { dir: spool, code, stderr } = await runSpooled(session, text);
		await rm(spool, { recursive: true, force: true });
		if (code !== 0) throw new BridgeError(502, 'workspace_archive_write_error', `tar extract failed (exit ${code}): ${stderr}`);
	} finally {
		await rm(at(dir, name), { force: true }).catch(() => {});
		await dir.close();
	}
	return { ok: true };
}
