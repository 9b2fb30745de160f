// A reader of an exec's event stream for bench_bridge.py, as a client of the Bridge reads it:
// POSTs the exec and decodes every stdout event's base64 as it arrives, then prints {status,
// seconds, bytes, exit, nonzero} as JSON. Kept light, as the stream's instrument and not its
// load (this machine's two CPUs are the bridge's and the sandbox's too): the socket is read into
// one reused buffer and HTTP's chunks are parsed here (node:http copies each piece of a body
// into a buffer of its own, which cost this reader two thirds of its time), and base64 is
// decoded by Node (Python's binascii, at about 300 MB/s, would measure itself).
// usage: node sse_reader.mjs PORT ID TOKEN SIZE
import net from 'node:net';

const [port, id, token, size] = process.argv.slice(2);
const PIECE = 64 << 10;
const OUT = Buffer.allocUnsafe(PIECE);
let got = 0, nonzero = 0, exit = null, status = null;

/* SSE: a line `event: NAME`, a line `data: TEXT`, a blank line. A stdout data line is decoded
 * as it comes, whole groups of 4 characters at a time; other lines are kept whole. */
const sse = { line: [], event: null, data: false, carry: '' };
function decode(text) {
	text = sse.carry + text;
	const whole = text.length - (text.length % 4);
	sse.carry = text.slice(whole);
	const n = OUT.write(whole === text.length ? text : text.slice(0, whole), 0, 'base64');
	got += n;
	for (let k = 0; k < n; k += 4096) if (OUT[k] !== 0) nonzero++;
}
function sseBytes(c, at, end) {
	while (at < end) {
		const nl = c.indexOf(10, at);
		const stop = nl < 0 || nl >= end ? end : nl;
		/* in pieces: a string past V8's young space is mapped and faulted in, each time */
		if (sse.data && sse.event === 'stdout')
			for (let i = at; i < stop; i += PIECE) decode(c.toString('latin1', i, Math.min(stop, i + PIECE)));
		else sse.line.push(Buffer.from(c.subarray(at, stop)));
		if (stop === end) return;
		at = stop + 1;
		const text = Buffer.concat(sse.line).toString('latin1');
		sse.line = [];
		if (sse.data) {
			if (sse.event === 'exit') exit = JSON.parse(text.slice(6)).exit_code;
			sse.data = false;
		} else if (text.startsWith('event: ')) {
			sse.event = text.slice(7);
			sse.data = true;
			if (sse.event === 'stdout') at = skip(c, at, end, 6); /* "data: " */
		}
	}
}
/* Skips n bytes of the data line's prefix, which may run into the next read. */
let skipping = 0;
function skip(c, at, end, n) {
	skipping = n;
	const k = Math.min(skipping, end - at);
	skipping -= k;
	return at + k;
}

/* HTTP/1.1: the answer's head, then its chunks: a hex size line, the bytes, CRLF. */
const http = { head: [], size: -1, sizeLine: '', left: 0, crlf: 0 };
function httpBytes(c, at, end) {
	if (status === null) {
		const stop = c.indexOf('\r\n\r\n', at);
		http.head.push(Buffer.from(c.subarray(at, stop < 0 || stop > end ? end : stop + 4)));
		if (stop < 0 || stop > end) return false;
		status = Number(Buffer.concat(http.head).toString('latin1').split(' ')[1]);
		at = stop + 4;
	}
	while (at < end) {
		if (http.crlf) {
			const k = Math.min(http.crlf, end - at);
			http.crlf -= k;
			at += k;
		} else if (http.left) {
			const stop = Math.min(end, at + http.left);
			if (skipping) {
				const k = Math.min(skipping, stop - at);
				skipping -= k;
				at += k;
			}
			sseBytes(c, at, stop);
			http.left -= stop - at;
			at = stop;
			if (!http.left) http.crlf = 2;
		} else {
			const nl = c.indexOf(10, at);
			const stop = nl < 0 || nl >= end ? end : nl + 1;
			http.sizeLine += c.toString('latin1', at, stop);
			at = stop;
			if (!http.sizeLine.endsWith('\n')) continue;
			http.left = parseInt(http.sizeLine, 16);
			http.sizeLine = '';
			if (http.left === 0) return true;
		}
	}
	return false;
}

const t0 = process.hrtime.bigint();
const body = JSON.stringify({ argv: ['head', '-c', size, '/dev/zero'] });
const sock = net.connect({
	host: '127.0.0.1',
	port: Number(port),
	onread: {
		buffer: Buffer.allocUnsafe(1 << 20),
		callback(n, buf) {
			if (!httpBytes(buf, 0, n)) return;
			const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
			console.log(JSON.stringify({ status, seconds, bytes: got, exit, nonzero }));
			sock.destroy();
		},
	},
});
sock.write(`POST /v1/sandbox/${id}/exec HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
	`Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
