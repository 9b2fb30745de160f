// Who may talk to the server: the token (bearer header, or a cookie a one-time login URL set),
// the Host header (a loopback listener answers only to loopback names, against DNS
// rebinding) and the Origin of WebSocket upgrades and of requests that change anything.
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export const COOKIE = 'sbxfs_web';
const TOKEN_MIN = 16;
const LOGIN_TTL_MS = 10 * 60 * 1000;

export function isLoopback(host) {
	const h = host.replace(/^\[|\]$/g, '');
	return h === 'localhost' || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'));
}

export function readToken(file) {
	const token = readFileSync(file, 'utf8').trim();
	if (token.length < TOKEN_MIN || /\s/.test(token))
		throw new Error(`${file}: the token must be at least ${TOKEN_MIN} characters, no blanks`);
	return token;
}

function digest(s) {
	return createHash('sha256').update(s).digest();
}

/* Constant-time comparison of two strings of any length. */
function same(a, b) {
	return typeof a === 'string' && timingSafeEqual(digest(a), digest(b));
}

export class Auth {
	/* token: null for none (loopback only); loopback: whether the listener is. */
	constructor({ token, loopback }) {
		this.token = token;
		this.loopback = loopback;
		this.cookies = new Set();
		this.logins = new Map(); /* one-time login secret -> expiry */
	}

	/* A URL path that sets the cookie once, within LOGIN_TTL_MS. */
	loginPath() {
		const secret = randomBytes(24).toString('base64url');
		this.logins.set(secret, Date.now() + LOGIN_TTL_MS);
		return `/login/${secret}`;
	}

	/* The cookie value of a used login path, or null (unknown, used or expired). */
	useLogin(secret) {
		const until = this.logins.get(secret);
		this.logins.delete(secret);
		for (const [s, t] of this.logins) if (t < Date.now()) this.logins.delete(s);
		if (!until || until < Date.now()) return null;
		const cookie = randomBytes(32).toString('base64url');
		this.cookies.add(cookie);
		return cookie;
	}

	/* Whether the request carries the token or a cookie of a login. */
	authorized(req) {
		if (!this.token) return true;
		const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
		if (m && same(m[1], this.token)) return true;
		const c = cookieOf(req);
		return c !== null && this.cookies.has(c);
	}

	/* Loopback listeners answer only to a loopback Host (a rebound DNS name is refused). */
	hostAllowed(req) {
		if (!this.loopback) return true;
		const host = req.headers.host ?? '';
		const m = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(host);
		return m !== null && isLoopback(m[1]);
	}

	/* A browser's request from another page is refused: its Origin must be this server. */
	originAllowed(req, { required }) {
		const origin = req.headers.origin;
		if (origin === undefined) return !required;
		return origin === `http://${req.headers.host}` || origin === `https://${req.headers.host}`;
	}
}

function cookieOf(req) {
	for (const part of (req.headers.cookie ?? '').split(';')) {
		const [k, v] = part.trim().split('=');
		if (k === COOKIE && v) return v;
	}
	return null;
}
