// A small RFC 6455 WebSocket server side: the upgrade handshake, and frames read as the
// attacker input they are (masking required, reserved bits and opcodes refused, control
// frames small and whole, messages bounded, text checked as UTF-8).
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OP_CONT = 0, OP_TEXT = 1, OP_BINARY = 2, OP_CLOSE = 8, OP_PING = 9, OP_PONG = 10;

export const CLOSE = { NORMAL: 1000, PROTOCOL: 1002, BAD_DATA: 1007, POLICY: 1008, TOO_BIG: 1009 };

/* Answers the upgrade of `req` on `socket`: a WebSocket, or null after a 400 reply. */
export function acceptUpgrade(req, socket, head, { maxMessage = 1 << 20 } = {}) {
	const key = req.headers['sec-websocket-key'];
	if (req.headers['sec-websocket-version'] !== '13' || typeof key !== 'string' ||
	    Buffer.from(key, 'base64').length !== 16 ||
	    !/\bwebsocket\b/i.test(req.headers.upgrade ?? '')) {
		refuseUpgrade(socket, 400, 'Bad Request');
		return null;
	}
	const accept = createHash('sha1').update(key + GUID).digest('base64');
	socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n' +
		     `Connection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
	const ws = new WebSocket(socket, maxMessage);
	if (head?.length) ws.receive(head);
	return ws;
}

export function refuseUpgrade(socket, status, text) {
	socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/* Events: 'message' (data, isBinary), 'close' (code). */
export class WebSocket extends EventEmitter {
	constructor(socket, maxMessage) {
		super();
		this.socket = socket;
		this.maxMessage = maxMessage;
		this.buf = Buffer.alloc(0);
		this.fragments = null; /* { op, parts, size } of a message in pieces */
		this.closed = false;
		socket.setNoDelay(true);
		socket.on('data', (d) => this.receive(d));
		socket.on('close', () => this.finish(1006));
		socket.on('error', () => this.finish(1006));
	}

	receive(data) {
		this.buf = this.buf.length ? Buffer.concat([this.buf, data]) : data;
		while (!this.closed) {
			const frame = this.parse();
			if (!frame) return;
			this.handle(frame);
		}
	}

	/* One whole frame off the buffer, or null if it is not all there yet. */
	parse() {
		const b = this.buf;
		if (b.length < 2) return null;
		const fin = (b[0] & 0x80) !== 0, op = b[0] & 0x0f, masked = (b[1] & 0x80) !== 0;
		let len = b[1] & 0x7f, at = 2;
		if (b[0] & 0x70) return this.fail(CLOSE.PROTOCOL, 'reserved bits set');
		if (!masked) return this.fail(CLOSE.PROTOCOL, 'client frames must be masked');
		if (op >= OP_CLOSE && (!fin || len > 125))
			return this.fail(CLOSE.PROTOCOL, 'bad control frame');
		if (len === 126) {
			if (b.length < 4) return null;
			len = b.readUInt16BE(2);
			at = 4;
		} else if (len === 127) {
			if (b.length < 10) return null;
			const hi = b.readUInt32BE(2);
			if (hi !== 0) return this.fail(CLOSE.TOO_BIG, 'frame too large');
			len = b.readUInt32BE(6);
			at = 10;
		}
		if (len > this.maxMessage) return this.fail(CLOSE.TOO_BIG, 'frame too large');
		if (b.length < at + 4 + len) return null;
		const mask = b.subarray(at, at + 4);
		const payload = Buffer.from(b.subarray(at + 4, at + 4 + len));
		for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
		this.buf = b.subarray(at + 4 + len);
		return { fin, op, payload };
	}

	handle({ fin, op, payload }) {
		if (op === OP_PING) return this.sendFrame(OP_PONG, payload);
		if (op === OP_PONG) return;
		if (op === OP_CLOSE) return this.peerClose(payload);
		if (op === OP_CONT) {
			if (!this.fragments) return this.fail(CLOSE.PROTOCOL, 'continuation without a start');
		} else if (op === OP_TEXT || op === OP_BINARY) {
			if (this.fragments) return this.fail(CLOSE.PROTOCOL, 'new message inside a fragmented one');
			this.fragments = { op, parts: [], size: 0 };
		} else {
			return this.fail(CLOSE.PROTOCOL, 'unknown opcode');
		}
		const f = this.fragments;
		f.size += payload.length;
		if (f.size > this.maxMessage) return this.fail(CLOSE.TOO_BIG, 'message too large');
		f.parts.push(payload);
		if (!fin) return;
		this.fragments = null;
		const data = Buffer.concat(f.parts);
		if (f.op === OP_TEXT) {
			let text;
			try {
				text = new TextDecoder('utf-8', { fatal: true }).decode(data);
			} catch {
				return this.fail(CLOSE.BAD_DATA, 'text is not UTF-8');
			}
			this.emit('message', text, false);
		} else {
			this.emit('message', data, true);
		}
	}

	peerClose(payload) {
		let code = 1005;
		if (payload.length === 1) return this.fail(CLOSE.PROTOCOL, 'bad close frame');
		if (payload.length >= 2) code = payload.readUInt16BE(0);
		this.close(code === 1005 ? CLOSE.NORMAL : code);
	}

	fail(code, reason) {
		this.close(code, reason);
		return null;
	}

	sendFrame(op, payload) {
		if (this.closed || this.socket.destroyed) return;
		const len = payload.length;
		let head;
		if (len < 126) {
			head = Buffer.from([0x80 | op, len]);
		} else if (len < 65536) {
			head = Buffer.alloc(4);
			head[0] = 0x80 | op;
			head[1] = 126;
			head.writeUInt16BE(len, 2);
		} else {
			head = Buffer.alloc(10);
			head[0] = 0x80 | op;
			head[1] = 127;
			head.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
			head.writeUInt32BE(len >>> 0, 6);
		}
		this.socket.write(Buffer.concat([head, payload]));
	}

	send(data) {
		if (typeof data === 'string') this.sendFrame(OP_TEXT, Buffer.from(data, 'utf8'));
		else this.sendFrame(OP_BINARY, data);
	}

	/* Bytes written but not yet sent: the caller stops reading its source above a bound. */
	get backlog() {
		return this.socket.writableLength;
	}

	close(code = CLOSE.NORMAL, reason = '') {
		if (this.closed) return;
		const valid = code >= 1000 && code < 5000 && ![1004, 1005, 1006].includes(code) &&
			      !(code > 1011 && code < 3000);
		const c = valid ? code : CLOSE.PROTOCOL;
		const r = Buffer.from(reason.slice(0, 100));
		const p = Buffer.alloc(2 + r.length);
		p.writeUInt16BE(c, 0);
		r.copy(p, 2);
		this.sendFrame(OP_CLOSE, p);
		this.socket.end();
		setTimeout(() => this.socket.destroy(), 2000).unref();
		this.finish(c);
	}

	finish(code) {
		if (this.closed) return;
		this.closed = true;
		this.buf = Buffer.alloc(0);
		this.emit('close', code);
	}
}
