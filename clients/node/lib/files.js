// File methods: paths as the sandbox sees them (/workspace/...) mapped onto the mount's
// workspace/, and walked there by beneath.js, which follows no link a command planted.
import { open } from 'node:fs/promises';
import { lstat, mkdir as fsMkdir, readdir, rename, unlink, writeFile as ioWriteFile } from './io.js';
import { join, posix } from 'node:path';
import { ValidationError, mapError } from './errors.js';
import { at, inParent, isDirError, linkError, openChild, openDir, openRegular } from './beneath.js';
import { readText } from './fsio.js';
import { sseStream } from './sse.js';

/* What readFile reads into memory at most, unless its maxBytes says otherwise: a file that a
 * command made 20 GiB (sparse, `truncate -s`) is refused rather than allocated. */
export const READ_FILE_MAX = 32 << 20;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function fail(err, path) {
	return mapError(err, 'file', path);
}

/* A session that is gone is a SessionNotFoundError, not an error naming its file on the host. */
function sessionCwd(session) {
	return readText(join(session.dir, 'cwd')).then(
		(text) => text.replace(/\n$/, ''),
		(err) => {
			throw mapError(err, 'session', `session ${session.id}`);
		},
	);
}

/* The names of a sandbox path beneath the workspace: absolute ones must be in it, relative
 * ones are taken from the session's cwd. */
export async function workspaceParts(session, path) {
	if (typeof path !== 'string' || path === '') throw new ValidationError('a path is required');
	if (path.includes('\0')) throw new ValidationError(`${JSON.stringify(path)}: a path cannot hold a NUL byte`);
	const roots = session.sandbox.workspaceRoots;
	let abs = path;
	if (!path.startsWith('/')) abs = posix.join(await sessionCwd(session), path);
	abs = posix.normalize(abs);
	for (const root of roots) {
		if (abs === root || abs.startsWith(root + '/')) return abs.slice(root.length).split('/').filter(Boolean);
	}
	throw new ValidationError(`${path}: not in the workspace (${roots.join(' or ')})`);
}

function beneath(session, parts, fn) {
	return inParent(session.sandbox.workspace, parts, fn);
}

function isText(bytes) {
	try {
		utf8.decode(bytes);
		return true;
	} catch {
		return false;
	}
}

/* Written to a temporary file beside it, then renamed over it: readers see the old or the new
 * content, never a part. An existing file keeps its permission bits, never set-id ones; a link
 * there is refused, not written through or replaced. */
export async function writeFile(session, path, content, { encoding } = {}) {
	const parts = await workspaceParts(session, path);
	const data = encoding === 'base64' ? Buffer.from(content, 'base64') : content;
	try {
		await beneath(session, parts, async (dir, name) => {
			if (!name) throw isDirError();
			const st = await lstat(at(dir, name)).catch((err) => {
				if (err.code === 'ENOENT') return null;
				throw err;
			});
			if (st?.isSymbolicLink()) throw linkError();
			if (st?.isDirectory()) throw isDirError();
			/* over HTTP, the server writes beside it and renames, keeping its mode */
			if (dir.remote) return ioWriteFile(at(dir, name), data);
			const mode = st?.isFile() ? st.mode & 0o777 : null;
			const tmp = at(dir, `.${name}.sbxfs-${process.pid}-${Math.random().toString(36).slice(2)}`);
			try {
				const fh = await open(tmp, 'wx');
				try {
					await fh.writeFile(data);
					if (mode !== null) await fh.chmod(mode);
				} finally {
					await fh.close();
				}
				await rename(tmp, at(dir, name));
			} catch (err) {
				await unlink(tmp).catch(() => {});
				throw err;
			}
		});
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, timestamp: new Date().toISOString(), exitCode: 0 };
}

function tooBig(size, max) {
	const err = new Error(`EFBIG: ${size} bytes or more, past readFile's maxBytes (${max}); readFileStream reads any size`);
	err.code = 'EFBIG';
	return err;
}

/* The file's bytes, at most `max` of them: a file that grows while it is read stops there too. */
async function readCapped(fh, size, max) {
	if (size > max) throw tooBig(size, max);
	const chunks = [];
	let total = 0;
	for (;;) {
		const want = Math.min(Math.max(size - total, 65536), max + 1 - total);
		const buf = Buffer.allocUnsafe(want);
		const { bytesRead } = await fh.read(buf, 0, want, total);
		if (bytesRead === 0) break;
		chunks.push(buf.subarray(0, bytesRead));
		total += bytesRead;
		if (total > max) throw tooBig(total, max);
	}
	return Buffer.concat(chunks, total);
}

/* A regular file only (a FIFO, socket or device is refused at once), read into memory up to
 * maxBytes (READ_FILE_MAX by default). */
export async function readFile(session, path, { encoding, maxBytes = READ_FILE_MAX } = {}) {
	if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new ValidationError(`invalid maxBytes: ${maxBytes}`);
	const parts = await workspaceParts(session, path);
	let bytes;
	try {
		const { fh, st } = await beneath(session, parts, openRegular);
		try {
			bytes = await readCapped(fh, st.size, maxBytes);
		} finally {
			await fh.close();
		}
	} catch (err) {
		throw fail(err, path);
	}
	const text = encoding !== 'base64' && isText(bytes);
	return {
		success: true,
		path,
		content: text ? bytes.toString('utf8') : bytes.toString('base64'),
		encoding: text ? 'utf-8' : 'base64',
		isBinary: !isText(bytes),
		size: bytes.length,
		timestamp: new Date().toISOString(),
		exitCode: 0,
	};
}

/* metadata, then chunk events (utf-8 text, or base64 for binary files), then complete: any
 * size, a chunk at a time. */
export function readFileStream(session, path) {
	return sseStream(async (emit, signal) => {
		const parts = await workspaceParts(session, path);
		let fh, size;
		try {
			({ fh, st: { size } } = await beneath(session, parts, openRegular));
		} catch (err) {
			throw fail(err, path);
		}
		try {
			const head = Buffer.alloc(Math.min(size, 8192));
			await fh.read(head, 0, head.length, 0);
			const binary = !isText(head) && head.length > 0 && head.includes(0);
			const encoding = binary ? 'base64' : 'utf-8';
			emit({ type: 'metadata', mimeType: binary ? 'application/octet-stream' : 'text/plain', size, isBinary: binary, encoding });
			let bytesRead = 0;
			const decoder = new TextDecoder();
			for (;;) {
				if (signal.aborted) return;
				const buf = Buffer.alloc(binary ? 3 * 21846 : 65536);
				const r = await fh.read(buf, 0, buf.length, bytesRead);
				if (r.bytesRead === 0) break;
				bytesRead += r.bytesRead;
				const chunk = buf.subarray(0, r.bytesRead);
				const data = binary ? chunk.toString('base64') : decoder.decode(chunk, { stream: true });
				if (data) emit({ type: 'chunk', data });
			}
			emit({ type: 'complete', bytesRead });
		} finally {
			await fh.close();
		}
	});
}

export async function mkdir(session, path, { recursive = false } = {}) {
	const parts = await workspaceParts(session, path);
	try {
		if (recursive) await (await openDir(session.sandbox.workspace, parts, { create: true })).close();
		else await beneath(session, parts, (dir, name) => fsMkdir(at(dir, name)));
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, recursive, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* A file or a symlink (the link itself); a directory is refused (EISDIR). */
export async function deleteFile(session, path) {
	const parts = await workspaceParts(session, path);
	try {
		await beneath(session, parts, async (dir, name) => {
			if (!name || (await lstat(at(dir, name))).isDirectory()) throw isDirError();
			await unlink(at(dir, name));
		});
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* The name itself moves (a link as a link); the workspace itself cannot. */
export async function renameFile(session, oldPath, newPath) {
	const [from, to] = await Promise.all([workspaceParts(session, oldPath), workspaceParts(session, newPath)]);
	try {
		await beneath(session, from, (src, a) =>
			beneath(session, to, (dst, b) => {
				if (!a || !b) {
					const err = new Error('EBUSY: the workspace itself cannot be moved or replaced');
					err.code = 'EBUSY';
					throw err;
				}
				return rename(at(src, a), at(dst, b));
			}),
		);
	} catch (err) {
		throw fail(err, oldPath);
	}
	return { success: true, path: oldPath, newPath, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* Into an existing directory (not a link to one) it goes under its own name, else to that
 * path. */
export async function moveFile(session, sourcePath, destinationPath) {
	const parts = await workspaceParts(session, destinationPath);
	const intoDir = await beneath(session, parts, async (dir, name) => !name || (await lstat(at(dir, name))).isDirectory()).catch(
		() => false,
	);
	const dest = intoDir ? posix.join(destinationPath, posix.basename(sourcePath)) : destinationPath;
	const r = await renameFile(session, sourcePath, dest);
	return { ...r, newPath: dest };
}

function permissions(mode) {
	const rwx = (bits) => `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${bits & 1 ? 'x' : '-'}`;
	return rwx(mode >> 6) + rwx(mode >> 3) + rwx(mode);
}

function fileType(st) {
	if (st.isFile()) return 'file';
	if (st.isDirectory()) return 'directory';
	if (st.isSymbolicLink()) return 'symlink';
	return 'other';
}

// What a listing skips: a name a command removed, or turned into a link or a file, meanwhile.
const GONE = ['ENOENT', 'ENOTDIR', 'ELOOP'];

/* Links are listed as links; a recursive listing goes into directories only. */
export async function listFiles(session, path, { recursive = false, includeHidden = false } = {}) {
	const parts = await workspaceParts(session, path);
	const files = [];
	const walk = async (dir, rel) => {
		for (const name of (await readdir(at(dir))).sort()) {
			if (!includeHidden && name.startsWith('.')) continue;
			const st = await lstat(at(dir, name)).catch((err) => {
				if (GONE.includes(err.code)) return null;
				throw err;
			});
			if (!st) continue;
			const sub = rel ? `${rel}/${name}` : name;
			files.push({
				name,
				absolutePath: posix.join(path, sub),
				relativePath: sub,
				type: fileType(st),
				size: st.size,
				modifiedAt: st.mtime.toISOString(),
				mode: permissions(st.mode),
				permissions: { readable: !!(st.mode & 0o400), writable: !!(st.mode & 0o200), executable: !!(st.mode & 0o100) },
			});
			if (!recursive || !st.isDirectory()) continue;
			const child = await openChild(dir, name).catch((err) => {
				if (GONE.includes(err.code)) return null;
				throw err;
			});
			if (!child) continue;
			try {
				await walk(child, sub);
			} finally {
				await child.close();
			}
		}
	};
	try {
		const dir = await openDir(session.sandbox.workspace, parts);
		try {
			await walk(dir, '');
		} finally {
			await dir.close();
		}
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, files, count: files.length, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* Whether the name is there (a link counts, unfollowed); a link on the way is an error. */
export async function exists(session, path) {
	const parts = await workspaceParts(session, path);
	let found;
	try {
		found = await beneath(session, parts, (dir, name) => lstat(at(dir, name)).then(() => true));
	} catch (err) {
		if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') throw fail(err, path);
		found = false;
	}
	return { success: true, path, exists: found, timestamp: new Date().toISOString() };
}
