// Reads that may wait (a command's result or exit, output that is still coming) run on worker
// threads of their own. libuv's pool, which fs.promises uses, has 4 threads, sized before the
// program's first line runs; four waits in it would stall every other file call of the process.
import { Worker } from 'node:worker_threads';

const WORKER = new URL('./waiter-worker.cjs', import.meta.url);

const MAX_IDLE = 4;
const idle = [];

function takeWorker() {
	const w = idle.pop() ?? new Worker(WORKER);
	w.ref();
	return w;
}

function giveBack(w) {
	w.removeAllListeners('message');
	w.removeAllListeners('error');
	if (idle.length >= MAX_IDLE) {
		w.terminate();
		return;
	}
	w.unref();
	idle.push(w);
}

/* The worker's error as fs gives it: with its syscall, by which errors.js cuts the host path
 * off the message. */
function asError({ code, syscall, message }) {
	const err = new Error(message);
	err.code = code;
	err.syscall = syscall;
	return err;
}

/* op: `all` (to EOF), `line` (to the first chunk ending in a newline) or `follow` (each chunk to
 * onChunk, to EOF or until signal aborts). Resolves with the bytes read (none for follow). A
 * read with a signal polls (see the worker), so that an abort ends it: it settles at once
 * (rejects with the signal's reason, or resolves a follow). A read without one blocks until
 * the file answers, and the program's exit waits for it. */
export function waitRead(op, path, { onChunk, signal } = {}) {
	if (signal?.aborted) return op === 'follow' ? Promise.resolve(Buffer.alloc(0)) : Promise.reject(signal.reason);
	const abort = new Int32Array(new SharedArrayBuffer(4));
	const w = takeWorker();
	return new Promise((resolve, reject) => {
		let settled = false;
		const settle = (fn, value) => {
			if (settled) return;
			settled = true;
			signal?.removeEventListener('abort', onAbort);
			fn(value);
		};
		const onAbort = () => {
			Atomics.store(abort, 0, 1);
			Atomics.notify(abort, 0);
			w.unref();
			if (op === 'follow') settle(resolve, Buffer.alloc(0));
			else settle(reject, signal.reason);
		};
		signal?.addEventListener('abort', onAbort);
		w.on('message', (msg) => {
			if (msg.chunk) {
				if (!settled) onChunk(Buffer.from(msg.chunk.buffer, msg.chunk.byteOffset, msg.chunk.length));
				return;
			}
			giveBack(w);
			if (msg.error) settle(reject, asError(msg.error));
			else settle(resolve, Buffer.from(msg.done.buffer, msg.done.byteOffset, msg.done.length));
		});
		w.on('error', (err) => settle(reject, err));
		w.postMessage({ op, path, abort, poll: Boolean(signal) });
	});
}

/* A command submitted on the cmd handle at cmdPath (after writing ctl.text to ctl.path, when
 * given), then its result read from runs/N/result, in one worker: one hop where fs.promises
 * takes five. Resolves with {n, result} once the command is queued (rejects with the handle's
 * error); result resolves with the result line's bytes once the command ended. */
export function waitSubmit(cmdPath, text, ctl) {
	const w = takeWorker();
	return new Promise((resolve, reject) => {
		let queued = null;
		w.on('message', (msg) => {
			if (msg.run !== undefined) {
				const result = new Promise((res, rej) => {
					queued = { res, rej };
				});
				return resolve({ n: msg.run, result });
			}
			giveBack(w);
			if (msg.refused) reject(asError(msg.refused));
			else if (msg.error) queued.rej(asError(msg.error));
			else queued.res(Buffer.from(msg.done.buffer, msg.done.byteOffset, msg.done.length));
		});
		w.on('error', (err) => (queued ? queued.rej(err) : reject(err)));
		w.postMessage({ op: 'submit', path: cmdPath, text, ctl });
	});
}
