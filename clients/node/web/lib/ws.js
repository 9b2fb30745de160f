// The WebSocket side of an upgrade: the `ws` package with this server's bounds (a message
// of at most 1 MiB, whole or in pieces; no compression; RFC 6455's version 13 only), and
// the plain HTTP refusal of an upgrade that a gate turned down.
import { WebSocketServer } from 'ws';

export const CLOSE = { NORMAL: 1000, BAD_DATA: 1007, POLICY: 1008, ERROR: 1011 };
export const MAX_MESSAGE = 1 << 20;

/* A function (req, socket, head, onOpen) that answers an upgrade: onOpen(ws) once it is
 * open, else a 400 (ws's own checks of the handshake, and the version). */
export function upgrader({ maxMessage = MAX_MESSAGE } = {}) {
	const wss = new WebSocketServer({
		noServer: true,
		clientTracking: false,
		maxPayload: maxMessage,
		/* RSV1 set by a client is then a protocol error, and no inflated message can
		 * outgrow the bound. */
		perMessageDeflate: false,
		/* A peer that does not answer our close frame holds its socket 2 s, not 30. */
		closeTimeout: 2000,
	});
	return (req, socket, head, onOpen) => {
		/* ws also takes the draft version 8, which no browser sends any more. */
		if (req.headers['sec-websocket-version'] !== '13') return refuseUpgrade(socket, 400, 'Bad Request');
		wss.handleUpgrade(req, socket, head, (ws) => {
			/* ws closes the connection with the error's code itself; an 'error' without a
			 * listener would be thrown. */
			ws.on('error', () => {});
			onOpen(ws);
		});
	};
}

export function refuseUpgrade(socket, status, text) {
	socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
