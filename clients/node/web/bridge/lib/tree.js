// The whole tree of a sandbox over HTTP, our addition to the Bridge: /v1/sandbox/ID/fs/PATH
// is the file PATH of the sandbox's mount. GET reads a file to its end (a command's stdout
// streams until the command ends, as `cat` would; ?offset=N starts there, so a reader whose
// connection dropped reads on from what it had) or lists a directory as JSON; PUT is one
// open, the body written, one close (the mount applies a control file whole at its close, or
// nothing; a workspace file is replaced whole by a rename); POST makes a directory, DELETE removes a directory or a file. The walk to PATH
// opens each directory by descriptor and follows no symbolic link (beneath.js), so no name a
// sandboxed command plants leads the host outside the tree.
import { constants as C } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, open, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { at, openChild, openDir } from '../../../lib/beneath.js';
import { BridgeError, invalid, toBridgeError } from './errors.js';
import { pumpHandle, receive, writer } from './stream.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const REPLY_BODY_MAX = 1 << 20;

/* The names of PATH (its raw parts, percent-escaped): none empty, `.`, `..`, or holding a NUL
 * or a `/`. A trailing `/` is allowed (a directory's name as `ls` shows it). */
export function treeParts(raw, { decoded = false } = {}) {
	const parts = raw.replace(/\/$/, '').split('/');
	if (parts.length === 1 && parts[0] === '') return [];
	return parts.map((p) => {
		let name = p;
		try {
			if (!decoded) name = decodeURIComponent(p);
		} catch {
			throw invalid('bad escape in path');
		}
		if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
			throw invalid('a path is names without ".", ".." or empty ones');
		return name;
	});
}

/* fn(dir, name) with the parent of parts held open ('' for the root itself). */
export async function inParentOf(root, parts, fn) {
	const dir = await openDir(root, parts.slice(0, -1));
	try {
		return await fn(dir, parts.at(-1) ?? '');
	} finally {
		await dir.close();
	}
}

function kindOf(d) {
	if (d.isDirectory()) return 'directory';
	if (d.isFile()) return 'file';
	if (d.isSymbolicLink()) return 'symlink';
	return 'other';
}

/* A directory as JSON: [{name, type}] sorted; a name that is not UTF-8 comes as nameBase64. */
async function listing(dirHandle) {
	const entries = await readdir(at(dirHandle), { withFileTypes: true, encoding: 'buffer' });
	return entries
		.map((d) => {
			const raw = d.name;
			let name = null;
			try {
				name = utf8.decode(raw);
			} catch {}
			return name === null ? { nameBase64: raw.toString('base64'), type: kindOf(d) } : { name, type: kindOf(d) };
		})
		.sort((a, b) => ((a.name ?? a.nameBase64) < (b.name ?? b.nameBase64) ? -1 : 1));
}

function offsetOf(url) {
	const v = url.searchParams.get('offset');
	if (v === null) return 0;
	if (!/^(0|[1-9][0-9]{0,15})$/.test(v)) throw invalid('offset is a byte count');
	return Number(v);
}

/* ?stat: what lstat says of PATH, as JSON. */
function statOf(st) {
	const type = st.isDirectory() ? 'directory' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : 'other';
	return { type, size: st.size, mode: st.mode & 0o7777, mtimeMs: st.mtimeMs };
}

/* ?nowait: what the file holds now from offset on, without waiting for more (O_NONBLOCK reads
 * to EAGAIN or EOF), so a log-like file's current content or a refusal comes back at once; at
 * most NOWAIT_MAX bytes (a client asks again from where it got to). */
const NOWAIT_MAX = 16 << 20;

async function readNow(fh, offset) {
	const chunks = [];
	for (let pos = offset; pos - offset < NOWAIT_MAX; ) {
		const buf = Buffer.allocUnsafe(Math.min(1 << 17, NOWAIT_MAX - (pos - offset)));
		let n;
		try {
			({ bytesRead: n } = await fh.read(buf, 0, buf.length, pos));
		} catch (e) {
			if (e.code === 'EAGAIN') break;
			throw e;
		}
		if (n === 0) break;
		chunks.push(buf.subarray(0, n));
		pos += n;
	}
	return Buffer.concat(chunks);
}

export async function getPath(root, parts, url, req, res) {
	const offset = offsetOf(url);
	await inParentOf(root, parts, async (dir, name) => {
		/* the root itself: its descriptor's magic link, which stat follows to the directory */
		const st = name ? await lstat(at(dir, name)) : await stat(at(dir));
		if (url.searchParams.has('stat')) return json(res, 200, statOf(st));
		if (st.isDirectory()) {
			const child = name ? await openChild(dir, name) : dir;
			try {
				const body = JSON.stringify(await listing(child));
				res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
				return void res.end(body);
			} finally {
				if (child !== dir) await child.close();
			}
		}
		if (st.isSymbolicLink()) throw new BridgeError(403, 'forbidden', `${name}: a symbolic link, which the tree does not follow`, 'ELOOP');
		if (!st.isFile()) throw Object.assign(invalid(`${name}: not a regular file or a directory`), { errno: 'EINVAL' });
		const fh = await open(at(dir, name), C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW | C.O_NOCTTY);
		/* What was opened is looked at again: a command may have put a FIFO there meanwhile,
		 * which would answer EAGAIN for as long as the client waits. */
		if (!(await fh.stat().catch(() => null))?.isFile()) {
			await fh.close();
			throw Object.assign(invalid(`${name}: not a regular file or a directory`), { errno: 'EINVAL' });
		}
		if (url.searchParams.has('nowait')) {
			try {
				const body = await readNow(fh, offset);
				res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
				return void res.end(body);
			} finally {
				await fh.close();
			}
		}
		const ac = new AbortController();
		res.on('close', () => ac.abort());
		/* A stream may wait on a command for long: the request is in, the idle bound is off. */
		req.socket.setTimeout(0);
		try {
			let started = false;
			const write = writer(res, ac.signal);
			/* Headers go with the first bytes: an error before any (a read the mount refused)
			 * is still a status of its own. */
			const head = () => {
				if (started) return;
				started = true;
				res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Cache-Control': 'no-store', 'X-Offset': String(offset) });
			};
			await pumpHandle(fh, (bytes) => {
				head();
				return write(bytes);
			}, { offset, signal: ac.signal });
			head();
			res.end();
		} finally {
			await fh.close();
		}
	});
}

/* A workspace file: the body into a new file beside it, renamed over it once whole, so a
 * failed upload leaves the old content (as the client's writeFile). */
export async function putWorkspace(dir, name, req, bodyMax) {
	const st = await lstat(at(dir, name)).catch((e) => (e.code === 'ENOENT' ? null : Promise.reject(e)));
	if (st?.isSymbolicLink()) throw new BridgeError(403, 'forbidden', `${name}: a symbolic link, which the tree does not replace`, 'ELOOP');
	if (st?.isDirectory()) throw new BridgeError(409, 'is_directory', `${name}: a directory`, 'EISDIR');
	const tmp = at(dir, `.${name}.sbxfs-bridge-${randomBytes(6).toString('hex')}`.slice(0, 255));
	const fh = await open(tmp, 'wx', st?.isFile() ? st.mode & 0o777 : 0o644);
	try {
		try {
			await receive(req, fh, bodyMax);
		} finally {
			await fh.close();
		}
		await rename(tmp, at(dir, name));
	} catch (err) {
		await unlink(tmp).catch(() => {});
		throw err;
	}
}

/* A file of the mount's own trees (a control file, an import): the body spooled here first,
 * then one open, every byte, one close, whose errno is the answer's. An upload that fails
 * never opens the file, so nothing of it is applied. */
async function putControl(dir, name, req, bodyMax) {
	const spoolDir = await mkdtemp(join(tmpdir(), 'sbxfs-bridge-'));
	try {
		const spool = await open(join(spoolDir, 'body'), 'wx+', 0o600);
		try {
			await receive(req, spool, bodyMax);
			const fh = await open(at(dir, name), C.O_WRONLY | C.O_CREAT | C.O_TRUNC | C.O_NOFOLLOW | C.O_NOCTTY, 0o644);
			let closed = false;
			try {
				const buf = Buffer.allocUnsafe(1 << 17);
				for (let pos = 0; ; ) {
					const { bytesRead } = await spool.read(buf, 0, buf.length, pos);
					if (bytesRead === 0) break;
					for (let off = 0; off < bytesRead; )
						off += (await fh.write(buf, off, bytesRead - off)).bytesWritten;
					pos += bytesRead;
				}
				closed = true;
				await fh.close();
			} finally {
				if (!closed) await fh.close().catch(() => {});
			}
		} finally {
			await spool.close();
		}
	} finally {
		await rm(spoolDir, { recursive: true, force: true });
	}
}

/* ?reply: a run handle. The body written on a read-write open, then the line the file answers
 * with read on the same open (a command's run number), then one close; the line is the answer. */
async function putReply(dir, name, req) {
	const body = await new Promise((resolve, reject) => {
		const chunks = [];
		let size = 0;
		req.on('data', (c) => {
			size += c.length;
			if (size > REPLY_BODY_MAX) req.destroy(new BridgeError(413, 'too_large', `a run handle takes at most ${REPLY_BODY_MAX} bytes`));
			else chunks.push(c);
		});
		req.on('end', () => resolve(Buffer.concat(chunks)));
		req.on('error', reject);
	});
	const fh = await open(at(dir, name), C.O_RDWR | C.O_NOFOLLOW | C.O_NOCTTY);
	let closed = false;
	try {
		for (let off = 0; off < body.length; ) off += (await fh.write(body, off, body.length - off)).bytesWritten;
		const buf = Buffer.alloc(256);
		let got = 0;
		while (got < buf.length && (got === 0 || buf[got - 1] !== 0x0a)) {
			const { bytesRead } = await fh.read(buf, got, buf.length - got, null);
			if (bytesRead === 0) break;
			got += bytesRead;
		}
		closed = true;
		await fh.close();
		return buf.subarray(0, got);
	} finally {
		if (!closed) await fh.close().catch(() => {});
	}
}

async function put(root, parts, req, bodyMax) {
	if (parts.length === 0) throw new BridgeError(409, 'is_directory', 'the root is a directory', 'EISDIR');
	const inWs = parts[0] === 'workspace' && parts.length > 1;
	await inParentOf(root, parts, (dir, name) => (inWs ? putWorkspace : putControl)(dir, name, req, bodyMax));
	return { ok: true };
}

/* ?rename=NEW: rename(2) of PATH to NEW (names of the same tree), each parent walked by
 * descriptor. */
async function renamePath(root, from, to) {
	if (to.length === 0) throw new BridgeError(409, 'exists', 'the root is there');
	await inParentOf(root, from, (fdir, fname) =>
		inParentOf(root, to, (tdir, tname) => rename(at(fdir, fname), at(tdir, tname))));
}

async function remove(root, parts) {
	if (parts.length === 0) throw new BridgeError(403, 'forbidden', 'the root is not removed');
	await inParentOf(root, parts, async (dir, name) => {
		const st = await lstat(at(dir, name));
		await (st.isDirectory() ? rmdir(at(dir, name)) : unlink(at(dir, name)));
	});
}

/* Serves method on PATH (its raw parts) of the sandbox mounted at root. */
export async function serveTree(root, rawPath, method, url, req, res, { bodyMax }) {
	const parts = treeParts(rawPath);
	const what = `/${parts.join('/')}`;
	try {
		switch (method) {
		case 'GET':
			return await getPath(root, parts, url, req, res);
		case 'PUT':
			if (url.searchParams.has('reply')) {
				if (parts.length === 0) throw new BridgeError(409, 'is_directory', 'the root is a directory', 'EISDIR');
				const reply = await inParentOf(root, parts, (dir, name) => putReply(dir, name, req));
				res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': reply.length });
				return void res.end(reply);
			}
			return json(res, 200, await put(root, parts, req, bodyMax));
		case 'POST':
			if (parts.length === 0) throw new BridgeError(409, 'exists', 'the root is there');
			if (url.searchParams.has('rename')) {
				await renamePath(root, parts, treeParts(url.searchParams.get('rename'), { decoded: true }));
				return json(res, 200, { ok: true });
			}
			await inParentOf(root, parts, (dir, name) => mkdir(at(dir, name)));
			return json(res, 201, { ok: true });
		case 'DELETE':
			await remove(root, parts);
			return json(res, 200, { ok: true });
		default:
			throw new BridgeError(405, 'not_supported', `${method} is not a method of the tree`);
		}
	} catch (err) {
		throw toBridgeError(err, what);
	}
}

export function json(res, status, value) {
	const body = JSON.stringify(value);
	res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
	res.end(body);
}
