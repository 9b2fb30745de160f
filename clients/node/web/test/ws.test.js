// lib/ws.js (ws with this server's settings) against frames a hostile client sends: an echo
// server on loopback, no mount.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { upgrader } from '../lib/ws.js';
import { RawWs } from './helpers.js';

const MAX = 4096;
let server, base;

before(async () => {
	const accept = upgrader({ maxMessage: MAX });
	server = createServer((req, res) => res.end());
	server.on('upgrade', (req, socket, head) => accept(req, socket, head, (ws) => {
		ws.on('message', (data, binary) => ws.send(binary ? data : `echo:${data.toString('utf8')}`));
	}));
	await new Promise((r) => server.listen(0, '127.0.0.1', r));
	base = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

async function open() {
	const ws = await RawWs.open(base, '/');
	assert.equal(ws.status, 101);
	return ws;
}

test('handshake, text and binary echo, ping answered with its payload', async () => {
	const ws = await open();
	ws.text('héllo');
	assert.deepEqual((await ws.frame()).payload.toString(), 'echo:héllo');
	ws.binary([0, 1, 255]);
	assert.deepEqual([...(await ws.frame()).payload], [0, 1, 255]);
	ws.sendFrame({ op: 9, payload: Buffer.from('p1') });
	const pong = await ws.frame();
	assert.equal(pong.op, 10);
	assert.equal(pong.payload.toString(), 'p1');
	ws.sendFrame({ op: 8, payload: Buffer.from([0x03, 0xe8]) });
	assert.equal(await ws.closeCode(), 1000);
	ws.destroy();
});

test('a fragmented message is put together, a ping between its pieces answered', async () => {
	const ws = await open();
	ws.sendFrame({ op: 1, fin: false, payload: Buffer.from('ab') });
	ws.sendFrame({ op: 9, payload: Buffer.from('x') });
	ws.sendFrame({ op: 0, fin: false, payload: Buffer.from('cd') });
	ws.sendFrame({ op: 0, fin: true, payload: Buffer.from('ef') });
	assert.equal((await ws.frame()).op, 10);
	assert.equal((await ws.frame()).payload.toString(), 'echo:abcdef');
	ws.destroy();
});

test('a 64 KiB-length frame in pieces of a few bytes arrives whole', async () => {
	const ws = await open();
	const body = Buffer.alloc(MAX, 7);
	const k = Buffer.from([1, 2, 3, 4]);
	const masked = Buffer.from(body.map((b, i) => b ^ k[i & 3]));
	const frame = Buffer.concat([Buffer.from([0x82, 0x80 | 126, MAX >> 8, MAX & 255]), k, masked]);
	for (let i = 0; i < frame.length; i += 1000) ws.sock.write(frame.subarray(i, i + 1000));
	assert.equal((await ws.frame()).payload.length, MAX);
	ws.destroy();
});

const BAD = [
	['an unmasked frame', { op: 1, payload: Buffer.from('x'), mask: false }, 1002],
	['reserved bits', { op: 1, payload: Buffer.from('x'), rsv: 4 }, 1002],
	['reserved bit 2', { op: 2, payload: Buffer.from('x'), rsv: 2 }, 1002],
	['reserved bit 3', { op: 2, payload: Buffer.from('x'), rsv: 1 }, 1002],
	['an unknown opcode', { op: 3, payload: Buffer.from('x') }, 1002],
	['a fragmented ping', { op: 9, fin: false }, 1002],
	['a control frame over 125 bytes', { op: 9, payload: Buffer.alloc(126) }, 1002],
	['a continuation with nothing to continue', { op: 0, payload: Buffer.from('x') }, 1002],
	['a frame longer than the bound', { op: 2, payload: Buffer.alloc(MAX + 1) }, 1009],
	['a 64-bit length of 2^40', { op: 2, len: 2 ** 40 }, 1009],
	['text that is not UTF-8', { op: 1, payload: Buffer.from([0xc3, 0x28]) }, 1007],
	['a close frame of one byte', { op: 8, payload: Buffer.from([3]) }, 1002],
	['a close frame with a code no peer may send', { op: 8, payload: Buffer.from([0x03, 0xed]) }, 1002],
];

for (const [what, frame, code] of BAD) {
	test(`${what} closes with ${code}`, async () => {
		const ws = await open();
		ws.sendFrame(frame);
		assert.equal(await ws.closeCode(), code);
		await ws.until(() => (ws.ended ? true : null));
	});
}

test('pieces that together pass the bound close with 1009', async () => {
	const ws = await open();
	ws.sendFrame({ op: 2, fin: false, payload: Buffer.alloc(MAX) });
	ws.sendFrame({ op: 0, fin: true, payload: Buffer.alloc(1) });
	assert.equal(await ws.closeCode(), 1009);
	ws.destroy();
});

test('a new message inside a fragmented one closes with 1002', async () => {
	const ws = await open();
	ws.sendFrame({ op: 1, fin: false, payload: Buffer.from('a') });
	ws.sendFrame({ op: 1, payload: Buffer.from('b') });
	assert.equal(await ws.closeCode(), 1002);
	ws.destroy();
});

test('a bad handshake (no key, wrong version) is a 400', async () => {
	for (const h of [{ 'Sec-WebSocket-Key': null }, { 'Sec-WebSocket-Version': '8' }, { 'Sec-WebSocket-Key': 'short' }]) {
		const ws = await RawWs.open(base, '/', h);
		assert.equal(ws.status, 400);
		ws.destroy();
	}
});
