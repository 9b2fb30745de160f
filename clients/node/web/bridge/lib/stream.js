// Reading a file of the mount to its end without holding a thread of Node's pool: O_NONBLOCK
// reads from an offset, a short pause when there is nothing new yet (a command's output that
// is still being written), and the consumer's pace (onChunk is awaited: a slow client slows the
// reads, the daemon keeps the rest spooled). A nudge ends the pause at once: its command ended,
// so what is left is there to read.
import { constants as C } from 'node:fs';
import { open } from 'node:fs/promises';
import { drained } from '../../lib/drain.js';
import { BridgeError } from './errors.js';

const CHUNK = 1 << 20;
const PAUSE_MIN = 2, PAUSE_MAX = 40;

export class Nudge {
	wake() {
		this.poked = true;
		this.done?.();
	}
}

function pause(ms, signal, nudge) {
	return new Promise((resolve) => {
		if (nudge.poked || signal?.aborted) return resolve();
		const t = setTimeout(done, ms);
		function done() {
			clearTimeout(t);
			signal?.removeEventListener('abort', done);
			nudge.done = null;
			resolve();
		}
		signal?.addEventListener('abort', done, { once: true });
		nudge.done = done;
	});
}

/* Reads `fh` from `offset` to EOF, each piece to onChunk (awaited). True at EOF, false if
 * `signal` aborted first. */
export async function pumpHandle(fh, onChunk, { offset = 0, signal, nudge = new Nudge() } = {}) {
	let pos = offset, idle = PAUSE_MIN;
	while (!signal?.aborted) {
		const buf = Buffer.allocUnsafe(CHUNK);
		let n;
		try {
			({ bytesRead: n } = await fh.read(buf, 0, CHUNK, pos));
		} catch (e) {
			if (e.code !== 'EAGAIN') throw e;
			await pause(idle, signal, nudge);
			idle = nudge.poked ? PAUSE_MIN : Math.min(idle * 2, PAUSE_MAX);
			nudge.poked = false;
			continue;
		}
		if (n === 0) return true;
		pos += n;
		idle = PAUSE_MIN;
		await onChunk(buf.subarray(0, n));
	}
	return false;
}

/* pumpHandle on the file at `path` (opened without following a link at its last name). */
export async function pump(path, onChunk, opts) {
	const fh = await open(path, C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW | C.O_NOCTTY);
	try {
		return await pumpHandle(fh, onChunk, opts);
	} finally {
		await fh.close();
	}
}

/* res.write (of bytes, or of a string in `encoding`) that waits for the socket when its buffer
 * is full. */
export function writer(res, signal) {
	return (data, encoding) => {
		if (res.write(data, encoding) || signal?.aborted) return undefined;
		return drained(res);
	};
}

/* The body of req into fh, at most max bytes (413 past them); its size. */
export async function receive(req, fh, max) {
	let size = 0;
	for await (const chunk of req) {
		size += chunk.length;
		if (size > max) throw new BridgeError(413, 'too_large', `the body is past ${max} bytes`, 'EFBIG');
		for (let off = 0; off < chunk.length; )
			off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten;
	}
	return size;
}
