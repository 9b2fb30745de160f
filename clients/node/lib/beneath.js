// Paths beneath the workspace, walked one component at a time without following a symbolic
// link: whatever a sandboxed command plants in the workspace (a link to /etc, a directory
// swapped for a link between two steps), a file call of the client stays in the workspace.
//
// Node has no openat(). Each directory of the walk is held open (O_PATH) and the next name is
// opened through /proc/self/fd/N/NAME: the kernel resolves that from the very directory the
// descriptor holds (a "magic link"), not from a path a command could change meanwhile, and
// O_NOFOLLOW|O_DIRECTORY refuses a link at that name. So the walk has no window between a
// check and a use: each step starts from a directory already held. Needs /proc (Linux).
//
// A sandbox over HTTP (remote.js) has no descriptors here: its "directory" is its path, and the
// server walks each request's path the same way, by descriptor and following no link.
import { constants as C } from 'node:fs';
import { lstat, mkdir, open } from 'node:fs/promises';
import * as io from './io.js';
import { remoteOf } from './remote.js';

// Linux's O_PATH, which fs.constants lacks: a handle that only names a directory (no read
// permission needed), enough to resolve names from.
const O_PATH = 0o10000000;
const DIR = O_PATH | C.O_DIRECTORY | C.O_NOFOLLOW;

function errnoError(code, text) {
	const err = new Error(`${code}: ${text}`);
	err.code = code;
	return err;
}

export function linkError() {
	return errnoError('ELOOP', 'a symbolic link, which the client does not follow in the workspace');
}

export function isDirError() {
	return errnoError('EISDIR', 'is a directory');
}

/* The path that names `name` in the directory `dir` holds (the directory itself without one). */
export function at(dir, name) {
	if (dir.remote) return name ? `${dir.path}/${name}` : dir.path;
	return name ? `/proc/self/fd/${dir.fd}/${name}` : `/proc/self/fd/${dir.fd}`;
}

/* A remote directory's stand-in for a descriptor: its path, checked to be a directory. */
async function remoteDir(path) {
	const st = await io.lstat(path);
	if (st.isSymbolicLink()) throw linkError();
	if (!st.isDirectory()) throw Object.assign(new Error('ENOTDIR: not a directory'), { code: 'ENOTDIR' });
	return { remote: true, path, fd: -1, close: async () => {} };
}

/* A remote file's stand-in for a descriptor, for reads at offsets: its bytes, fetched once. */
async function remoteRegular(path, st) {
	const at = remoteOf(path);
	const bytes = await at.r.readAll(at.rel);
	return {
		fh: {
			read: async (buf, off, len, pos) => ({ bytesRead: bytes.copy(buf, off, pos, Math.min(bytes.length, pos + len)) }),
			close: async () => {},
		},
		st: { ...st, size: bytes.length },
	};
}

/* The directory `name` of `dir`: ELOOP for a link, ENOTDIR for anything else but a directory. */
export async function openChild(dir, name) {
	if (dir.remote) return remoteDir(at(dir, name));
	try {
		return await open(at(dir, name), DIR);
	} catch (err) {
		if (err.code === 'ENOTDIR' && (await lstat(at(dir, name)).catch(() => null))?.isSymbolicLink()) throw linkError();
		throw err;
	}
}

/* The directory at `parts` (names, none `.`, `..` or empty) beneath `workspace`, held open;
 * with `create`, missing ones are made on the way (mkdir -p). */
export async function openDir(workspace, parts, { create = false } = {}) {
	let dir = remoteOf(workspace) ? await remoteDir(workspace) : await open(workspace, O_PATH | C.O_DIRECTORY);
	try {
		for (const name of parts) {
			let next;
			try {
				next = await openChild(dir, name);
			} catch (err) {
				if (!create || err.code !== 'ENOENT') throw err;
				await (dir.remote ? io.mkdir : mkdir)(at(dir, name)).catch((e) => {
					if (e.code !== 'EEXIST') throw e;
				});
				next = await openChild(dir, name);
			}
			await dir.close();
			dir = next;
		}
		return dir;
	} catch (err) {
		await dir.close();
		throw err;
	}
}

/* fn(dir, name) with the parent directory of `parts` held open and the last name ('' when
 * parts name the workspace itself). */
export async function inParent(workspace, parts, fn) {
	const dir = await openDir(workspace, parts.slice(0, -1));
	try {
		return await fn(dir, parts.at(-1) ?? '');
	} finally {
		await dir.close();
	}
}

const KINDS = [
	['isFIFO', 'a FIFO'],
	['isSocket', 'a socket'],
	['isCharacterDevice', 'a character device'],
	['isBlockDevice', 'a block device'],
];

function notRegular(st) {
	if (st.isDirectory()) return isDirError();
	if (st.isSymbolicLink()) return linkError();
	const kind = KINDS.find(([test]) => st[test]())?.[1] ?? 'not a regular file';
	return errnoError('EINVAL', `${kind}, not a regular file: the client reads regular files only`);
}

/* {fh, st}: the regular file `name` of `dir`, open for reading. Anything else is refused
 * before it is opened (a FIFO would block the reader for good, a device never end); the
 * open itself does not follow a link (O_NOFOLLOW) or wait (O_NONBLOCK), and what it opened is
 * checked again, in case a command put something else there in between. */
export async function openRegular(dir, name) {
	if (!name) throw isDirError();
	const before = await (dir.remote ? io.lstat : lstat)(at(dir, name));
	if (!before.isFile()) throw notRegular(before);
	if (dir.remote) return remoteRegular(at(dir, name), before);
	const fh = await open(at(dir, name), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK | C.O_NOCTTY);
	try {
		const st = await fh.stat();
		if (!st.isFile()) throw notRegular(st);
		return { fh, st };
	} catch (err) {
		await fh.close();
		throw err;
	}
}
