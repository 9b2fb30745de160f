// A fleet across nodes (docs/api.md, examples/kubernetes/fleet/): every node runs a fleet and a
// bridge, and knows the others' URLs in one order (--peers); a sandbox id belongs to one node, the
// one of highest rendezvous weight for it, so any node can answer any request: it serves the ids
// that are its own and forwards the others to their node, byte for byte both ways (a WebSocket
// too). Adding a node moves only the ids that now weigh most on it. A forwarded request is marked,
// and a node serves a marked request itself, so two nodes whose lists differ never pass one back
// and forth.
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export const FORWARDED = 'x-sbxfs-forwarded';

/* The index in `peers` (URLs) of the node that owns sandbox `id`. */
export function ownerOf(id, peers) {
	let best = -1, bestWeight = null;
	peers.forEach((peer, i) => {
		const w = createHash('sha256').update(`${peer}\n${id}`).digest();
		if (bestWeight === null || Buffer.compare(w, bestWeight) > 0) {
			best = i;
			bestWeight = w;
		}
	});
	return best;
}

/* The peer URL to forward a request for `id` to, or null when it is ours to serve. */
export function forwardTarget(req, id, { peers, self }) {
	if (!peers || id === undefined || req.headers[FORWARDED] !== undefined) return null;
	const owner = ownerOf(id, peers);
	return owner === self ? null : new URL(peers[owner]);
}

function headersFor(req, target) {
	const h = { ...req.headers, host: target.host, [FORWARDED]: '1' };
	delete h.connection;
	delete h['keep-alive'];
	return h;
}

/* The request, its body streamed, to `target`; its answer streamed back. */
export function forward(req, res, target, { ca } = {}) {
	return new Promise((resolve) => {
		const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
		const up = send({ host: target.hostname, port: target.port, method: req.method, path: req.url,
			headers: headersFor(req, target), ca }, (answer) => {
			res.writeHead(answer.statusCode, answer.headers);
			answer.pipe(res);
			answer.on('end', resolve);
			answer.on('error', () => res.destroy());
		});
		up.on('error', (e) => {
			if (!res.headersSent) {
				const body = JSON.stringify({ error: `the sandbox's node did not answer: ${e.code ?? e.message}`, code: 'exec_transport_error' });
				res.writeHead(502, { 'Content-Type': 'application/json' });
				res.end(body);
			} else res.destroy();
			resolve();
		});
		res.on('close', () => up.destroy());
		req.pipe(up);
	});
}

/* An upgrade (the PTY's WebSocket) to `target`: its request head written there, then the two
 * sockets joined. */
export function forwardUpgrade(req, socket, head, target, { ca } = {}) {
	const opts = { host: target.hostname, port: Number(target.port) || (target.protocol === 'https:' ? 443 : 80) };
	const up = target.protocol === 'https:' ? tlsConnect({ ...opts, servername: target.hostname, ca }) : connect(opts);
	up.on(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
		const h = { ...req.headers, host: target.host, [FORWARDED]: '1' };
		let text = `${req.method} ${req.url} HTTP/1.1\r\n`;
		for (const [k, v] of Object.entries(h)) for (const one of [].concat(v)) text += `${k}: ${one}\r\n`;
		up.write(text + '\r\n');
		if (head?.length) up.write(head);
		up.pipe(socket);
		socket.pipe(up);
	});
	up.on('error', () => socket.destroy());
	socket.on('error', () => up.destroy());
	socket.on('close', () => up.destroy());
}
