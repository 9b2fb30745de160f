// GET /v1/sandbox/ID/pty as the Bridge has it: a WebSocket to the session's terminal `pty`
// (terms/pty of the mount), made on first use and kept when the socket closes, so a reconnect
// replays what the terminal's ring holds. Binary frames carry the bytes both ways; text frames
// are JSON: resize in; ready, exit and error out.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Terminal } from '../../../index.js';
import { Writer } from '../../lib/fsops.js';
import { CLOSE } from '../../lib/ws.js';
import { Nudge, pump } from './stream.js';

const BACKLOG_MAX = 1 << 20;
export const PTY = 'pty';

/* The terminal, made if it is not there (running `shell` if given, else the session's own
 * shell, which the first byte of input starts). */
export async function ptyTerminal(session, { cols, rows, shell }) {
	const term = new Terminal(session, PTY);
	let made = false;
	try {
		await mkdir(term.dir);
		made = true;
	} catch (err) {
		if (err.code !== 'EEXIST') throw err;
	}
	if (made && cols && rows) await term.resize(cols, rows);
	if (made && shell) await term._write('cmd', `exec ${shell}\n`);
	return term;
}

function send(ws, msg) {
	if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
}

export async function bridgePty(ws, term) {
	const ac = new AbortController();
	const nudge = new Nudge();
	let input = null;
	const pending = [];
	ws.on('message', (data, binary) => {
		if (!binary) return control(data);
		if (input) feed(data);
		else pending.push(data);
	});
	ws.on('close', () => {
		ac.abort();
		input?.close().catch(() => {});
	});
	const feed = (bytes) => input.write(bytes).then(() => nudge.wake(), (e) => ws.close(CLOSE.ERROR, e.code ?? 'input failed'));
	const control = (data) => {
		let msg;
		try {
			msg = JSON.parse(data.toString('utf8'));
		} catch {
			return ws.close(CLOSE.BAD_DATA, 'bad JSON');
		}
		if (msg?.type !== 'resize') return send(ws, { type: 'error', message: 'unknown message' });
		const ok = (n) => Number.isInteger(n) && n >= 1 && n <= 1000;
		if (!ok(msg.cols) || !ok(msg.rows)) return send(ws, { type: 'error', message: 'bad size' });
		term.resize(msg.cols, msg.rows).catch((e) => send(ws, { type: 'error', message: `resize: ${e.errno ?? e.message}` }));
	};
	try {
		const idle = (await term.getStatus()).state === 'idle';
		input = await Writer.open(join(term.dir, 'in'));
		/* As `sbxfs attach`: the first key starts the session's shell; Ctrl-L draws its prompt. */
		if (idle) await input.write(Buffer.from('\x0c'));
		for (const b of pending.splice(0)) feed(b);
		send(ws, { type: 'ready' });
		const ended = await pump(join(term.dir, 'out'), async (bytes) => {
			ws.send(bytes);
			while (ws.bufferedAmount > BACKLOG_MAX && !ac.signal.aborted) await new Promise((r) => setTimeout(r, 20));
		}, { signal: ac.signal, nudge });
		if (ended) {
			const exit = (await readFile(join(term.dir, 'exit'), 'utf8').catch(() => '')).trim();
			send(ws, { type: 'exit', code: exit === '' ? null : Number(exit) });
			ws.close(CLOSE.NORMAL, 'ended');
		}
	} catch (e) {
		send(ws, { type: 'error', message: e.errno ?? e.code ?? 'error' });
		ws.close(CLOSE.ERROR, 'error');
	}
}
