// The HTTP server: the gates every request passes (Host, token or login cookie, Origin), the
// page and its vendored scripts from a fixed table, /api/ to api.js and terminal upgrades to
// terminal.js.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Auth, cookieName } from './auth.js';
import { handleApi, fail, pathParts } from './api.js';
import { Mount, checkName } from './fsops.js';
import { upgrader, refuseUpgrade } from './ws.js';
import { bridgeTerminal } from './terminal.js';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const xtermJs = require.resolve('@xterm/xterm');
const fitJs = require.resolve('@xterm/addon-fit');

/* URL -> [file, type]: the only files the server sends; no request path is ever joined. */
const STATIC = {
	'/': [join(here, '../public/index.html'), 'text/html; charset=utf-8'],
	'/app.js': [join(here, '../public/app.js'), 'text/javascript; charset=utf-8'],
	'/ansi.js': [join(here, '../public/ansi.js'), 'text/javascript; charset=utf-8'],
	'/observe.js': [join(here, '../public/observe.js'), 'text/javascript; charset=utf-8'],
	'/style.css': [join(here, '../public/style.css'), 'text/css; charset=utf-8'],
	/* The page names its icon; /favicon.ico is where a browser looks without the page. */
	'/favicon.svg': [join(here, '../public/favicon.svg'), 'image/svg+xml'],
	'/favicon.ico': [join(here, '../public/favicon.svg'), 'image/svg+xml'],
	'/vendor/xterm.js': [xtermJs, 'text/javascript; charset=utf-8'],
	'/vendor/xterm.css': [join(dirname(xtermJs), '../css/xterm.css'), 'text/css; charset=utf-8'],
	'/vendor/addon-fit.js': [fitJs, 'text/javascript; charset=utf-8'],
};

/* Scripts only from here; styles inline too (xterm.js writes a <style> of its theme); images
 * as data: for PNG results; HTML results live in sandboxed srcdoc iframes. */
export const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; frame-src 'self'; font-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HEADERS = {
	'Content-Security-Policy': CSP,
	'X-Content-Type-Options': 'nosniff',
	'Referrer-Policy': 'no-referrer',
	'X-Frame-Options': 'DENY',
	'Cross-Origin-Opener-Policy': 'same-origin',
	'Cross-Origin-Resource-Policy': 'same-origin',
};

/* A server over mountpoint; token: the --token-file token, or null (login URLs only). */
export function createWebServer({ mountpoint, token, loopback }) {
	const auth = new Auth({ token, loopback });
	const m = new Mount(mountpoint);
	const accept = upgrader();
	const server = createServer((req, res) => {
		for (const [k, v] of Object.entries(HEADERS)) res.setHeader(k, v);
		serve(auth, m, req, res).catch((e) => fail(res, e));
	});
	server.on('upgrade', (req, socket, head) => upgrade(auth, m, accept, req, socket, head));
	server.auth = auth;
	return server;
}

function refuse(res, status, message) {
	res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
	res.end(message + '\n');
}

/* Whether the path as sent has a '.' or '..' part, plain or encoded (URL() would resolve it
 * away, and a name is never one), or an escape that does not decode. */
function dotted(rawUrl) {
	try {
		return rawUrl.split('?')[0].split('/').some((p) => /^\.\.?$/.test(decodeURIComponent(p)));
	} catch {
		return true;
	}
}

async function serve(auth, m, req, res) {
	const url = new URL(req.url, 'http://x');
	if (!auth.hostAllowed(req)) return refuse(res, 421, 'this server answers only to a loopback host name');
	if (req.method === 'GET' && url.pathname.startsWith('/login/')) return login(auth, req, res, url.pathname.slice(7));
	if (!auth.authorized(req)) {
		res.setHeader('WWW-Authenticate', 'Bearer');
		return refuse(res, 401, 'a token is needed: open the login URL sbxfs-web printed, or send an Authorization: Bearer header');
	}
	if (dotted(req.url)) return refuse(res, 400, 'bad path');
	const changes = req.method !== 'GET' && req.method !== 'HEAD';
	if (!auth.originAllowed(req, { required: false }) && (changes || url.pathname.startsWith('/api/')))
		return refuse(res, 403, 'cross-origin request refused');
	if (url.pathname === '/api/login-url' && req.method === 'POST') {
		// The URL by the address this request came to (never its Host header, which the
		// client writes), and its path.
		const path = auth.loginPath();
		const local = req.socket.localAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
		const host = local.includes(':') ? `[${local}]` : local;
		res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
		return res.end(JSON.stringify({ url: `http://${host}:${req.socket.localPort}${path}`, path }));
	}
	if (url.pathname.startsWith('/api/')) return handleApi(m, req, res, url.pathname.slice(5));
	if (url.pathname === '/metrics' && req.method === 'GET') return metrics(m, res);
	const file = Object.hasOwn(STATIC, url.pathname) ? STATIC[url.pathname] : null;
	if (!file || (req.method !== 'GET' && req.method !== 'HEAD')) return refuse(res, 404, 'not found');
	const body = url.pathname === '/' ? await page(m, file[0]) : await readFile(file[0]);
	res.writeHead(200, { 'Content-Type': file[1], 'Cache-Control': 'no-cache' });
	res.end(req.method === 'HEAD' ? undefined : body);
}

/* The page with what its first paint needs from the mount: the Contexts section, shown at once
 * if the mount has contexts/ (app.js alone would show it only after its first requests). */
async function page(m, file) {
	const html = await readFile(file, 'utf8');
	if (!(await m.hasContexts())) return html;
	return html.replace('<section id="contexts-nav" hidden>', '<section id="contexts-nav">');
}

/* The mount's metrics file as it is, for a Prometheus scrape (with the token). */
async function metrics(m, res) {
	const body = await readFile(m.path('metrics'));
	res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Cache-Control': 'no-store' });
	res.end(body);
}

/* A one-time login path: sets the cookie and sends the browser to the page. */
function login(auth, req, res, secret) {
	const cookie = auth.useLogin(secret);
	if (!cookie) return refuse(res, 403, 'this login URL is unknown, used or expired');
	res.writeHead(303, {
		'Set-Cookie': `${cookieName(req)}=${cookie}; HttpOnly; SameSite=Strict; Path=/`,
		Location: '/',
		'Cache-Control': 'no-store',
	});
	res.end();
}

/* /ws/sessions/ID/terms/NAME?rows=R&cols=C: Host, token and a same-origin Origin required. */
function upgrade(auth, m, accept, req, socket, head) {
	socket.on('error', () => socket.destroy());
	if (!auth.hostAllowed(req)) return refuseUpgrade(socket, 421, 'Misdirected Request');
	if (!auth.authorized(req)) return refuseUpgrade(socket, 401, 'Unauthorized');
	if (!auth.originAllowed(req, { required: true })) return refuseUpgrade(socket, 403, 'Forbidden');
	const url = new URL(req.url, 'http://x');
	let parts;
	try {
		if (dotted(req.url)) throw new Error('bad path');
		parts = pathParts(url.pathname.replace(/^\//, ''));
		if (parts.length !== 5 || parts[0] !== 'ws' || parts[1] !== 'sessions' || parts[3] !== 'terms')
			throw new Error('no such endpoint');
		checkName(parts[2]);
		checkName(parts[4]);
	} catch {
		return refuseUpgrade(socket, 404, 'Not Found');
	}
	const size = (k) => Number.parseInt(url.searchParams.get(k) ?? '', 10) || 0;
	accept(req, socket, head, (ws) => bridgeTerminal(m, ws, parts[2], parts[4], { rows: size('rows'), cols: size('cols') }));
}
