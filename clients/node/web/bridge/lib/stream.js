// Reading a file of the mount to its end without holding a thread of Node's pool: O_NONBLOCK
// reads from an offset, a short pause when there is nothing new yet (a command's output that
// is still being written), and the consumer's pace (onChunk is awaited: a slow client slows the
// reads, the daemon keeps the rest spooled). A nudge ends the pause at once: its command ended,
// so what is left is there to read.
import { constants as C } from 'node:fs';
import { open } from 'node:fs/promises';
import { drained } from '../../lib/drain.js';
import { BridgeError } from './errors.js';

/* The most one read of a command's output answers (the mount's replies are at most 512 KiB). */
export const CHUNK = 512 << 10;
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

/* Reads `fh` from `offset` to EOF, each piece to onChunk (awaited), with the next read under
 * way while onChunk runs. True at EOF, false if `signal` aborted first. With `reuse`, two
 * buffers take turns: onChunk is done with a piece once its promise settles. */
export async function pumpHandle(fh, onChunk, { offset = 0, signal, nudge = new Nudge(), reuse = false } = {}) {
	const bufs = reuse ? [Buffer.allocUnsafeSlow(CHUNK), Buffer.allocUnsafeSlow(CHUNK)] : null;
	let turn = 0;
	/* The bytes read at pos, or null when none are there yet (EAGAIN). */
	const read = (pos) => {
		const buf = bufs ? bufs[turn++ & 1] : Buffer.allocUnsafe(CHUNK);
		return fh.read(buf, 0, CHUNK, pos).then(({ bytesRead }) => buf.subarray(0, bytesRead),
			(e) => (e.code === 'EAGAIN' ? null : Promise.reject(e)));
	};
	let pos = offset, idle = PAUSE_MIN, next = read(pos), ahead = false;
	try {
		while (!signal?.aborted) {
			const bytes = await next;
			if (bytes === null) {
				/* A read made before onChunk ran found nothing: what came meanwhile is read
				 * at once, without a pause. */
				if (!ahead) {
					await pause(idle, signal, nudge);
					idle = nudge.poked ? PAUSE_MIN : Math.min(idle * 2, PAUSE_MAX);
					nudge.poked = false;
				}
				next = read(pos);
				ahead = false;
				continue;
			}
			if (bytes.length === 0) return true;
			pos += bytes.length;
			idle = PAUSE_MIN;
			next = read(pos);
			ahead = true;
			await onChunk(bytes);
		}
		return false;
	} finally {
		next.catch(() => {}); /* a read still under way when onChunk threw or the signal came */
	}
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
