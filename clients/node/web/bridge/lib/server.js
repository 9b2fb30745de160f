// The Bridge's HTTP(S) server: the gates every request passes (Host on a loopback listener,
// the route, the token and its scope, the token's rate and concurrency), one log line per
// request (who, what, status, bytes; never a secret or a query), the body and time bounds,
// and the PTY upgrade. The routes are routes.js's table.
import { createServer as httpServer } from 'node:http';
import { createServer as httpsServer } from 'node:https';
import { isLoopback } from '../../lib/auth.js';
import { refuseUpgrade, upgrader } from '../../lib/ws.js';
import { BridgeError, invalid, sendError, toBridgeError } from './errors.js';
import { forward, forwardTarget, forwardUpgrade } from './peers.js';
import { bridgePty, ptyTerminal } from './pty.js';
import { match, Sandboxes } from './routes.js';
import { json } from './tree.js';
import { allows } from './tokens.js';

/* A request's headers must come within this; a body or an answer that moves no byte for
 * IDLE_MS ends the connection (a stream that waits on a command sends SSE comments, and
 * a tree GET lifts it once its request is in). */
const HEADERS_MS = 10000;
const IDLE_MS = 30000;
const DRAIN_MAX = 64 << 20;

class Limiter {
	constructor({ rate, concurrent }) {
		this.rate = rate;
		this.concurrent = concurrent;
		this.by = new Map(); /* token name -> {tokens, at, inFlight} */
	}

	/* A release function, or a BridgeError 429 with the reason. */
	take(name) {
		const now = Date.now();
		let s = this.by.get(name);
		if (!s) this.by.set(name, (s = { tokens: this.rate, at: now, inFlight: 0 }));
		s.tokens = Math.min(this.rate, s.tokens + ((now - s.at) / 1000) * this.rate);
		s.at = now;
		if (s.tokens < 1) throw new BridgeError(429, 'rate_limited', `more than ${this.rate} requests a second for this token`);
		if (s.inFlight >= this.concurrent) throw new BridgeError(429, 'rate_limited', `more than ${this.concurrent} requests at once for this token`);
		s.tokens -= 1;
		s.inFlight++;
		let done = false;
		return () => {
			if (!done) s.inFlight--;
			done = true;
		};
	}
}

/* A line of the log: every field from the request quoted as JSON, so no byte of it can make a
 * line of its own or pose as another field. */
function logLine(log, { who, method, path, status, bytes, ms }) {
	log(`${new Date().toISOString()} ${JSON.stringify(who)} ${JSON.stringify(method)} ${JSON.stringify(path)} ${status} ${bytes} ${ms}ms\n`);
}

/* The route and caller of a request, or a BridgeError. */
function gate(ctx, req, url) {
	if (ctx.loopback) {
		const m = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(req.headers.host ?? '');
		if (!m || !isLoopback(m[1])) throw new BridgeError(421, 'invalid_request', 'this server answers only to a loopback host name');
	}
	const path = url.pathname.replace(/^\//, '');
	const [route, p] = match(req.method, path);
	if (!route) {
		if (p === 'method') throw new BridgeError(405, 'not_supported', `${req.method} is not a method of ${url.pathname}`);
		throw new BridgeError(404, 'not_found', `no route ${url.pathname}`);
	}
	const scope = route[3];
	if (scope === 'none') return { route, p, caller: null };
	const query = scope === 'any' || route[1].endsWith('/pty') ? url.searchParams.get('token') : null;
	const caller = ctx.tokens.caller(req, query);
	if (!caller || (scope === 'fleet' && !allows(caller, null)) || (scope === 'sandbox' && !allows(caller, p.id)))
		throw new BridgeError(401, 'unauthorized', 'Unauthorized');
	return { route, p, caller };
}

async function serve(ctx, req, res) {
	const url = new URL(req.url, 'http://x');
	const { route, p, caller } = gate(ctx, req, url);
	res.caller = caller?.name ?? '-';
	const release = caller ? ctx.limiter.take(caller.name) : () => {};
	res.on('close', release);
	try {
		const target = p.id === undefined ? null : forwardTarget(req, p.id, ctx.cluster);
		if (target) return await forward(req, res, target, ctx.cluster);
		const out = await route[2]({ sb: ctx.sandboxes, p, req, res, url, bodyMax: ctx.bodyMax, cluster: ctx.cluster });
		if (out !== undefined && !res.headersSent) json(res, 200, out);
	} finally {
		release();
	}
}

/* {tokens, mount, loopback, tls: {cert, key} | null, bodyMax, rate, concurrent, log, cluster:
 * {peers: [URL] | null, self: index, ca}}. */
export function createBridge(opts) {
	const ctx = {
		...opts,
		sandboxes: new Sandboxes(opts.mount),
		limiter: new Limiter({ rate: opts.rate, concurrent: opts.concurrent }),
	};
	const onRequest = (req, res) => {
		const t0 = Date.now();
		/* What went out on the socket for this request, headers included. */
		const sock = req.socket, sent0 = sock.bytesWritten;
		res.on('close', () => logLine(ctx.log, { who: res.caller ?? '-', method: req.method, path: req.url.split('?')[0], status: res.statusCode, bytes: sock.bytesWritten - sent0, ms: Date.now() - t0 }));
		req.socket.setTimeout(IDLE_MS);
		serve(ctx, req, res).catch((err) => refuse(req, res, toBridgeError(err, 'request')));
	};
	/* Node looks for requests past headersTimeout every connectionsCheckingInterval. */
	const limits = { connectionsCheckingInterval: 1000 };
	const server = opts.tls ? httpsServer({ ...limits, cert: opts.tls.cert, key: opts.tls.key }, onRequest) : httpServer(limits, onRequest);
	server.headersTimeout = HEADERS_MS;
	server.requestTimeout = 0; /* uploads and streams of any length; IDLE_MS bounds a stalled one */
	server.on('timeout', (socket) => socket.destroy());
	const accept = upgrader();
	server.on('upgrade', (req, socket, head) => upgrade(ctx, accept, req, socket, head));
	return server;
}

/* The error answered; a body not read to its end (one past a bound) is drained, up to
 * DRAIN_MAX, so the client reads the answer instead of a reset; past that the connection goes. */
function refuse(req, res, err) {
	if (!req.complete) {
		res.setHeader('Connection', 'close');
		let drained = 0;
		req.on('data', (c) => {
			drained += c.length;
			if (drained > DRAIN_MAX) req.socket?.destroy();
		});
		req.resume();
	}
	sendError(res, err);
}

async function upgrade(ctx, accept, req, socket, head) {
	socket.on('error', () => socket.destroy());
	const url = new URL(req.url, 'http://x');
	let g, term;
	try {
		g = gate(ctx, req, url);
		if (!g.route[1].endsWith('/pty')) throw new BridgeError(400, 'invalid_request', 'only /pty upgrades');
		const target = forwardTarget(req, g.p.id, ctx.cluster);
		if (target) return forwardUpgrade(req, socket, head, target, ctx.cluster);
		const size = (k) => {
			const v = url.searchParams.get(k);
			if (v === null) return 0;
			if (!/^[1-9][0-9]{0,3}$/.test(v) || Number(v) > 1000) throw invalid('cols and rows must be valid numbers');
			return Number(v);
		};
		const cols = size('cols'), rows = size('rows');
		const box = await ctx.sandboxes.get(g.p.id);
		const sid = req.headers['session-id'] ?? url.searchParams.get('session') ?? undefined;
		const session = sid === undefined ? box : await box.getSession(sid);
		term = await ptyTerminal(session, { cols, rows, shell: url.searchParams.get('shell') });
	} catch (err) {
		const e = toBridgeError(err, 'pty', [502, 'exec_transport_error']);
		logLine(ctx.log, { who: g?.caller?.name ?? '-', method: 'GET', path: req.url.split('?')[0], status: e.status, bytes: 0, ms: 0 });
		return refuseUpgrade(socket, e.status, e.message.replace(/[^\x20-\x7e]/g, '?'));
	}
	logLine(ctx.log, { who: g.caller.name, method: 'GET', path: req.url.split('?')[0], status: 101, bytes: 0, ms: 0 });
	accept(req, socket, head, (ws) => bridgePty(ws, term));
}

