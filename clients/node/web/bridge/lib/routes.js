// The Bridge's routes (the OpenAPI document of @cloudflare/sandbox's `bridge` module, 0.12.x)
// and ours, a row each: [method, pattern, handler, scope]. A pattern's `:name` parts are
// captured, a final `*` takes the rest of the path raw. scope `fleet` needs a fleet-wide
// token, `sandbox` one of that sandbox or the fleet. Every handler is file operations on the
// fleet's mount, through the Node client: a sandbox is FLEET/ID/fs.
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Fleet } from '../../../lib/fleet.js';
import { isName } from '../../../lib/names.js';
import { BridgeError, errnoOf, invalid, toBridgeError } from './errors.js';
import { commandOf, execStream, hydrate, inWorkspace, persist } from './exec.js';
import { OPENAPI } from './openapi.js';
import { forward, forwardTarget } from './peers.js';
import { getPath, inParentOf, json, putWorkspace, serveTree } from './tree.js';

const SESSION_ID = /^[a-zA-Z0-9._-]{1,128}$/;

/* The fleet's sandboxes as the routes reach them. */
export class Sandboxes {
	constructor(root) {
		this.fleet = new Fleet(root);
		this.root = root;
		this.boxes = new Map(); /* id -> the client's FleetSandbox */
	}

	checkId(id) {
		if (!isName(id)) throw invalid(`invalid sandbox id ${JSON.stringify(id)}: 1 to 64 of A-Z a-z 0-9 . _ -`);
		return id;
	}

	/* The sandbox `id`, made on its first use as the Bridge's ids are (a Durable Object is
	 * there for any name); up once this resolves. 503 capacity_exceeded past the bound. The
	 * client's object is kept (its sessions' state with it) while the sandbox is there: a
	 * stat of FLEET/ID says so, cheaper than the mkdir that makes one. */
	async get(id) {
		this.checkId(id);
		const known = this.boxes.get(id);
		if (known && (await stat(join(this.root, id)).then(() => true, () => false))) return known;
		try {
			const box = await this.fleet.getSandbox(id);
			this.boxes.set(id, box);
			return box;
		} catch (err) {
			this.boxes.delete(id);
			if (err.code === 'SANDBOX_LIMIT') throw new BridgeError(503, 'capacity_exceeded', err.message);
			throw toBridgeError(err, `sandbox ${id}`, [502, 'exec_transport_error']);
		}
	}

	forget(id) {
		this.boxes.delete(id);
	}

	/* fn(box) on the sandbox `id`: a known one is used as it is, saving get()'s stat, and
	 * made again if fn finds it gone (its session's files are not there: fn did nothing). */
	async use(id, fn) {
		const known = this.boxes.get(this.checkId(id));
		if (known) {
			try {
				return await fn(known);
			} catch (err) {
				if (errnoOf(err) !== 'ENOENT' || (await stat(join(this.root, id)).then(() => true, () => false))) throw err;
				this.forget(id);
			}
		}
		return fn(await this.get(id));
	}

	mount(id) {
		return join(this.root, this.checkId(id), 'fs');
	}
}

/* The session a call names by its Session-Id header (the sandbox's default one without). */
async function sessionOf(sandbox, req) {
	const sid = req.headers['session-id'];
	if (sid === undefined) return sandbox;
	if (!SESSION_ID.test(sid)) throw invalid('Invalid session ID format');
	if (sid.length > 64) throw invalid('a session id of sbxfs has at most 64 characters');
	try {
		return await sandbox.getSession(sid);
	} catch (err) {
		if (err.code === 'SESSION_NOT_FOUND')
			throw new BridgeError(404, 'session_error', `no session ${sid}: POST /v1/sandbox/{id}/session makes one`);
		throw toBridgeError(err, `session ${sid}`, [502, 'session_error']);
	}
}

/* The tree parts of a Bridge file path (relative ones under /workspace): 403 outside it. */
function workspaceParts(raw) {
	let path;
	try {
		path = decodeURIComponent(raw);
	} catch {
		throw invalid('bad escape in path');
	}
	if (path === '') throw invalid('file path must not be empty');
	const abs = inWorkspace(`/${path}`);
	if (abs === null) throw new BridgeError(403, 'invalid_request', 'path must resolve to a location within /workspace');
	return abs.split('/').filter(Boolean);
}

function portOf(raw) {
	if (!/^[1-9][0-9]{0,4}$/.test(raw) || Number(raw) > 65535) throw invalid('Invalid port');
	return Number(raw);
}

async function readBody(req, max = 1 << 20) {
	const chunks = [];
	let size = 0;
	for await (const c of req) {
		size += c.length;
		if (size > max) throw new BridgeError(413, 'too_large', `a JSON body has at most ${max} bytes`);
		chunks.push(c);
	}
	return Buffer.concat(chunks).toString('utf8');
}

async function jsonBody(req, { optional = false } = {}) {
	const text = await readBody(req);
	if (text.trim() === '' && optional) return {};
	try {
		const v = JSON.parse(text);
		if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error();
		return v;
	} catch {
		throw invalid('Invalid JSON body');
	}
}

const notHere = (what, code) => async () => {
	throw new BridgeError(501, code, `${what} is not part of sbxfs: ${code === 'pool_error'
		? 'a fleet starts a sandbox on its first use, with no warm pool' : 'sbxfs mounts no buckets'}`);
};

/* A new sandbox: with ?id=, that one (409 if it is there); else one of the fleet's clone, or
 * across nodes a random id, made on the node that owns it (peers.js). */
async function createSandbox({ sb, url, req, res, cluster }) {
	let id = url.searchParams.get('id') ?? undefined;
	if (id === undefined && cluster.peers) {
		id = randomBytes(15).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, 'x');
		const target = forwardTarget(req, id, cluster);
		if (target) {
			req.url = `/v1/sandbox?id=${id}`;
			return void (await forward(req, res, target, cluster));
		}
	}
	if (id !== undefined) sb.checkId(id);
	try {
		const box = await sb.fleet.create(id === undefined ? {} : { id });
		return { id: box.sandboxId };
	} catch (err) {
		if (err.code === 'SANDBOX_LIMIT') throw new BridgeError(503, 'capacity_exceeded', err.message);
		if (err.code === 'SANDBOX_ALREADY_EXISTS') throw new BridgeError(409, 'exists', err.message);
		throw toBridgeError(err, 'new sandbox');
	}
}

async function destroySandbox({ sb, p, res }) {
	sb.forget(p.id);
	try {
		await sb.fleet.kill(sb.checkId(p.id));
	} catch (err) {
		if (err.code !== 'SANDBOX_NOT_FOUND') throw toBridgeError(err, `sandbox ${p.id}`);
	}
	res.writeHead(204).end();
}

async function running({ sb, p }) {
	try {
		return { running: (await sb.fleet.getInfo(sb.checkId(p.id))).state === 'running' };
	} catch (err) {
		if (err.code === 'SANDBOX_NOT_FOUND') return { running: false };
		throw toBridgeError(err, `sandbox ${p.id}`);
	}
}

async function exec({ sb, p, req, res }) {
	const command = commandOf(await jsonBody(req));
	await sb.use(p.id, async (box) => execStream(await sessionOf(box, req), command, res));
}

async function readFileRoute({ sb, p, req, res, url }) {
	const parts = workspaceParts(p['*']);
	const box = await sb.get(p.id);
	await sessionOf(box, req);
	try {
		await getPath(sb.mount(p.id), parts, url, req, res);
	} catch (err) {
		if (err.code === 'ENOENT') throw new BridgeError(404, 'workspace_read_not_found', `File not found: /${parts.join('/')}`);
		throw toBridgeError(err, `/${parts.join('/')}`, [502, 'exec_transport_error']);
	}
}

async function writeFileRoute({ sb, p, req, bodyMax }) {
	const parts = workspaceParts(p['*']);
	if (parts.length < 2) throw new BridgeError(409, 'is_directory', '/workspace is a directory');
	const box = await sb.get(p.id);
	await sessionOf(box, req);
	try {
		await inParentOf(sb.mount(p.id), parts, (dir, name) => putWorkspace(dir, name, req, bodyMax));
	} catch (err) {
		throw toBridgeError(err, `/${parts.join('/')}`, [502, 'workspace_archive_write_error']);
	}
	return { ok: true };
}

/* A tunnel is an exposed port (ports/PORT): its URL on this host. */
async function tunnel({ sb, p, req }) {
	const port = portOf(p.port);
	const body = await jsonBody(req, { optional: true });
	if (body.name !== undefined && (typeof body.name !== 'string' || !/^[a-z0-9-]{1,63}$/.test(body.name)))
		throw invalid('a tunnel name is a subdomain prefix: a-z 0-9 -');
	const box = await sb.get(p.id);
	let t;
	try {
		t = await box.exposePort(port, body.name === undefined ? {} : { name: body.name });
	} catch (err) {
		if (err.code !== 'PORT_ALREADY_EXPOSED') throw toBridgeError(err, `port ${port}`, [502, 'tunnel_error']);
		t = (await box.getExposedPorts()).find((e) => e.port === port);
		if (!t) throw new BridgeError(502, 'tunnel_error', `port ${port}: exposed, then gone`);
	}
	const url = new URL(t.url);
	const st = await stat(join(sb.mount(p.id), 'ports', String(port))).catch(() => null);
	const out = { id: `${p.id}-${port}`, port, url: t.url, hostname: url.host, createdAt: new Date(st?.birthtimeMs || st?.mtimeMs || Date.now()).toISOString() };
	if (t.name !== undefined) out.name = t.name;
	return out;
}

async function untunnel({ sb, p, res }) {
	const port = portOf(p.port);
	const box = await sb.get(p.id);
	try {
		await box.unexposePort(port);
	} catch (err) {
		if (err.code !== 'PORT_NOT_EXPOSED') throw toBridgeError(err, `port ${port}`, [502, 'tunnel_error']);
	}
	res.writeHead(204).end();
}

async function createSession({ sb, p, req }) {
	const body = await jsonBody(req, { optional: true });
	const id = body.id ?? `s-${randomBytes(6).toString('hex')}`;
	if (typeof id !== 'string' || !isName(id)) throw invalid('a session id is 1 to 64 of A-Z a-z 0-9 . _ -');
	if (body.cwd !== undefined && typeof body.cwd !== 'string') throw invalid('cwd is a string');
	if (body.env !== undefined && (typeof body.env !== 'object' || body.env === null || Array.isArray(body.env) ||
	    !Object.values(body.env).every((v) => typeof v === 'string')))
		throw invalid('env is an object of strings');
	const box = await sb.get(p.id);
	try {
		await box.createSession({ id, cwd: body.cwd, env: body.env });
	} catch (err) {
		throw toBridgeError(err, `session ${id}`, [502, 'session_error']);
	}
	return { id };
}

async function deleteSession({ sb, p }) {
	if (p.sid === 'default') throw new BridgeError(502, 'session_error', 'cannot delete the default session');
	const box = await sb.get(p.id);
	try {
		await box.deleteSession(p.sid);
	} catch (err) {
		throw toBridgeError(err, `session ${p.sid}`, [502, 'session_error']);
	}
	return { success: true, sessionId: p.sid };
}

async function persistRoute({ sb, p, req, res, url }) {
	const excludes = (url.searchParams.get('excludes') ?? '').split(',').filter(Boolean);
	const box = await sb.get(p.id);
	await persist(await sessionOf(box, req), excludes, res);
}

async function hydrateRoute({ sb, p, req }) {
	const box = await sb.get(p.id);
	return hydrate(await sessionOf(box, req), join(sb.mount(p.id), 'workspace'), req);
}

async function treeRoute({ sb, p, req, res, url, bodyMax }) {
	await sb.get(p.id);
	await serveTree(sb.mount(p.id), p['*'], req.method, url, req, res, { bodyMax });
}

export const ROUTES = [
	['POST', 'v1/sandbox', createSandbox, 'fleet'],
	['POST', 'v1/sandbox/:id/exec', exec, 'sandbox'],
	['POST', 'v1/sandbox/:id/tunnel/:port', tunnel, 'sandbox'],
	['DELETE', 'v1/sandbox/:id/tunnel/:port', untunnel, 'sandbox'],
	['GET', 'v1/sandbox/:id/file/*', readFileRoute, 'sandbox'],
	['PUT', 'v1/sandbox/:id/file/*', writeFileRoute, 'sandbox'],
	['GET', 'v1/sandbox/:id/running', running, 'sandbox'],
	['GET', 'v1/sandbox/:id/pty', async () => {
		throw invalid('WebSocket upgrade required');
	}, 'sandbox'],
	['POST', 'v1/sandbox/:id/persist', persistRoute, 'sandbox'],
	['POST', 'v1/sandbox/:id/hydrate', hydrateRoute, 'sandbox'],
	['POST', 'v1/sandbox/:id/mount', notHere('Mounting a bucket', 'mount_error'), 'sandbox'],
	['POST', 'v1/sandbox/:id/unmount', notHere('Unmounting a bucket', 'unmount_error'), 'sandbox'],
	['DELETE', 'v1/sandbox/:id', destroySandbox, 'sandbox'],
	['POST', 'v1/sandbox/:id/session', createSession, 'sandbox'],
	['DELETE', 'v1/sandbox/:id/session/:sid', deleteSession, 'sandbox'],
	['GET', 'health', async () => ({ ok: true }), 'none'],
	['GET', 'v1/openapi.json', async () => OPENAPI, 'any'],
	['GET', 'v1/pool/stats', notHere('A warm pool', 'pool_error'), 'fleet'],
	['POST', 'v1/pool/shutdown-prewarmed', notHere('A warm pool', 'pool_error'), 'fleet'],
	['POST', 'v1/pool/prime', notHere('A warm pool', 'pool_error'), 'fleet'],
	/* ours: the whole tree of a sandbox */
	['GET', 'v1/sandbox/:id/fs/*', treeRoute, 'sandbox'],
	['PUT', 'v1/sandbox/:id/fs/*', treeRoute, 'sandbox'],
	['POST', 'v1/sandbox/:id/fs/*', treeRoute, 'sandbox'],
	['DELETE', 'v1/sandbox/:id/fs/*', treeRoute, 'sandbox'],
];

/* [route, params] for a request path (no leading `/`), or [null, null]; a method the path has
 * no row for is [null, 'method']. */
export function match(method, path) {
	const parts = path.split('/');
	let other = false;
	for (const route of ROUTES) {
		const pat = route[1].split('/');
		const p = {};
		let ok = true;
		for (let i = 0; i < pat.length && ok; i++) {
			if (pat[i] === '*') {
				p['*'] = parts.slice(i).join('/');
				ok = i < parts.length;
				break;
			}
			if (i >= parts.length) ok = false;
			else if (pat[i].startsWith(':')) p[pat[i].slice(1)] = decodePart(parts[i]);
			else ok = pat[i] === parts[i];
			if (ok && i === pat.length - 1 && parts.length !== pat.length) ok = false;
		}
		if (!ok) continue;
		if (route[0] === method) return [route, p];
		other = true;
	}
	return [null, other ? 'method' : null];
}

function decodePart(raw) {
	let v;
	try {
		v = decodeURIComponent(raw);
	} catch {
		throw invalid('bad escape in path');
	}
	if (v.includes('/') || v.includes('\0')) throw invalid('bad path');
	return v;
}

