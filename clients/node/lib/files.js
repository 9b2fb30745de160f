// File methods: paths as the sandbox sees them (/workspace/...) mapped onto the mount's workspace/.
import { watch as fsWatch } from 'node:fs';
import {
	chmod,
	lstat,
	mkdir as fsMkdir,
	open,
	readFile as fsReadFile,
	readdir,
	rename,
	stat,
	unlink,
	writeFile as fsWriteFile,
} from 'node:fs/promises';
import { basename, dirname, join, posix, relative } from 'node:path';
import { ValidationError, mapError } from './errors.js';
import { readText } from './fsio.js';
import { sseStream } from './sse.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function fail(err, path) {
	return mapError(err, 'file', path);
}

/* The host path of a sandbox path: absolute ones must be in the workspace, relative ones are
 * taken from the session's cwd. */
export async function hostPath(session, path) {
	if (typeof path !== 'string' || path === '') throw new ValidationError('a path is required');
	const sb = session.sandbox;
	let abs = path;
	if (!path.startsWith('/')) abs = posix.join((await readText(join(session.dir, 'cwd'))).replace(/\n$/, ''), path);
	abs = posix.normalize(abs);
	for (const root of await sb.workspaceRoots()) {
		if (abs === root || abs.startsWith(root + '/')) return join(sb.workspace, abs.slice(root.length));
	}
	throw new ValidationError(`${path}: not in the workspace (${(await sb.workspaceRoots()).join(' or ')})`);
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
 * content, never a part; an existing file's mode is kept. */
export async function writeFile(session, path, content, { encoding } = {}) {
	const target = await hostPath(session, path);
	const data = encoding === 'base64' ? Buffer.from(content, 'base64') : content;
	const tmp = join(dirname(target), `.${basename(target)}.sbxfs-${process.pid}-${Math.random().toString(36).slice(2)}`);
	try {
		const mode = await stat(target).then((st) => st.mode & 0o7777, () => null);
		await fsWriteFile(tmp, data, { flag: 'wx' });
		if (mode !== null) await chmod(tmp, mode);
		await rename(tmp, target);
	} catch (err) {
		await unlink(tmp).catch(() => {});
		throw fail(err, path);
	}
	return { success: true, path, timestamp: new Date().toISOString(), exitCode: 0 };
}

export async function readFile(session, path, { encoding } = {}) {
	const target = await hostPath(session, path);
	let bytes;
	try {
		bytes = await fsReadFile(target);
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

/* metadata, then chunk events (utf-8 text, or base64 for binary files), then complete. */
export function readFileStream(session, path) {
	return sseStream(async (emit, signal) => {
		const target = await hostPath(session, path);
		let fh;
		try {
			fh = await open(target, 'r');
		} catch (err) {
			throw fail(err, path);
		}
		try {
			const { size } = await fh.stat();
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
	const target = await hostPath(session, path);
	try {
		await fsMkdir(target, { recursive });
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, recursive, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* A file or a symlink; a directory is refused (EISDIR). */
export async function deleteFile(session, path) {
	const target = await hostPath(session, path);
	try {
		if ((await lstat(target)).isDirectory()) {
			const err = new Error(`EISDIR: is a directory, unlink '${path}'`);
			err.code = 'EISDIR';
			throw err;
		}
		await unlink(target);
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, timestamp: new Date().toISOString(), exitCode: 0 };
}

export async function renameFile(session, oldPath, newPath) {
	const [from, to] = await Promise.all([hostPath(session, oldPath), hostPath(session, newPath)]);
	try {
		await rename(from, to);
	} catch (err) {
		throw fail(err, oldPath);
	}
	return { success: true, path: oldPath, newPath, timestamp: new Date().toISOString(), exitCode: 0 };
}

/* Into an existing directory it goes under its own name, else to that path. */
export async function moveFile(session, sourcePath, destinationPath) {
	const dest = await stat(await hostPath(session, destinationPath)).then(
		(st) => (st.isDirectory() ? posix.join(destinationPath, posix.basename(sourcePath)) : destinationPath),
		() => destinationPath,
	);
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

export async function listFiles(session, path, { recursive = false, includeHidden = false } = {}) {
	const root = await hostPath(session, path);
	const files = [];
	const walk = async (dir) => {
		for (const name of (await readdir(dir)).sort()) {
			if (!includeHidden && name.startsWith('.')) continue;
			const full = join(dir, name);
			const st = await lstat(full);
			const rel = relative(root, full);
			files.push({
				name,
				absolutePath: posix.join(path, rel),
				relativePath: rel,
				type: fileType(st),
				size: st.size,
				modifiedAt: st.mtime.toISOString(),
				mode: permissions(st.mode),
				permissions: { readable: !!(st.mode & 0o400), writable: !!(st.mode & 0o200), executable: !!(st.mode & 0o100) },
			});
			if (recursive && st.isDirectory()) await walk(full);
		}
	};
	try {
		await walk(root);
	} catch (err) {
		throw fail(err, path);
	}
	return { success: true, path, files, count: files.length, timestamp: new Date().toISOString(), exitCode: 0 };
}

export async function exists(session, path) {
	const target = await hostPath(session, path);
	const found = await lstat(target).then(() => true, () => false);
	return { success: true, path, exists: found, timestamp: new Date().toISOString() };
}

/* inotify on the workspace (fs.watch): onEvent({type, path}) with create, modify or delete. */
export async function watch(session, path, { recursive = false, onEvent, onError, signal } = {}) {
	const target = await hostPath(session, path);
	let watcher;
	try {
		watcher = fsWatch(target, { recursive, signal });
	} catch (err) {
		throw fail(err, path);
	}
	watcher.on('change', (kind, name) => {
		const rel = name ? String(name) : '';
		const full = posix.join(path, rel);
		if (kind === 'change') return onEvent?.({ type: 'modify', path: full });
		lstat(join(target, rel)).then(
			() => onEvent?.({ type: 'create', path: full }),
			() => onEvent?.({ type: 'delete', path: full }),
		);
	});
	watcher.on('error', (err) => onError?.(fail(err, path)));
	return {
		path,
		stop() {
			watcher.close();
		},
	};
}
