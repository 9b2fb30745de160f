#!/usr/bin/env node
// sbxfs-web: the command line (arguments, token, listener) around lib/server.js.
import { parseArgs } from 'node:util';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createWebServer } from '../lib/server.js';
import { isLoopback, readToken } from '../lib/auth.js';

const USAGE = `usage: sbxfs-web MOUNTPOINT [--listen HOST:PORT] [--token-file FILE]

A browser view of an sbxfs mount: sessions, commands and their live output, terminals,
background processes, interpreter contexts. Every action is a file operation on MOUNTPOINT.

  --listen HOST:PORT   address to listen on (default 127.0.0.1:8023; port 0 picks one)
  --token-file FILE    a token (16+ characters, no blanks) a program may send as an
                       "Authorization: Bearer TOKEN" header (POST /api/login-url with it gives
                       a new login URL). Required when HOST is not a loopback address.
  -h, --help           this help

Every request needs the cookie that the one-time login URL sets (or the bearer token), on
loopback too. It prints "listening on LOGIN-URL" once it listens: open that URL in the
browser, within 10 minutes; it works once.`;

function die(message) {
	process.stderr.write(`sbxfs-web: ${message}\n`);
	process.exit(2);
}

function parseListen(text) {
	const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
	if (!m || Number(m[2]) > 65535) die(`--listen: expected HOST:PORT, got ${JSON.stringify(text)}`);
	return { host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

let args;
try {
	args = parseArgs({
		allowPositionals: true,
		options: {
			listen: { type: 'string', default: '127.0.0.1:8023' },
			'token-file': { type: 'string' },
			help: { type: 'boolean', short: 'h' },
		},
	});
} catch (e) {
	die(`${e.message}\n${USAGE}`);
}
if (args.values.help) {
	process.stdout.write(USAGE + '\n');
	process.exit(0);
}
if (args.positionals.length !== 1) die(`one MOUNTPOINT expected\n${USAGE}`);
const mountpoint = resolve(args.positionals[0]);
try {
	if (!statSync(`${mountpoint}/sessions`).isDirectory()) throw new Error();
} catch {
	die(`${mountpoint}: not an sbxfs mount (no sessions/)`);
}
const { host, port } = parseListen(args.values.listen);
const loopback = isLoopback(host);
let token = null;
if (args.values['token-file']) {
	try {
		token = readToken(args.values['token-file']);
	} catch (e) {
		die(e.message);
	}
} else if (!loopback) {
	die(`${host} is not a loopback address: --token-file is required`);
}

const server = createWebServer({ mountpoint, token, loopback });
server.on('error', (e) => die(`${args.values.listen}: ${e.message}`));
server.listen(port, host, () => {
	const a = server.address();
	const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
	const base = `http://${h}:${a.port}`;
	process.stdout.write(`listening on ${base}${server.auth.loginPath()}\n`);
});
