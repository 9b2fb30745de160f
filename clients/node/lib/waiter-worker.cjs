// A worker of waiter.js: one read that may wait, in its own thread, at a time. With `poll`, the
// file is read without blocking (O_NONBLOCK: EAGAIN while nothing is there) and the worker sleeps
// on the abort word between tries, so an abort or the program's exit ends the wait at once; a
// blocking read could only end when the file gives data.
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');

const CHUNK = 1 << 16;
const POLL_MAX_MS = 50;

function readChunk(fd, buf, poll, abort) {
	for (let delay = 1; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
		try {
			return fs.readSync(fd, buf, 0, CHUNK, null);
		} catch (err) {
			if (!poll || err.code !== 'EAGAIN') throw err;
		}
		if (Atomics.load(abort, 0) || Atomics.wait(abort, 0, 0, delay) !== 'timed-out') return -1;
	}
}

parentPort.on('message', ({ op, path, abort, poll }) => {
	let fd;
	try {
		fd = fs.openSync(path, poll ? fs.constants.O_RDONLY | fs.constants.O_NONBLOCK : 'r');
		const chunks = [];
		for (;;) {
			const buf = Buffer.allocUnsafe(CHUNK);
			const n = readChunk(fd, buf, poll, abort);
			if (n <= 0) break;
			if (op === 'follow') {
				parentPort.postMessage({ chunk: buf.subarray(0, n) });
				if (Atomics.load(abort, 0)) break;
				continue;
			}
			chunks.push(buf.subarray(0, n));
			// A result is one JSON object and its newline, the only raw newline in it.
			if (op === 'line' && buf[n - 1] === 0x0a) break;
		}
		parentPort.postMessage({ done: Buffer.concat(chunks) });
	} catch (err) {
		parentPort.postMessage({ error: { code: err.code, syscall: err.syscall, message: err.message } });
	} finally {
		if (fd !== undefined) fs.closeSync(fd);
	}
});
