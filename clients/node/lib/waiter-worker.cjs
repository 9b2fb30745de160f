// A worker of waiter.js: one read that may wait, in its own thread, at a time (a `submit` is a
// command's submission on its cmd handle, then the wait for its result). With `poll`, the
// file is read without blocking (O_NONBLOCK: EAGAIN while nothing is there) and the worker sleeps
// on the abort word between tries, so an abort or the program's exit ends the wait at once; a
// blocking read could only end when the file gives data.
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');

const CHUNK = 1 << 16;
const POLL_MAX_MS = 50;

/* A read that a signal to the process (a profiler's, a child's end) interrupted is read again:
 * a parked read of the mount answers EINTR when interrupted, having taken nothing. */
function readSync(fd, buf, off, len) {
	for (;;) {
		try {
			return fs.readSync(fd, buf, off, len, null);
		} catch (err) {
			if (err.code !== 'EINTR') throw err;
		}
	}
}

function readChunk(fd, buf, poll, abort) {
	for (let delay = 1; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
		try {
			return readSync(fd, buf, 0, CHUNK);
		} catch (err) {
			if (!poll || err.code !== 'EAGAIN') throw err;
		}
		if (Atomics.load(abort, 0) || Atomics.wait(abort, 0, 0, delay) !== 'timed-out') return -1;
	}
}

/* A command written to a cmd handle (after a `ctl` line, if any): {fd, n}, the handle and the
 * run number it answers once the command is queued. The caller closes fd; it may wait, as the
 * close (its FLUSH) comes while the daemon starts the command. */
function submitSync(path, text, ctl) {
	if (ctl) fs.writeFileSync(ctl.path, ctl.text);
	const fd = fs.openSync(path, 'r+');
	try {
		fs.writeSync(fd, text);
		const buf = Buffer.alloc(32);
		let got = 0;
		// The reply is `N\n`: its newline ends it, with no read for the EOF after it.
		while (got === 0 || buf[got - 1] !== 0x0a) {
			const n = readSync(fd, buf, got, buf.length - got);
			if (n === 0) break;
			got += n;
		}
		const n = Number.parseInt(buf.subarray(0, got).toString(), 10);
		if (!Number.isInteger(n)) throw new Error(`${path}: no run number in the handle's reply`);
		return { fd, n };
	} catch (err) {
		fs.closeSync(fd);
		throw err;
	}
}

function errorOf(err) {
	return { code: err.code, syscall: err.syscall, message: err.message };
}

parentPort.on('message', ({ op, path, abort, poll, text, ctl }) => {
	let fd, handle;
	try {
		if (op === 'submit') {
			let n;
			try {
				({ fd: handle, n } = submitSync(path, text, ctl));
			} catch (err) {
				parentPort.postMessage({ refused: errorOf(err) });
				return;
			}
			parentPort.postMessage({ run: n });
			path = `${path.slice(0, path.lastIndexOf('/'))}/runs/${n}/result`;
			op = 'line';
		}
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
		parentPort.postMessage({ error: errorOf(err) });
	} finally {
		if (fd !== undefined) fs.closeSync(fd);
		/* The command is queued: the handle's close has nothing left to say. */
		if (handle !== undefined) fs.close(handle, () => {});
	}
});
