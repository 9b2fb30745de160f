// The file calls of the client's modules, by path: a path under a remote root (remote.js) goes
// to that sandbox over HTTP, any other to the local filesystem (a mount). The calls take and
// give what node:fs/promises does, for what the modules use of it.
import * as fs from 'node:fs/promises';
import { remoteOf } from './remote.js';

function dirent(e) {
	return {
		name: e.name,
		isDirectory: () => e.type === 'directory',
		isFile: () => e.type === 'file',
		isSymbolicLink: () => e.type === 'symlink',
	};
}

export async function readFile(path, encoding) {
	const at = remoteOf(path);
	if (!at) return fs.readFile(path, encoding);
	const bytes = await at.r.readAll(at.rel);
	return (typeof encoding === 'string' ? encoding : encoding?.encoding) ? bytes.toString('utf8') : bytes;
}

export async function writeFile(path, data) {
	const at = remoteOf(path);
	if (!at) return fs.writeFile(path, data);
	await at.r.write(at.rel, data);
}

export async function mkdir(path, opts) {
	const at = remoteOf(path);
	if (!at) return fs.mkdir(path, opts);
	if (!opts?.recursive) return void (await at.r.mkdir(at.rel));
	const parts = at.rel.split('/').filter(Boolean);
	for (let i = 1; i <= parts.length; i++) {
		try {
			await at.r.mkdir(parts.slice(0, i).join('/'));
		} catch (err) {
			if (err.code !== 'EEXIST') throw err;
		}
	}
}

export async function rmdir(path) {
	const at = remoteOf(path);
	if (!at) return fs.rmdir(path);
	if ((await at.r.stat(at.rel)).type !== 'directory') throw Object.assign(new Error('ENOTDIR: not a directory'), { code: 'ENOTDIR' });
	await at.r.remove(at.rel);
}

export async function unlink(path) {
	const at = remoteOf(path);
	if (!at) return fs.unlink(path);
	if ((await at.r.stat(at.rel)).type === 'directory') throw Object.assign(new Error('EISDIR: is a directory'), { code: 'EISDIR' });
	await at.r.remove(at.rel);
}

export async function readdir(path, opts) {
	const at = remoteOf(path);
	if (!at) return fs.readdir(path, opts);
	const entries = await at.r.list(at.rel);
	return opts?.withFileTypes ? entries.map(dirent) : entries.map((e) => e.name);
}

/* stat and lstat alike: the tree follows no link, so a remote stat is an lstat. */
export async function stat(path) {
	const at = remoteOf(path);
	return at ? at.r.stat(at.rel) : fs.stat(path);
}

export async function lstat(path) {
	const at = remoteOf(path);
	return at ? at.r.stat(at.rel) : fs.lstat(path);
}

export async function rename(from, to) {
	const a = remoteOf(from), b = remoteOf(to);
	if (!a && !b) return fs.rename(from, to);
	if (!a || !b || a.r !== b.r) throw Object.assign(new Error('EXDEV: not in one sandbox'), { code: 'EXDEV' });
	await a.r.rename(a.rel, b.rel);
}
