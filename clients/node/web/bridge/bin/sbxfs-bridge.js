#!/usr/bin/env node
// sbxfs-bridge: the command line (arguments, tokens, TLS, listener) around lib/server.js.
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isLoopback } from '../../lib/auth.js';
import { createBridge } from '../lib/server.js';
import { Tokens } from '../lib/tokens.js';

const USAGE = `usage: sbxfs-bridge FLEET --tokens FILE [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE]

The Sandbox Bridge's HTTP API (/v1) over a fleet of sbxfs sandboxes (sbxfs-fleet FLEET), and the
whole tree of each sandbox under /v1/sandbox/ID/fs/. Every call is file operations on FLEET.

  --tokens FILE        bearer tokens, one per line "NAME SCOPE SECRET": SCOPE is * (the whole
                       fleet) or a sandbox id; SECRET has 16+ characters. Only its owner may
                       read it. Read again when it changes: remove a line to revoke a token.
  --listen HOST:PORT   address (default 127.0.0.1:8024; port 0 picks one). A HOST that is not
                       loopback needs --tls-cert and --tls-key, or --behind-proxy.
  --tls-cert FILE, --tls-key FILE
                       serve HTTPS with this certificate and key (PEM)
  --behind-proxy       serve plain HTTP on a non-loopback HOST (a TLS proxy in front)
  --max-body BYTES     the largest body of a PUT (default 1073741824)
  --peers URL,URL,...  a fleet across nodes: every node's bridge URL, in one order on all of
                       them; a request for a sandbox another node owns is forwarded there
  --self N             which of --peers this node is (from 0)
  --peer-ca FILE       the CA that signed the peers' certificates (https peers)
  --rate N             requests a second per token (default 50, bursts of N)
  --concurrent N       requests at once per token (default 32)
  -h, --help           this help

One line per request goes to stderr: time, token name, method, path, status, bytes, ms.`;

function die(message) {
	process.stderr.write(`sbxfs-bridge: ${message}\n`);
	process.exit(2);
}

function positive(name, text) {
	if (!/^[1-9][0-9]{0,12}$/.test(text)) die(`--${name}: a positive integer, got ${JSON.stringify(text)}`);
	return Number(text);
}

let args;
try {
	args = parseArgs({
		allowPositionals: true,
		options: {
			tokens: { type: 'string' },
			listen: { type: 'string', default: '127.0.0.1:8024' },
			'tls-cert': { type: 'string' },
			'tls-key': { type: 'string' },
			'behind-proxy': { type: 'boolean' },
			'max-body': { type: 'string', default: String(1 << 30) },
			rate: { type: 'string', default: '50' },
			peers: { type: 'string' },
			self: { type: 'string' },
			'peer-ca': { type: 'string' },
			concurrent: { type: 'string', default: '32' },
			help: { type: 'boolean', short: 'h' },
		},
	});
} catch (e) {
	die(`${e.message}\n${USAGE}`);
}
const v = args.values;
if (v.help) {
	process.stdout.write(USAGE + '\n');
	process.exit(0);
}
if (args.positionals.length !== 1) die(`one FLEET expected\n${USAGE}`);
const mount = resolve(args.positionals[0]);
try {
	if (!readFileSync(`${mount}/status`, 'utf8').startsWith('sandboxes ')) throw new Error();
	statSync(`${mount}/clone`);
} catch {
	die(`${mount}: not a fleet's mount (sbxfs-fleet; no status and clone in it)`);
}
if (!v.tokens) die('--tokens FILE is required: every call but /health needs a token');
let tokens;
try {
	tokens = new Tokens(v.tokens);
} catch (e) {
	die(e.message);
}
const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(v.listen);
if (!m || Number(m[2]) > 65535) die(`--listen: expected HOST:PORT, got ${JSON.stringify(v.listen)}`);
const host = m[1].replace(/^\[|\]$/g, ''), port = Number(m[2]);
const loopback = isLoopback(host);
if (Boolean(v['tls-cert']) !== Boolean(v['tls-key'])) die('--tls-cert and --tls-key go together');
let tls = null;
if (v['tls-cert']) {
	try {
		tls = { cert: readFileSync(v['tls-cert']), key: readFileSync(v['tls-key']) };
	} catch (e) {
		die(e.message);
	}
}
if (!loopback && !tls && !v['behind-proxy']) die(`${host} is not loopback: give --tls-cert and --tls-key, or --behind-proxy`);

let cluster = { peers: null, self: 0, ca: undefined };
if (v.peers !== undefined) {
	const peers = v.peers.split(',');
	for (const p of peers) {
		try {
			if (!/^https?:$/.test(new URL(p).protocol)) throw new Error();
		} catch {
			die(`--peers: ${JSON.stringify(p)} is not an http or https URL`);
		}
	}
	if (v.self === undefined || !/^(0|[1-9][0-9]{0,5})$/.test(v.self) || Number(v.self) >= peers.length)
		die(`--self: the index of this node in --peers (0 to ${peers.length - 1})`);
	let ca;
	if (v['peer-ca']) {
		try {
			ca = readFileSync(v['peer-ca']);
		} catch (e) {
			die(e.message);
		}
	}
	cluster = { peers, self: Number(v.self), ca };
} else if (v.self !== undefined) die('--self goes with --peers');
const server = createBridge({
	cluster,
	mount, tokens, loopback, tls,
	bodyMax: positive('max-body', v['max-body']),
	rate: positive('rate', v.rate),
	concurrent: positive('concurrent', v.concurrent),
	log: (line) => process.stderr.write(line),
});
server.on('error', (e) => die(`${v.listen}: ${e.message}`));
server.listen(port, host, () => {
	const a = server.address();
	const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
	process.stdout.write(`listening on ${tls ? 'https' : 'http'}://${h}:${a.port}\n`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 2000).unref());
