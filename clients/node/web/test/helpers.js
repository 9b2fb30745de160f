// Test helpers: a mount (SBXFS_WEB_MOUNT, as tests/integration/test_web.py passes one, or a
// fresh sbxfs started as tests/integration/sbxutil.py does), sbxfs-web on it and its login,
// a raw WebSocket client that can send any frame, bad ones included, and requests sent by
// another account.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, createServer } from 'node:net';
import { randomBytes } from 'node:crypto';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, '../../../..');
export const BIN = join(here, '../bin/sbxfs-web.js');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* A TCP port nothing listens on now: for a server in the sandbox that is also free on the host
 * (under --isolation none the sandbox has the host's network). */
export async function freePort() {
	const srv = createServer();
	await new Promise((r) => srv.listen(0, '127.0.0.1', r));
	const { port } = srv.address();
	await new Promise((r) => srv.close(r));
	return port;
}

export async function waitFor(fn, what, timeout = 10000) {
	const end = Date.now() + timeout;
	for (;;) {
		const v = await fn();
		if (v) return v;
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await sleep(25);
	}
}

function mounted(dir) {
	return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === dir);
}

/* The mount the tests use: { mnt, stop() }. */
export async function startMount() {
	if (process.env.SBXFS_WEB_MOUNT) return { mnt: process.env.SBXFS_WEB_MOUNT, stop: async () => {} };
	const bin = process.env.SBXFS_BIN || join(REPO, 'build/sbxfs');
	const tmp = mkdtempSync(join(tmpdir(), 'sbxfs-web-'));
	const [mnt, ws, state] = ['mnt', 'ws', 'state'].map((d) => join(tmp, d));
	for (const d of [mnt, ws, state]) mkdirSync(d);
	const extra = (process.env.SBXFS_EXTRA_ARGS ?? '').split(/\s+/).filter(Boolean);
	const proc = spawn(bin, ['-f', '--workspace', ws, '--state-dir', state, ...extra, mnt], { stdio: 'ignore', detached: true });
	await waitFor(() => proc.exitCode === null ? mounted(mnt) && existsSync(join(mnt, 'sessions')) : Promise.reject(new Error(`sbxfs exited ${proc.exitCode}`)), 'the mount');
	return {
		mnt,
		ws,
		async stop() {
			spawnSync(bin, ['-u', mnt]);
			await waitFor(() => proc.exitCode !== null || proc.signalCode !== null, 'sbxfs to exit').catch(() => proc.kill('SIGKILL'));
			rmSync(tmp, { recursive: true, force: true });
		},
	};
}

/* sbxfs-web on mnt: { url (as printed), base, proc, stop() }; args added to the command. */
export async function startWeb(mnt, args = []) {
	const proc = spawn(process.execPath, [BIN, mnt, '--listen', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '', err = '';
	proc.stdout.on('data', (d) => (out += d));
	proc.stderr.on('data', (d) => (err += d));
	const url = await waitFor(() => {
		if (proc.exitCode !== null) throw new Error(`sbxfs-web exited ${proc.exitCode}: ${err}`);
		return /listening on (\S+)/.exec(out)?.[1];
	}, 'sbxfs-web to listen');
	return {
		url,
		base: new URL(url).origin,
		proc,
		stderr: () => err,
		async stop() {
			proc.kill('SIGTERM');
			await waitFor(() => proc.exitCode !== null || proc.signalCode !== null, 'sbxfs-web to exit');
		},
	};
}

/* Logs in as a browser does, with the one-time login URL: the cookie as a Cookie header. */
export async function login(url) {
	const res = await fetch(url, { redirect: 'manual' });
	if (res.status !== 303) throw new Error(`login: ${res.status}`);
	return res.headers.get('set-cookie').split(';')[0];
}

/* Runs sbxfs-web to its exit: { status, stdout, stderr }. */
export function runWeb(args) {
	const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 10000 });
	return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/* A raw WebSocket client over TCP. */
export class RawWs {
	static async open(base, path, headers = {}) {
		const u = new URL(base);
		const sock = connect(Number(u.port), u.hostname);
		await new Promise((r, j) => sock.once('connect', r).once('error', j));
		const key = randomBytes(16).toString('base64');
		const h = { Host: u.host, Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13', Origin: u.origin, ...headers };
		sock.write(`GET ${path} HTTP/1.1\r\n` + Object.entries(h).filter(([, v]) => v !== null).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n');
		const ws = new RawWs(sock);
		const head = await ws.until(() => {
			const i = ws.buf.indexOf('\r\n\r\n');
			if (i < 0) return null;
			const text = ws.buf.subarray(0, i).toString();
			ws.buf = ws.buf.subarray(i + 4);
			return text;
		});
		ws.status = Number(head.split(' ')[1]);
		return ws;
	}

	constructor(sock) {
		this.sock = sock;
		this.buf = Buffer.alloc(0);
		this.ended = false;
		this.wake = () => {};
		sock.on('data', (d) => {
			this.buf = Buffer.concat([this.buf, d]);
			this.wake();
		});
		sock.on('close', () => {
			this.ended = true;
			this.wake();
		});
		sock.on('error', () => {});
	}

	async until(take, timeout = 10000) {
		const end = Date.now() + timeout;
		for (;;) {
			const v = take();
			if (v !== null) return v;
			if (this.ended) throw new Error('connection closed');
			if (Date.now() > end) throw new Error('timed out');
			await new Promise((r) => {
				this.wake = r;
				setTimeout(r, 50);
			});
		}
	}

	/* Any frame: fin, rsv bits, opcode, masked or not, a length field that may lie. */
	sendFrame({ op, payload = Buffer.alloc(0), fin = true, rsv = 0, mask = true, len = null }) {
		const p = Buffer.from(payload);
		const n = len ?? p.length;
		const parts = [Buffer.from([(fin ? 0x80 : 0) | (rsv << 4) | op])];
		const m = mask ? 0x80 : 0;
		if (n < 126) parts.push(Buffer.from([m | n]));
		else if (n < 65536) {
			const b = Buffer.alloc(3);
			b[0] = m | 126;
			b.writeUInt16BE(n, 1);
			parts.push(b);
		} else {
			const b = Buffer.alloc(9);
			b[0] = m | 127;
			b.writeBigUInt64BE(BigInt(n), 1);
			parts.push(b);
		}
		if (mask) {
			const k = randomBytes(4);
			for (let i = 0; i < p.length; i++) p[i] ^= k[i & 3];
			parts.push(k);
		}
		parts.push(p);
		this.sock.write(Buffer.concat(parts));
	}

	text(s) {
		this.sendFrame({ op: 1, payload: Buffer.from(s) });
	}

	binary(b) {
		this.sendFrame({ op: 2, payload: Buffer.from(b) });
	}

	/* The next frame from the server: { op, fin, payload }. */
	frame(timeout) {
		return this.until(() => {
			const b = this.buf;
			if (b.length < 2) return null;
			let len = b[1] & 0x7f, at = 2;
			if (len === 126) {
				if (b.length < 4) return null;
				len = b.readUInt16BE(2);
				at = 4;
			} else if (len === 127) {
				if (b.length < 10) return null;
				len = Number(b.readBigUInt64BE(2));
				at = 10;
			}
			if (b.length < at + len) return null;
			this.buf = b.subarray(at + len);
			return { op: b[0] & 0x0f, fin: (b[0] & 0x80) !== 0, payload: b.subarray(at, at + len) };
		}, timeout);
	}

	/* The close frame's code the server sends (skipping data frames before it). */
	async closeCode() {
		for (;;) {
			const f = await this.frame();
			if (f.op === 8) return f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005;
		}
	}

	/* Reads data frames until the text received matches re; returns all of it. */
	async readUntil(re, timeout = 15000) {
		let text = '';
		const end = Date.now() + timeout;
		while (!re.test(text)) {
			const f = await this.frame(Math.max(1, end - Date.now()));
			if (f.op === 2 || f.op === 1) text += f.payload.toString('utf8');
			if (f.op === 8) throw new Error(`closed before ${re}: ${text}`);
		}
		return text;
	}

	destroy() {
		this.sock.destroy();
	}
}

/* The client that another account runs: its source goes to `node -e` (CommonJS there, hence
 * require), so that account needs no access to this tree. Sends each request in turn to the
 * server at base: { method, path, headers, body } (body as JSON), or method 'WS' for a
 * WebSocket handshake (this server's Origin unless headers say otherwise). Returns the uid
 * it ran as, and each request's { status, cookie (Set-Cookie), body } (an upgrade's body:
 * its status line). */
async function peer({ base, requests }) {
	const { request } = require('node:http');
	const { connect } = require('node:net');
	const { randomBytes } = require('node:crypto');
	const u = new URL(base);
	const http = ({ method, path, headers = {}, body }) => new Promise((resolve, reject) => {
		const h = body === undefined ? headers : { 'Content-Type': 'application/json', ...headers };
		const r = request({ host: u.hostname, port: u.port, method, path, headers: h, agent: false }, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({ status: res.statusCode, cookie: res.headers['set-cookie']?.[0] ?? null, body: Buffer.concat(chunks).toString() }));
		});
		r.on('error', reject);
		r.end(body === undefined ? undefined : JSON.stringify(body));
	});
	const upgrade = ({ path, headers = {} }) => new Promise((resolve, reject) => {
		const h = { Host: u.host, Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
			'Sec-WebSocket-Version': '13', Origin: u.origin, ...headers };
		const sock = connect(Number(u.port), u.hostname);
		let head = '';
		sock.on('error', reject);
		sock.on('data', (d) => {
			head += d.toString('latin1');
			if (!head.includes('\r\n')) return;
			sock.destroy();
			const line = head.split('\r\n')[0];
			resolve({ status: Number(line.split(' ')[1]), cookie: null, body: line });
		});
		sock.write(`GET ${path} HTTP/1.1\r\n` + Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n');
	});
	const out = [];
	for (const r of requests) out.push(r.method === 'WS' ? await upgrade(r) : await http(r));
	return { uid: process.getuid(), out };
}

export const NOBODY = 65534;

/* peer's requests sent by uid and gid `uid` with no supplementary groups (setpriv, as root). */
export async function requestsAs(uid, base, requests) {
	const src = `(${peer})(${JSON.stringify({ base, requests })}).then((r) => process.stdout.write(JSON.stringify(r)))`;
	const proc = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', process.execPath, '-e', src],
		{ cwd: '/', env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '', err = '';
	proc.stdout.on('data', (d) => (out += d));
	proc.stderr.on('data', (d) => (err += d));
	const code = await new Promise((r) => proc.on('close', r));
	if (code !== 0) throw new Error(`the client as uid ${uid} exited ${code}: ${err}`);
	const r = JSON.parse(out);
	if (r.uid !== uid) throw new Error(`the client ran as uid ${r.uid}, not ${uid}`);
	return r.out;
}
