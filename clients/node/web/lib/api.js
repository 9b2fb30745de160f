// The JSON API and its event streams: each route is one or a few file operations of fsops.js
// on the mount; nothing here runs a program.
import { follow, WebError, checkKind, checkName, checkNumber, portOf } from './fsops.js';
import { readFile } from 'node:fs/promises';
import { drained } from './drain.js';

const BODY_MAX = (1 << 20) + 4096;

const ERRNO_STATUS = {
	ENOENT: 404, ENOTDIR: 404, EEXIST: 409, EBUSY: 409, ESRCH: 409, ENOTEMPTY: 409,
	EINVAL: 400, EACCES: 403, EPERM: 403, EFBIG: 413, EAGAIN: 503, EMFILE: 503, ENFILE: 503,
	ENOSPC: 507, ENOMEM: 503,
};

/* [method, pattern, handler(ctx)]: pattern parts starting with ':' are captured. */
const ROUTES = [
	['GET', 'info', async ({ m }) => ({ contexts: await m.hasContexts() })],
	['GET', 'sessions', ({ m }) => m.sessions()],
	['POST', 'sessions', async ({ m, body }) => ({ id: await m.createSession(body.id) })],
	['DELETE', 'sessions/:id', async ({ m, p }) => void (await m.deleteSession(p.id))],
	['POST', 'sessions/:id/exec', async ({ m, p, body }) => ({ run: await m.exec(p.id, body.command) })],
	['POST', 'sessions/:id/kill', async ({ m, p }) => void (await m.killCommand(p.id))],
	['GET', 'sessions/:id/runs', ({ m, p }) => m.runs(p.id)],
	['GET', 'sessions/:id/runs/:n', ({ m, p }) => m.run(p.id, p.n)],
	['GET', 'sessions/:id/runs/:n/stream', streamRun],
	['GET', 'sessions/:id/procs', ({ m, p }) => m.procs(p.id)],
	['POST', 'sessions/:id/procs', async ({ m, p, body }) => void (await m.startProc(p.id, body.name, body.command))],
	['GET', 'sessions/:id/procs/:name/logs', ({ m, p }) => m.procLogs(p.id, p.name)],
	['POST', 'sessions/:id/procs/:name/kill', async ({ m, p }) => void (await m.killProc(p.id, p.name))],
	['DELETE', 'sessions/:id/procs/:name', async ({ m, p }) => void (await m.removeProc(p.id, p.name))],
	['GET', 'sessions/:id/terms', ({ m, p }) => m.terms(p.id)],
	['POST', 'sessions/:id/terms', async ({ m, p, body }) => void (await m.createTerm(p.id, body.name))],
	['DELETE', 'sessions/:id/terms/:name', async ({ m, p }) => void (await m.removeTerm(p.id, p.name))],
	['GET', 'ports', ({ m }) => m.ports()],
	['POST', 'ports', ({ m, body }) => m.exposePort(body.port, body.name)],
	['DELETE', 'ports/:port', async ({ m, p }) => void (await m.unexposePort(portOf(p.port)))],
	['GET', 'network', ({ m }) => m.network()],
	['GET', 'journal', ({ m, req }) => {
		const q = new URL(req.url, 'http://x').searchParams;
		const session = q.get('session');
		return m.journal(session ? checkName(session, 'session') : null, checkKind(q.get('kind') ?? ''));
	}],
	['GET', 'metrics', ({ m }) => m.metrics()],
	['POST', 'network', async ({ m, body }) => void (await m.setNetworkPolicy(body))],
	['GET', 'snapshots', ({ m }) => m.snapshots()],
	['POST', 'snapshots', async ({ m, body }) => ({ name: await m.takeSnapshot(body.name) })],
	['POST', 'snapshots/:name/restore', async ({ m, p, body }) => void (await m.restoreSnapshot(p.name, body.force === true))],
	['DELETE', 'snapshots/:name', async ({ m, p }) => void (await m.deleteSnapshot(p.name))],
	['GET', 'contexts', async ({ m }) => ((await m.hasContexts()) ? m.contexts() : [])],
	['POST', 'contexts', async ({ m, body }) => ({ name: await m.createContext(body.name, body.language) })],
	['DELETE', 'contexts/:name', async ({ m, p }) => void (await m.removeContext(p.name))],
	['POST', 'contexts/:name/run', async ({ m, p, body }) => ({ cell: await m.runCell(p.name, body.code) })],
	['GET', 'contexts/:name/cells/:n/stream', streamCell],
];

/* Splits the path after /api/ into decoded parts; an encoded '/' or NUL is refused here, so
 * a part is always one path component to the checks that follow. */
export function pathParts(rest) {
	return rest.split('/').map((raw) => {
		let part;
		try {
			part = decodeURIComponent(raw);
		} catch {
			throw new WebError(400, 'bad escape in path');
		}
		if (part.includes('/') || part.includes('\0')) throw new WebError(400, 'bad path');
		return part;
	});
}

function match(pattern, parts) {
	const pat = pattern.split('/');
	if (pat.length !== parts.length) return null;
	const p = {};
	for (let i = 0; i < pat.length; i++) {
		if (pat[i].startsWith(':')) p[pat[i].slice(1)] = parts[i];
		else if (pat[i] !== parts[i]) return null;
	}
	return p;
}

/* Serves req under /api/ (rest: the path after it); res is answered in every case. */
export async function handleApi(m, req, res, rest) {
	try {
		if (rest.startsWith('workspace/') || rest === 'workspace')
			return await serveWorkspace(m, res, rest.slice('workspace'.length));
		const parts = pathParts(rest);
		let allowed = false;
		for (const [method, pattern, fn] of ROUTES) {
			const p = match(pattern, parts);
			if (!p) continue;
			allowed = true;
			if (method !== req.method) continue;
			const body = method === 'POST' ? await readJson(req) : {};
			const out = await fn({ m, p, body, req, res });
			if (!res.headersSent) json(res, out === undefined ? 204 : 200, out);
			return;
		}
		throw new WebError(allowed ? 405 : 404, allowed ? 'method not allowed' : 'no such endpoint');
	} catch (e) {
		fail(res, e);
	}
}

/* The Node client's errors by their SDK code, when no errno says more. */
// NETWORK_POLICY: a switch to or from host mode, which takes a remount.
const CODE_STATUS = { VALIDATION_FAILED: 400, RESOURCE_BUSY: 409, PERMISSION_DENIED: 403, INVALID_PORT: 400, NETWORK_POLICY: 409 };

/* Answers with the error's status and a message that names no host path (the client's
 * messages and Node's hold the mount's). */
export function fail(res, e) {
	const errno = typeof e.errno === 'string' ? e.errno : e.code; /* the client's, or Node's */
	let status = e instanceof WebError ? e.status : ERRNO_STATUS[errno] ?? CODE_STATUS[e.code];
	if (!status && typeof e.code === 'string') status = /NOT_FOUND$/.test(e.code) ? 404 : /EXISTS$/.test(e.code) ? 409 : undefined;
	status ??= 500;
	let message;
	if (e instanceof WebError) message = e.message;
	else if (e.name && e.name.endsWith('Error') && e.name !== 'Error') message = `${e.name}${typeof errno === 'string' ? ` (${errno})` : ''}`;
	else message = typeof e.code === 'string' ? `${e.code}: ${e.syscall ?? 'error'}` : 'internal error';
	if (status === 500 && !e.code) console.error(e);
	if (res.headersSent) return res.destroy();
	json(res, status, { error: message, code: typeof errno === 'string' ? errno : null });
}

function json(res, status, value) {
	const text = status === 204 ? '' : JSON.stringify(value);
	res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
	res.end(text);
}

/* A JSON object body: Content-Type application/json (a cross-site form cannot send it
 * without a preflight), at most BODY_MAX bytes. */
async function readJson(req) {
	if (!/^application\/json\b/.test(req.headers['content-type'] ?? ''))
		throw new WebError(415, 'the body must be application/json');
	const chunks = [];
	let size = 0;
	for await (const c of req) {
		size += c.length;
		if (size > BODY_MAX) throw new WebError(413, 'body too large');
		chunks.push(c);
	}
	let v;
	try {
		v = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
	} catch {
		throw new WebError(400, 'bad JSON');
	}
	if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new WebError(400, 'the body must be an object');
	return v;
}

async function serveWorkspace(m, res, rest) {
	const rel = pathParts(rest.replace(/^\//, '')).join('/');
	const out = await m.workspace(rel);
	if (out.type === 'dir') return json(res, 200, out);
	res.writeHead(200, {
		'Content-Type': 'application/octet-stream',
		'Content-Disposition': 'attachment',
		'Cache-Control': 'no-store',
		'X-Truncated': String(out.size > out.data.length),
	});
	res.end(out.data);
}

/* Server-sent events on res until the request's connection closes. */
function sse(req, res) {
	res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' });
	res.flushHeaders(); /* at once, not with the first output, which may be far off */
	const ac = new AbortController();
	res.on('close', () => ac.abort()); /* the browser went away (or the stream ended) */
	return {
		signal: ac.signal,
		/* Resolves once the client has taken it (a slow browser holds the follower back
		 * instead of the server buffering a fast command's output). */
		async send(event, data) {
			if (ac.signal.aborted || res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) return;
			await drained(res);
		},
		end() {
			res.end();
		},
	};
}

/* Two stream files followed at once, each chunk an `out` event {s, d} (d as UTF-8 text,
 * decoded across chunk ends); true when both reached EOF. */
async function followPair(files, ev) {
	const ends = await Promise.all(files.map(([s, file]) => {
		const dec = new TextDecoder('utf-8');
		return follow(file, (bytes) => ev.send('out', { s, d: dec.decode(bytes, { stream: true }) }), ev.signal);
	}));
	return ends.every(Boolean);
}

/* runs/N: stdout and stderr as they come, then `end` with the run's exit and duration. */
async function streamRun({ m, p, req, res }) {
	const { id, n } = p;
	checkName(id, 'session');
	checkNumber(n);
	await m.run(id, n); /* 404 before the stream starts */
	const ev = sse(req, res);
	try {
		const done = await followPair([['stdout', m.runFile(id, n, 'stdout')], ['stderr', m.runFile(id, n, 'stderr')]], ev);
		if (done) ev.send('end', await m.run(id, n));
	} catch (e) {
		ev.send('failure', { error: e.code ?? e.message });
	}
	ev.end();
}

/* contexts/NAME/cells/N: its output as it comes, then `end` with its result JSON. */
async function streamCell({ m, p, req, res }) {
	const { name, n } = p;
	checkName(name, 'context');
	checkNumber(n);
	const ev = sse(req, res);
	try {
		const done = await followPair([['stdout', m.cellFile(name, n, 'stdout')], ['stderr', m.cellFile(name, n, 'stderr')]], ev);
		if (done) ev.send('end', JSON.parse((await readFile(m.cellFile(name, n, 'result'))).toString('utf8')));
	} catch (e) {
		ev.send('failure', { error: e.code ?? e.message });
	}
	ev.end();
}
