// A terminal over a WebSocket: terms/NAME/out to the browser from the oldest byte the ring
// holds (so a reload replays the screen), binary messages to `in`, resize messages to `size`.
import { readFile } from 'node:fs/promises';
import { follow, parseStatus, Writer, Nudge } from './fsops.js';
import { CLOSE } from './ws.js';

const BACKLOG_MAX = 1 << 20;

/* Bridges ws to terminal `name` of session `id` (names checked by the caller's m.term). */
export async function bridgeTerminal(m, ws, id, name, { rows, cols }) {
	const ac = new AbortController();
	const nudge = new Nudge();
	let input = null, ready;
	const inputReady = new Promise((r) => (ready = r));
	/* Messages that come before `in` is open wait for it, in order. */
	ws.on('message', async (data, binary) => {
		const w = await inputReady;
		if (w) onMessage(m, ws, id, name, w, data, binary, nudge);
	});
	ws.on('close', () => {
		ac.abort();
		input?.close().catch(() => {});
	});
	try {
		const status = parseStatus((await readFile(m.term(id, name, 'status'))).toString());
		if (status.state === 'idle' && rows && cols) await m.resizeTerm(id, name, rows, cols);
		input = await Writer.open(m.term(id, name, 'in'));
		if (ac.signal.aborted) {
			ready(null);
			return void (await input.close());
		}
		/* As `sbxfs attach`: the first key starts the session's shell, and Ctrl-L has it
		 * draw its prompt. */
		if (status.state === 'idle') await input.write(Buffer.from('\x0c'));
		ready(input);
		const ended = await follow(m.term(id, name, 'out'), async (bytes) => {
			ws.send(bytes);
			while (ws.bufferedAmount > BACKLOG_MAX && !ac.signal.aborted) await new Promise((r) => setTimeout(r, 20));
		}, ac.signal, nudge);
		if (ended) {
			const exit = (await readFile(m.term(id, name, 'exit'))).toString().trim();
			ws.send(JSON.stringify({ type: 'exit', exit: exit === '' ? null : Number(exit) }));
			ws.close(CLOSE.NORMAL, 'ended');
		}
	} catch (e) {
		ready(null);
		ws.close(e.code === 'ENOENT' ? CLOSE.POLICY : CLOSE.ERROR, e.code ?? 'error');
	}
}

function onMessage(m, ws, id, name, input, data, binary, nudge) {
	const feed = async (bytes) => {
		try {
			await input.write(bytes);
			nudge.wake(); /* its echo is due */
		} catch (e) {
			ws.close(CLOSE.ERROR, e.code ?? 'input failed');
		}
	};
	if (binary) return void feed(data);
	let msg;
	try {
		msg = JSON.parse(data.toString('utf8'));
	} catch {
		return ws.close(CLOSE.BAD_DATA, 'bad JSON');
	}
	if (msg?.type === 'resize') {
		m.resizeTerm(id, name, msg.rows, msg.cols).catch(() => ws.send(JSON.stringify({ type: 'error', error: 'bad size' })));
	} else if (msg?.type === 'input' && typeof msg.data === 'string') {
		feed(Buffer.from(msg.data, 'utf8'));
	} else {
		ws.close(CLOSE.POLICY, 'unknown message');
	}
}

