// Who may talk to the server: every request carries a secret (the bearer token of
// --token-file, or the cookie a one-time login URL set), on loopback too; the Host header
// (a loopback listener answers only to loopback names, against DNS rebinding) and the Origin
// of WebSocket upgrades and of requests that change anything.
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { openSync, fstatSync, readFileSync, closeSync } from 'node:fs';
import { isIP } from 'node:net';

const TOKEN_MIN = 16;
const LOGIN_TTL_MS = 10 * 60 * 1000;

export function isLoopback(host) {
	const h = host.replace(/^\[|\]$/g, '');
	return h === 'localhost' || h === '::1' || (isIP(h) === 4 && h.startsWith('127.'));
}

/* The token of a file only its owner can read: as ssh with a key, a secret that other
 * accounts can read is refused. */
export function readToken(file) {
	const fd = openSync(file, 'r');
	try {
		if (fstatSync(fd).mode & 0o077)
			throw new Error(`${file}: group or others may read it: chmod 600 it`);
		const token = readFileSync(fd, 'utf8').trim();
		if (token.length < TOKEN_MIN || /\s/.test(token))
			throw new Error(`${file}: the token must be at least ${TOKEN_MIN} characters, no blanks`);
		return token;
	} finally {
		closeSync(fd);
	}
}

/* Secrets are kept and looked up by their SHA-256: the time a lookup takes depends on the
 * digest of the guess, which tells nothing about a secret's bytes. */
function digest(s) {
	return createHash('sha256').update(s).digest();
}

/* Constant-time comparison of two strings of any length. */
function same(a, b) {
	return typeof a === 'string' && timingSafeEqual(digest(a), digest(b));
}

/* Browsers keep cookies per host name, not per port: the port in the name keeps two servers
 * on one host from replacing each other's login. */
export function cookieName(req) {
	return `sbxfs_web_${req.socket.localPort}`;
}

export class Auth {
	/* token: the --token-file token (null: none, login URLs only); loopback: whether the
	 * listener is. */
	constructor({ token, loopback }) {
		this.token = token;
		this.loopback = loopback;
		this.cookies = new Set(); /* digests (hex) of the cookies logins set */
		this.logins = new Map(); /* digest (hex) of a one-time login secret -> expiry */
	}

	/* A URL path that sets the cookie once, within LOGIN_TTL_MS. */
	loginPath() {
		const secret = randomBytes(24).toString('base64url');
		this.logins.set(digest(secret).toString('hex'), Date.now() + LOGIN_TTL_MS);
		return `/login/${secret}`;
	}

	/* The cookie value of a used login path, or null (unknown, used or expired). */
	useLogin(secret) {
		const key = digest(secret).toString('hex');
		const until = this.logins.get(key);
		this.logins.delete(key);
		for (const [s, t] of this.logins) if (t < Date.now()) this.logins.delete(s);
		if (!until || until < Date.now()) return null;
		const cookie = randomBytes(32).toString('base64url');
		this.cookies.add(digest(cookie).toString('hex'));
		return cookie;
	}

	/* Whether the request carries the token or a cookie of a login. */
	authorized(req) {
		const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
		if (m && this.token && same(m[1], this.token)) return true;
		const c = cookieOf(req);
		return c !== null && this.cookies.has(digest(c).toString('hex'));
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
	const name = cookieName(req);
	for (const part of (req.headers.cookie ?? '').split(';')) {
		const [k, v] = part.trim().split('=');
		if (k === name && v) return v;
	}
	return null;
}
