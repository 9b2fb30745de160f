// watch(): inotify (fs.watch) on workspace directories, each opened by beneath.js without
// following a link and watched through its descriptor's /proc path. fs.watch's own recursion
// is not used: it walks by path and watches what links point at, so a link a command planted
// would have the host watch /etc. Here a recursive watch is one fs.watch a directory, added as
// directories appear.
import { watch as fsWatch } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { posix } from 'node:path';
import { at, inParent, openDir } from './beneath.js';
import { SandboxError } from './errors.js';
import { fail, workspaceParts } from './files.js';
import { remoteOf } from './remote.js';

// A name gone, or turned into a link or a file, before its watch was added: nothing to watch.
const GONE = ['ENOENT', 'ENOTDIR', 'ELOOP'];

/* onEvent({type, path}) with create, modify or delete, until stop() (or the signal aborts). */
export async function watch(session, path, { recursive = false, onEvent, onError, signal } = {}) {
	const ws = session.sandbox.workspace;
	if (remoteOf(ws))
		throw new SandboxError('watch needs a mount: inotify sees nothing of a sandbox over HTTP', { errno: 'ENOTSUP' });
	const parts = await workspaceParts(session, path);
	const watchers = new Map(); // a watched directory's path below `path` ('' for it) -> FSWatcher
	let stopped = false;
	const report = (err) => {
		if (!stopped) onError?.(fail(err, path));
	};

	const forget = (rel) => {
		for (const [r, w] of watchers)
			if (r === rel || r.startsWith(`${rel}/`) || !rel) {
				w.close();
				watchers.delete(r);
			}
	};

	const add = async (rel) => {
		if (stopped || watchers.has(rel)) return;
		const dir = await openDir(ws, [...parts, ...rel.split('/').filter(Boolean)]);
		try {
			// `/.` after the descriptor: events on the directory itself then carry the name `.`,
			// which no entry can have (libuv names them by the watched path's last component).
			const w = fsWatch(`${at(dir)}/.`);
			watchers.set(rel, w);
			w.on('change', (kind, name) => changed(rel, kind, name === null || name === undefined ? '.' : String(name)));
			w.on('error', report);
			if (recursive)
				for (const entry of await readdir(at(dir), { withFileTypes: true }))
					if (entry.isDirectory()) await addBelow(rel ? `${rel}/${entry.name}` : entry.name);
		} finally {
			await dir.close();
		}
	};
	const addBelow = (rel) =>
		add(rel).catch((err) => {
			if (!GONE.includes(err.code)) report(err);
		});

	const changed = (rel, kind, name) => {
		const sub = name === '.' ? rel : rel ? `${rel}/${name}` : name;
		const full = sub ? posix.join(path, sub) : path;
		if (kind === 'change') return onEvent?.({ type: 'modify', path: full });
		const subParts = [...parts, ...sub.split('/').filter(Boolean)];
		inParent(ws, subParts, (dir, last) => lstat(at(dir, last))).then(
			(st) => {
				onEvent?.({ type: 'create', path: full });
				if (recursive && st.isDirectory() && sub) addBelow(sub);
			},
			() => {
				if (sub || name === '.') forget(sub);
				onEvent?.({ type: 'delete', path: full });
			},
		);
	};

	const stop = () => {
		stopped = true;
		forget('');
	};
	try {
		await add('');
	} catch (err) {
		stop();
		throw fail(err, path);
	}
	if (signal?.aborted) stop();
	else signal?.addEventListener('abort', stop, { once: true });
	return { path, stop };
}
