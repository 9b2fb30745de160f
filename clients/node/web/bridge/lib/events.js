// The Server-Sent Events of an exec's answer: `event: NAME`, `data: TEXT`, a blank line. A chunk
// of output is its base64, encoded in pieces small enough for V8's young space (a string of a
// whole 512 KiB chunk is a large object of its own, mapped and faulted in each time: a sixth of
// the speed) straight into a buffer that is written again once the socket has taken it.
import { CHUNK } from './stream.js';

const HEADS = { stdout: Buffer.from('event: stdout\ndata: '), stderr: Buffer.from('event: stderr\ndata: ') };
/* A multiple of 3: the pieces' base64 joins into the base64 of the whole. */
const PIECE = 48 << 10;
const FRAME_MAX = 32 + Math.ceil(CHUNK / 3) * 4;

export function sse(event, data) {
	return `event: ${event}\ndata: ${data}\n\n`;
}

function encodeInto(out, stream, bytes) {
	let off = HEADS[stream].copy(out);
	for (let i = 0; i < bytes.length; i += PIECE)
		off += out.write(bytes.toString('base64', i, Math.min(i + PIECE, bytes.length)), off, 'latin1');
	out[off++] = 0x0a;
	out[off++] = 0x0a;
	return out.subarray(0, off);
}

/* The event of a chunk of `stream`'s output, in a buffer of its own. */
export function outputEvent(stream, bytes) {
	return encodeInto(Buffer.allocUnsafe(32 + Math.ceil(bytes.length / 3) * 4), stream, bytes);
}

/* Writes output events to res from a few buffers that take turns: one is filled again only once
 * the socket took what it held (its write's callback). A chunk past CHUNK, which the pump does
 * not read, gets a buffer of its own. */
export class EventWriter {
	constructor(res, signal, count = 3) {
		this.res = res;
		this.signal = signal;
		this.free = Array.from({ length: count }, () => Buffer.allocUnsafeSlow(FRAME_MAX));
		this.waiting = [];
		signal.addEventListener('abort', () => this.waiting.splice(0).forEach((r) => r()), { once: true });
	}

	/* Resolves once `bytes` is encoded into an event handed to the socket (the caller may read
	 * into it again). It waits for a free buffer first: stdout's and stderr's pumps share them. */
	async write(stream, bytes) {
		if (this.signal.aborted) return;
		if (bytes.length > CHUNK) return void this.res.write(outputEvent(stream, bytes));
		while (!this.free.length && !this.signal.aborted) await new Promise((r) => this.waiting.push(r));
		if (this.signal.aborted) return;
		const buf = this.free.pop();
		this.res.write(encodeInto(buf, stream, bytes), () => {
			this.free.push(buf);
			this.waiting.shift()?.();
		});
	}
}
