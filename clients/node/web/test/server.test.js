// sbxfs-web's HTTP API, terminal WebSocket and gates against a real mount.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, symlinkSync, mkdtempSync, rmSync, readFileSync, existsSync, readdirSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startMount, startWeb, login, runWeb, RawWs, waitFor, requestsAs, NOBODY, freePort } from './helpers.js';

let mount, web, cookie;
const S = `web-${randomBytes(4).toString('hex')}`;

before(async () => {
	mount = await startMount();
	web = await startWeb(mount.mnt);
	cookie = await login(web.url);
});

after(async () => {
	if (web) await req(web.base, 'DELETE', `/api/sessions/${S}`);
	await web?.stop();
	await mount?.stop();
});

/* Headers with the login cookie of the suite's server unless they set Cookie; a header set
 * to null is not sent. */
function withCookie(headers = {}) {
	return { Cookie: cookie, ...headers };
}

/* A raw request (fetch would normalise the path and refuse some headers); to the suite's
 * server, with its login cookie (see withCookie). */
function req(base, method, path, { headers = {}, body } = {}) {
	const u = new URL(base);
	const h = Object.fromEntries(Object.entries(base === web.base ? withCookie(headers) : headers).filter(([, v]) => v !== null));
	return new Promise((resolve, reject) => {
		const r = request({ host: u.hostname, port: u.port, method, path, headers: h, agent: false }, (res) => {
			const chunks = [];
			res.on('error', () => {}); /* a reset after a refusal (413) is the server's right */
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => {
				const text = Buffer.concat(chunks).toString();
				let json;
				try {
					json = JSON.parse(text);
				} catch {}
				resolve({ status: res.statusCode, headers: res.headers, text, json });
			});
		});
		r.on('error', reject); /* after the response (a 413's reset of the rest): no effect */
		r.end(body === undefined ? undefined : JSON.stringify(body));
	});
}

const JSONH = { 'Content-Type': 'application/json' };
const post = (path, body, headers = {}) => req(web.base, 'POST', path, { headers: { ...JSONH, ...headers }, body });
const get = (path, headers) => req(web.base, 'GET', path, { headers });
const wsOpen = (path, headers) => RawWs.open(web.base, path, withCookie(headers));

/* The SSE events of a stream URL until it ends: [{event, data}]. */
async function events(path) {
	const res = await fetch(web.base + path, { headers: withCookie() });
	assert.equal(res.status, 200);
	const text = await res.text();
	return text.split('\n\n').filter(Boolean).map((block) => {
		const [e, d] = block.split('\n');
		return { event: e.slice(7), data: JSON.parse(d.slice(6)) };
	});
}

test('the page has a CSP and the vendored xterm.js is served', async () => {
	const page = await get('/');
	assert.equal(page.status, 200);
	assert.match(page.headers['content-security-policy'], /script-src 'self';/);
	assert.match(page.headers['content-security-policy'], /frame-ancestors 'none'/);
	assert.equal(page.headers['x-content-type-options'], 'nosniff');
	const xterm = await get('/vendor/xterm.js');
	assert.equal(xterm.status, 200);
	assert.match(xterm.text, /Terminal/);
	assert.equal((await get('/vendor/../package.json')).status, 400);
	assert.equal((await get('/node_modules/@xterm/xterm/package.json')).status, 404);
});

test('sessions: create, list with state/cwd/command, exec streamed, history, delete', async () => {
	assert.deepEqual((await post('/api/sessions', { id: S })).json, { id: S });
	assert.equal((await post('/api/sessions', { id: S })).status, 409);
	const clone = (await post('/api/sessions', {})).json.id;
	assert.match(clone, /^s\d+$/);
	const run = (await post(`/api/sessions/${S}/exec`, { command: 'printf "\\e[32mgreen\\e[0m\\n"; echo oops >&2; exit 3' })).json.run;
	assert.equal(run, 1);
	const ev = await events(`/api/sessions/${S}/runs/${run}/stream`);
	const out = ev.filter((e) => e.event === 'out');
	assert.equal(out.filter((e) => e.data.s === 'stdout').map((e) => e.data.d).join(''), '\x1b[32mgreen\x1b[0m\n');
	assert.equal(out.filter((e) => e.data.s === 'stderr').map((e) => e.data.d).join(''), 'oops\n');
	const end = ev.at(-1);
	assert.equal(end.event, 'end');
	assert.equal(end.data.exit, 3);
	assert.ok(end.data.duration >= 0 && end.data.duration < 10);
	const list = (await get('/api/sessions')).json;
	const mine = list.find((s) => s.id === S);
	assert.equal(mine.state, 'idle');
	assert.match(mine.command, /green/);
	assert.ok(mine.cwd.length > 0);
	const runs = (await get(`/api/sessions/${S}/runs`)).json;
	assert.deepEqual(runs.map((r) => [r.n, r.exit]), [[1, 3]]);
	assert.equal((await req(web.base, 'DELETE', `/api/sessions/${clone}`)).status, 204);
	assert.ok(!existsSync(join(mount.mnt, 'sessions', clone)));
	assert.equal((await req(web.base, 'DELETE', '/api/sessions/default')).status, 409);
});

test('errors: the errno\'s status, and no host path in the message', async () => {
	for (const [method, path, status] of [['GET', '/api/sessions/nope/runs', 404], ['DELETE', '/api/sessions/nope', 404],
		['GET', `/api/sessions/${S}/runs/99`, 404], ['POST', `/api/sessions/${S}/procs/nope/kill`, 404],
		['POST', '/api/sessions', 409], ['POST', `/api/sessions/${S}/terms`, 400]]) {
		const body = method === 'POST' ? (path === '/api/sessions' ? { id: S } : { name: 'a/b' }) : undefined;
		const r = await req(web.base, method, path, { headers: body ? JSONH : {}, body });
		assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
		assert.ok(!r.text.includes(mount.mnt), `${method} ${path} names the mount: ${r.text}`);
		assert.equal(typeof r.json.error, 'string');
	}
});

test('a command printing for 2 s streams its lines as they come', async () => {
	const run = (await post(`/api/sessions/${S}/exec`, { command: 'for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done' })).json.run;
	const res = await fetch(`${web.base}/api/sessions/${S}/runs/${run}/stream`, { headers: withCookie() });
	const reader = res.body.getReader();
	const seen = [];
	const t0 = Date.now();
	let text = '';
	while (!text.includes('event: end')) {
		const { value, done } = await reader.read();
		if (done) break;
		text += Buffer.from(value).toString();
		for (const m of text.matchAll(/line(\d)/g)) if (!seen.some((s) => s.n === m[1])) seen.push({ n: m[1], t: Date.now() - t0 });
	}
	assert.deepEqual(seen.map((s) => s.n), ['1', '2', '3', '4', '5']);
	assert.ok(seen[4].t - seen[0].t > 800, `lines came over ${seen[4].t - seen[0].t} ms, not at once`);
});

test('kill ends the running command', async () => {
	const run = (await post(`/api/sessions/${S}/exec`, { command: 'sleep 1000' })).json.run;
	await waitFor(async () => (await get(`/api/sessions/${S}/runs/${run}`)).json.state === 'running', 'the command to run');
	assert.equal((await post(`/api/sessions/${S}/kill`, {})).status, 204);
	const end = (await events(`/api/sessions/${S}/runs/${run}/stream`)).at(-1);
	assert.equal(end.data.exit, 143);
});

/* The server's descriptors open on files under dir. */
function openUnder(dir) {
	const fds = `/proc/${web.proc.pid}/fd`;
	return readdirSync(fds).filter((fd) => {
		try {
			return readlinkSync(`${fds}/${fd}`).startsWith(dir);
		} catch {
			return false;
		}
	}).length;
}

test('a stream whose browser goes away releases its files; the command runs on', async () => {
	const run = (await post(`/api/sessions/${S}/exec`, { command: 'sleep 1000' })).json.run;
	const dir = join(mount.mnt, 'sessions', S, 'runs', String(run));
	const r = request({ host: '127.0.0.1', port: new URL(web.base).port, path: `/api/sessions/${S}/runs/${run}/stream`, headers: withCookie(), agent: false });
	const res = await new Promise((resolve) => r.on('response', resolve).end());
	assert.equal(res.statusCode, 200);
	await waitFor(() => openUnder(dir) === 2, 'stdout and stderr open');
	r.destroy();
	await waitFor(() => openUnder(dir) === 0, 'the files closed');
	assert.equal((await get(`/api/sessions/${S}/runs/${run}`)).json.state, 'running');
	await post(`/api/sessions/${S}/kill`, {});
});

const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${web.proc.pid}/status`, 'utf8'))[1]);

test('a browser that does not read holds the output back: the server does not buffer it', async () => {
	const run = (await post(`/api/sessions/${S}/exec`, { command: 'head -c 150000000 /dev/zero | tr "\\0" a' })).json.run;
	await waitFor(async () => (await get(`/api/sessions/${S}/runs/${run}`)).json.state === 'done', 'the command', 60000);
	const before = rssKiB();
	const r = request({ host: '127.0.0.1', port: new URL(web.base).port, path: `/api/sessions/${S}/runs/${run}/stream`, headers: withCookie(), agent: false });
	const res = await new Promise((resolve) => r.on('response', resolve).end());
	res.pause();
	await new Promise((resolve) => setTimeout(resolve, 1500));
	const grown = rssKiB() - before;
	r.destroy();
	assert.ok(grown < 64 * 1024, `the server grew by ${grown} KiB for 150 MB of output not read`);
});

test('background processes: start, status, logs, kill, remove', async () => {
	assert.equal((await post(`/api/sessions/${S}/procs`, { name: 'p', command: 'echo started; echo warn >&2; exec sleep 1000' })).status, 204);
	await waitFor(async () => (await get(`/api/sessions/${S}/procs/p/logs`)).json.stdout === 'started\n', 'the log');
	assert.equal((await get(`/api/sessions/${S}/procs/p/logs`)).json.stderr, 'warn\n');
	const [p] = (await get(`/api/sessions/${S}/procs`)).json;
	assert.equal(p.name, 'p');
	assert.equal(p.state, 'running');
	assert.deepEqual(p.ports, []);
	assert.equal((await post(`/api/sessions/${S}/procs/p/kill`, {})).status, 204);
	await waitFor(async () => (await get(`/api/sessions/${S}/procs`)).json[0].state === 'killed', 'state killed');
	assert.equal((await req(web.base, 'DELETE', `/api/sessions/${S}/procs/p`)).status, 204);
	assert.deepEqual((await get(`/api/sessions/${S}/procs`)).json, []);
});

test('exposed ports: expose a process\'s port, list it with its link, fetch through it, unexpose', async () => {
	const port = await freePort();
	const file = `exposed-${randomBytes(3).toString('hex')}.txt`;
	writeFileSync(join(mount.mnt, 'workspace', file), 'through the port\n');
	assert.equal((await post(`/api/sessions/${S}/procs`, { name: 'web', command: `exec python3 -m http.server ${port} --bind 127.0.0.1` })).status, 204);
	try {
		await waitFor(async () => (await get(`/api/sessions/${S}/procs`)).json.find((p) => p.name === 'web')?.ports.includes(port), 'the server to listen');
		const made = await post('/api/ports', { port, name: 'site' });
		assert.equal(made.status, 200, made.text);
		assert.deepEqual(Object.keys(made.json).sort(), ['name', 'port', 'url']);
		assert.match(made.json.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
		assert.deepEqual((await get('/api/ports')).json, [{ port, url: made.json.url, name: 'site' }]);
		const res = await fetch(made.json.url + file);
		assert.equal(await res.text(), 'through the port\n');
		assert.equal((await post('/api/ports', { port })).status, 409);
		for (const bad of [0, 65536, '80', 1.5, null]) assert.equal((await post('/api/ports', { port: bad })).status, 400, String(bad));
		assert.equal((await post('/api/ports', { port: port === 65535 ? 1 : port + 1, name: 'a\nb' })).status, 400);
		assert.equal((await req(web.base, 'DELETE', '/api/ports/abc')).status, 400);
		assert.equal((await req(web.base, 'DELETE', `/api/ports/${port}`)).status, 204);
		assert.equal((await req(web.base, 'DELETE', `/api/ports/${port}`)).status, 404);
		assert.deepEqual((await get('/api/ports')).json, []);
	} finally {
		await req(web.base, 'DELETE', `/api/sessions/${S}/procs/web`);
	}
});

test('network: the mode, the rules and the log\'s last lines; a new policy, a bad one refused whole', async () => {
	const net = await get('/api/network');
	assert.equal(net.status, 200, net.text);
	assert.deepEqual(Object.keys(net.json).sort(), ['allow', 'deny', 'log', 'mode']);
	assert.ok(Array.isArray(net.json.log));
	if (net.json.mode === 'host') {
		// --isolation none: the host's network, which no rule decides.
		assert.equal((await post('/api/network', { allow: [], deny: ['denied.example'] })).status, 409);
		return;
	}
	const policy = { mode: 'none', allow: [{ pattern: 'registry.example', private: true }], deny: ['denied.example'] };
	assert.equal((await post('/api/network', policy)).status, 204);
	try {
		const { json } = await get('/api/network');
		assert.deepEqual({ mode: json.mode, allow: json.allow, deny: json.deny }, policy);
		assert.equal((await post('/api/network', { mode: 'none', allow: ['*.*'], deny: [] })).status, 400);
		assert.equal((await post('/api/network', { mode: 'none', allow: [], deny: ['a\nallow *'] })).status, 400);
		assert.equal((await post('/api/network', { mode: 'none', allow: 'x', deny: [] })).status, 400);
		assert.equal((await post('/api/network', { mode: 'host', allow: [], deny: [] })).status, 409);
		const after = (await get('/api/network')).json;
		assert.deepEqual({ mode: after.mode, allow: after.allow, deny: after.deny }, policy);
		if (process.getuid() !== 0) return; // no proxy: nothing is logged
		const run = await post('/api/sessions/default/exec', { command: 'curl -s -o /dev/null -x "$HTTP_PROXY" http://denied.example/' });
		assert.equal(run.status, 200, run.text);
		const entry = await waitFor(async () => (await get('/api/network')).json.log.find((e) => e.target === 'denied.example:80' && e.session === 'default'), 'the log line');
		assert.equal(entry.decision, 'deny');
		assert.equal(entry.reason, 'mode none'); // mode none refuses before any rule
		// A SOCKS5 host name made to read as an allowed connection: one field, denied.
		const forged = 'bank.example 93.184.216.34 allow 4096 1048576 250 allow bank.example';
		const py = 'import os,socket;u=os.environ["ALL_PROXY"];p=int(u.rsplit(":",1)[1]);k=u.split(":")[2].split("@")[0].encode();' +
			'n=bytes.fromhex(os.environ["N"]);s=socket.create_connection(("127.0.0.1",p));s.sendall(b"\\x05\\x01\\x02");s.recv(2);' +
			's.sendall(b"\\x01\\x05sbxfs"+bytes([len(k)])+k);s.recv(2);s.sendall(b"\\x05\\x01\\x00\\x03"+bytes([len(n)])+n+b"\\x01\\xbb");s.recv(10)';
		const forge = await post('/api/sessions/default/exec', { command: `N=${Buffer.from(forged).toString('hex')} python3 -c '${py}'` });
		assert.equal(forge.status, 200, forge.text);
		const shown = await waitFor(async () => (await get('/api/network')).json.log.find((e) => e.target === `${forged}:0`), 'the forged line');
		assert.equal(shown.decision, 'deny');
		assert.equal(shown.reason, 'malformed SOCKS request');
		assert.ok(!(await get('/api/network')).json.log.some((e) => e.decision === 'allow' && e.target.startsWith('bank.example')));
	} finally {
		await post('/api/network', { mode: 'none', allow: [], deny: [] });
	}
});

test('journal and metrics: the last events by session and kind, the samples, /metrics for a scrape', async () => {
	const run = await post('/api/sessions/default/exec', { command: 'echo journal-web' });
	assert.equal(run.status, 200, run.text);
	const ended = await waitFor(async () => (await get('/api/journal?session=default&kind=cmd.end')).json.find((e) => e.run === run.json.run), 'the command\'s end');
	assert.equal(ended.stdout_bytes, 'journal-web\n'.length);
	const all = (await get('/api/journal?kind=cmd.')).json;
	assert.ok(all.length && all.every((e) => e.kind.startsWith('cmd.')));
	assert.equal((await get('/api/journal?kind=' + encodeURIComponent('x"y'))).status, 400);
	assert.equal((await get('/api/journal?session=..')).status, 400);
	const samples = (await get('/api/metrics')).json;
	assert.ok(samples.some((s) => s.name === 'sbxfs_memory_bytes' && s.labels.session === 'default'));
	const scrape = await get('/metrics');
	assert.equal(scrape.status, 200);
	assert.match(scrape.headers['content-type'], /^text\/plain; version=0\.0\.4/);
	assert.match(scrape.text, /^# HELP sbxfs_cpu_seconds_total /m);
	const bare = await req(web.base, 'GET', '/metrics', { headers: { Cookie: null } });
	assert.equal(bare.status, 401, 'a scrape needs the token');
});

test('snapshots: take, list, restore (busy: 409, then forced), delete', async () => {
	writeFileSync(join(mount.mnt, 'workspace', 'snap-web.txt'), 'before\n');
	assert.deepEqual((await post('/api/snapshots', { name: 'w1' })).json, { name: 'w1' });
	assert.equal((await post('/api/snapshots', { name: 'w1' })).status, 409);
	const clone = (await post('/api/snapshots', {})).json.name;
	const list = (await get('/api/snapshots')).json;
	assert.deepEqual(list.map((s) => s.name).sort(), [clone, 'w1'].sort());
	assert.ok(list.every((s) => s.state === 'ready' && /^\d{4}-/.test(s.time)));
	writeFileSync(join(mount.mnt, 'workspace', 'snap-web.txt'), 'after\n');
	assert.equal((await post(`/api/sessions/${S}/procs`, { name: 'busy', command: 'exec sleep 1000' })).status, 204);
	await waitFor(async () => (await get(`/api/sessions/${S}/procs`)).json[0]?.state === 'running', 'the process');
	assert.equal((await post('/api/snapshots/w1/restore', {})).status, 409);
	assert.equal((await post('/api/snapshots/w1/restore', { force: true })).status, 204);
	assert.equal(readFileSync(join(mount.mnt, 'workspace', 'snap-web.txt'), 'utf8'), 'before\n');
	assert.equal((await req(web.base, 'DELETE', `/api/sessions/${S}/procs/busy`)).status, 204);
	for (const name of [clone, 'w1']) assert.equal((await req(web.base, 'DELETE', `/api/snapshots/${name}`)).status, 204);
	assert.deepEqual((await get('/api/snapshots')).json, []);
	assert.equal((await post('/api/snapshots/..%2Fx/restore', {})).status, 400);
});

test('terminal: keys in, output out, replay on reconnect, resize, end', async () => {
	assert.equal((await post(`/api/sessions/${S}/terms`, { name: 't1' })).status, 204);
	let ws = await wsOpen(`/ws/sessions/${S}/terms/t1?rows=30&cols=100`);
	assert.equal(ws.status, 101);
	ws.binary(Buffer.from('echo web-$((6*7))\r'));
	await ws.readUntil(/web-42/);
	ws.destroy();
	assert.equal(readFileSync(join(mount.mnt, 'sessions', S, 'terms/t1/size'), 'utf8'), '30 100\n');
	ws = await wsOpen(`/ws/sessions/${S}/terms/t1`);
	await ws.readUntil(/echo web-\$\(\(6\*7\)\)[\s\S]*web-42/);
	ws.text(JSON.stringify({ type: 'resize', rows: 20, cols: 60 }));
	await waitFor(() => readFileSync(join(mount.mnt, 'sessions', S, 'terms/t1/size'), 'utf8') === '20 60\n', 'the new size');
	ws.binary(Buffer.from('stty size\r'));
	await ws.readUntil(/20 60/);
	ws.binary(Buffer.from('exit 5\r'));
	await ws.readUntil(/"type":"exit","exit":5/);
	assert.equal(await ws.closeCode(), 1000);
	ws.destroy();
});

test('a browser that does not read its terminal holds the output back: the server does not buffer it', async () => {
	await post(`/api/sessions/${S}/terms`, { name: 'flood' });
	const ws = await wsOpen(`/ws/sessions/${S}/terms/flood`);
	ws.binary(Buffer.from('head -c 60000000 /dev/zero | tr "\\0" a\r'));
	await ws.readUntil(/aaaa/);
	ws.sock.pause();
	const before = rssKiB();
	await new Promise((resolve) => setTimeout(resolve, 4000));
	const grown = rssKiB() - before;
	ws.sock.resume();
	ws.destroy();
	assert.ok(grown < 12 * 1024, `the server grew by ${grown} KiB for a terminal not read`);
	assert.equal((await req(web.base, 'DELETE', `/api/sessions/${S}/terms/flood`)).status, 204);
});

test('a terminal WebSocket with a bad message is closed, one to a missing terminal too', async () => {
	await post(`/api/sessions/${S}/terms`, { name: 't2' });
	let ws = await wsOpen(`/ws/sessions/${S}/terms/t2`);
	ws.text('{"type":"resize","rows":0,"cols":5}');
	assert.match((await ws.frame()).payload.toString(), /bad size/);
	ws.text('not json');
	assert.equal(await ws.closeCode(), 1007);
	ws = await wsOpen(`/ws/sessions/${S}/terms/nope`);
	assert.equal(await ws.closeCode(), 1008);
	ws = await wsOpen(`/ws/sessions/..%2F..%2Fetc/terms/x`);
	assert.equal(ws.status, 404);
});

test('the WebSocket checks Origin (missing or another site: 403)', async () => {
	for (const origin of ['http://evil.example', null, `http://localhost:1`]) {
		const ws = await wsOpen(`/ws/sessions/${S}/terms/t2`, { Origin: origin });
		assert.equal(ws.status, 403, `Origin ${origin}`);
		ws.destroy();
	}
});

test('a message of 1 MiB is taken, one byte more closes the WebSocket with 1009', async () => {
	await post(`/api/sessions/${S}/terms`, { name: 'big' });
	let ws = await wsOpen(`/ws/sessions/${S}/terms/big`);
	const pad = '{"type":"pad","x":""}';
	ws.text(pad.slice(0, -2) + 'x'.repeat((1 << 20) - pad.length) + '"}');
	assert.equal(await ws.closeCode(), 1008, 'a whole 1 MiB message reaches the terminal (unknown type)');
	ws.destroy();
	ws = await wsOpen(`/ws/sessions/${S}/terms/big`);
	ws.binary(Buffer.alloc((1 << 20) + 1, 0x20));
	assert.equal(await ws.closeCode(), 1009);
	ws.destroy();
	assert.equal((await req(web.base, 'DELETE', `/api/sessions/${S}/terms/big`)).status, 204);
});

test('on loopback too, nothing is served without the login cookie, even to the server\'s uid', async () => {
	for (const path of ['/', '/app.js', '/api/sessions', '/api/workspace/', `/api/sessions/${S}/runs`]) {
		const r = await get(path, { Cookie: null });
		assert.equal(r.status, 401, path);
		assert.equal(r.headers['www-authenticate'], 'Bearer');
	}
	assert.equal((await post(`/api/sessions/${S}/exec`, { command: 'true' }, { Cookie: null })).status, 401);
	assert.equal((await get('/api/sessions', { Cookie: null, Authorization: `Bearer ${randomBytes(24).toString('hex')}` })).status, 401);
	assert.equal((await get('/api/sessions', { Cookie: `${cookie.split('=')[0]}=${randomBytes(32).toString('base64url')}` })).status, 401);
	const ws = await wsOpen(`/ws/sessions/${S}/terms/t2`, { Cookie: null });
	assert.equal(ws.status, 401);
	ws.destroy();
});

test('another account (nobody) gets nothing without the login URL, all it asks with it', { skip: process.getuid() !== 0 && 'setpriv needs root' }, async () => {
	const w = await startWeb(mount.mnt);
	const wsDir = join(mount.mnt, 'workspace');
	const mark = `nobody-${randomBytes(4).toString('hex')}`;
	const secret = `${mark}.txt`;
	await waitFor(() => {
		try {
			writeFileSync(join(wsDir, secret), 'ROOT-ONLY', { mode: 0o600 });
			return true;
		} catch {
			return false;
		}
	}, 'the workspace');
	await post(`/api/sessions/${S}/terms`, { name: 'tn' });
	const runsBefore = (await get(`/api/sessions/${S}/runs`)).json.length;
	const name = `sbxfs_web_${new URL(w.base).port}`;
	const term = `/ws/sessions/${S}/terms/tn`;
	try {
		/* one request of each route class, as a browser or a script of that account sends it */
		const routes = [
			{ method: 'GET', path: '/' }, { method: 'HEAD', path: '/' }, { method: 'GET', path: '/app.js' },
			{ method: 'GET', path: '/vendor/xterm.js' }, { method: 'GET', path: '/nope' },
			{ method: 'GET', path: '/api/info' }, { method: 'GET', path: '/api/sessions' },
			{ method: 'GET', path: `/api/sessions/${S}/runs` }, { method: 'GET', path: `/api/sessions/${S}/runs/1` },
			{ method: 'GET', path: `/api/sessions/${S}/runs/1/stream` }, { method: 'GET', path: `/api/sessions/${S}/procs` },
			{ method: 'GET', path: `/api/sessions/${S}/procs/p/logs` }, { method: 'GET', path: `/api/sessions/${S}/terms` },
			{ method: 'GET', path: '/api/contexts' }, { method: 'GET', path: '/api/contexts/c/cells/1/stream' },
			{ method: 'GET', path: '/api/workspace/' }, { method: 'GET', path: `/api/workspace/${secret}` },
			{ method: 'GET', path: '/api/workspace/../../etc/shadow' },
			{ method: 'POST', path: '/api/sessions', body: { id: mark } },
			{ method: 'POST', path: `/api/sessions/${S}/exec`, body: { command: `touch /workspace/${mark}` } },
			{ method: 'POST', path: `/api/sessions/${S}/kill`, body: {} },
			{ method: 'POST', path: `/api/sessions/${S}/procs`, body: { name: mark, command: 'sleep 100' } },
			{ method: 'POST', path: `/api/sessions/${S}/procs/p/kill`, body: {} },
			{ method: 'POST', path: `/api/sessions/${S}/terms`, body: { name: mark } },
			{ method: 'POST', path: '/api/contexts', body: { name: mark, language: 'python' } },
			{ method: 'POST', path: '/api/contexts/c/run', body: { code: '1' } },
			{ method: 'POST', path: '/api/login-url', body: {} },
			{ method: 'DELETE', path: `/api/sessions/${S}` }, { method: 'DELETE', path: `/api/sessions/${S}/terms/tn` },
			{ method: 'DELETE', path: `/api/sessions/${S}/procs/p` }, { method: 'DELETE', path: '/api/contexts/c' },
			{ method: 'WS', path: term },
		];
		const forged = randomBytes(32).toString('base64url');
		const wrong = [
			{ method: 'GET', path: '/api/sessions', headers: { Authorization: `Bearer ${randomBytes(24).toString('hex')}` } },
			{ method: 'GET', path: `/api/workspace/${secret}`, headers: { Cookie: `${name}=${forged}` } },
			{ method: 'POST', path: `/api/sessions/${S}/exec`, headers: { Cookie: `${name}=${forged}` }, body: { command: `touch /workspace/${mark}` } },
			{ method: 'WS', path: term, headers: { Cookie: `${name}=${forged}` } },
			{ method: 'WS', path: term, headers: { Authorization: `Bearer ${forged}` } },
		];
		const login = new URL(w.url).pathname;
		const refused = await requestsAs(NOBODY, w.base, [...routes, ...wrong, { method: 'GET', path: `/login/${forged}` }, { method: 'GET', path: login }]);
		routes.concat(wrong).forEach((r, i) => {
			assert.equal(refused[i].status, 401, `${r.method} ${r.path} ${JSON.stringify(r.headers ?? {})}: ${refused[i].body}`);
			assert.doesNotMatch(refused[i].body, /ROOT-ONLY/);
		});
		assert.equal(refused.at(-2).status, 403, 'a login URL nobody was given');
		const [login1] = refused.slice(-1);
		assert.equal(login1.status, 303, 'the login URL');
		assert.match(login1.cookie, new RegExp(`^${name}=[\\w-]{43}; HttpOnly; SameSite=Strict; Path=/$`));
		assert.equal((await get(`/api/sessions/${S}/runs`)).json.length, runsBefore, 'no command ran');
		assert.ok(!existsSync(join(wsDir, mark)));
		assert.ok(!existsSync(join(mount.mnt, 'sessions', mark)));

		const c = { Cookie: login1.cookie.split(';')[0] };
		const inside = await requestsAs(NOBODY, w.base, [
			{ method: 'GET', path: '/', headers: c },
			{ method: 'GET', path: '/api/sessions', headers: c },
			{ method: 'GET', path: `/api/workspace/${secret}`, headers: c },
			{ method: 'WS', path: term, headers: c },
			{ method: 'WS', path: term, headers: { ...c, Origin: 'http://evil.example' } },
			{ method: 'WS', path: term, headers: { ...c, Origin: `http://127.0.0.1:${new URL(web.base).port}` } },
			{ method: 'WS', path: term, headers: { ...c, Host: 'evil.example', Origin: 'http://evil.example' } },
			{ method: 'POST', path: `/api/sessions/${S}/exec`, headers: { ...c, Origin: 'http://evil.example' }, body: { command: `touch /workspace/${mark}` } },
			{ method: 'GET', path: login },
		]);
		assert.deepEqual(inside.map((r) => r.status), [200, 200, 200, 101, 403, 403, 421, 403, 403]);
		assert.ok(JSON.parse(inside[1].body).some((s) => s.id === S));
		assert.equal(inside[2].body, 'ROOT-ONLY', 'the login URL gives what the server may read');
		assert.ok(!existsSync(join(wsDir, mark)));
	} finally {
		await w.stop();
		rmSync(join(wsDir, secret), { force: true });
		await req(web.base, 'DELETE', `/api/sessions/${S}/terms/tn`);
	}
});

test('a loopback listener answers only to a loopback Host (DNS rebinding)', async () => {
	const r = await get('/api/sessions', { Host: 'evil.example:80' });
	assert.equal(r.status, 421);
	const ws = await wsOpen(`/ws/sessions/${S}/terms/t2`, { Host: 'evil.example', Origin: 'http://evil.example' });
	assert.equal(ws.status, 421);
	ws.destroy();
});

test('changes need JSON and a same-origin Origin (no cross-site form posts)', async () => {
	const form = await req(web.base, 'POST', `/api/sessions/${S}/exec`, { headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'x' });
	assert.equal(form.status, 415);
	const cross = await post(`/api/sessions/${S}/exec`, { command: 'touch /workspace/csrf' }, { Origin: 'http://evil.example' });
	assert.equal(cross.status, 403);
	const del = await req(web.base, 'DELETE', `/api/sessions/${S}/terms/t2`, { headers: { Origin: 'http://evil.example' } });
	assert.equal(del.status, 403);
	assert.equal((await post(`/api/sessions/${S}/exec`, 'not an object')).status, 400);
	const big = await req(web.base, 'POST', `/api/sessions/${S}/exec`, { headers: JSONH, body: { command: 'x'.repeat(2 << 20) } });
	assert.equal(big.status, 413);
});

test('no path leads out of the mount: .., encoded slashes, NUL, symlinks in the workspace', async () => {
	const ws = join(mount.mnt, 'workspace');
	const secret = mkdtempSync(join(tmpdir(), 'web-secret-'));
	writeFileSync(join(secret, 'key'), 'SECRET');
	const d = `t-${randomBytes(3).toString('hex')}`;
	const dir = join(ws, d);
	await waitFor(() => {
		try {
			writeFileSync(join(ws, `${d}.txt`), 'inside');
			return true;
		} catch {
			return false;
		}
	}, 'the workspace');
	(await import('node:fs')).mkdirSync(dir);
	symlinkSync(join(secret, 'key'), join(dir, 'out-file'));
	symlinkSync(secret, join(dir, 'out-dir'));
	symlinkSync('/etc', join(dir, 'etc'));
	symlinkSync(`../${d}.txt`, join(dir, 'in-link'));
	try {
		assert.equal((await get(`/api/workspace/${d}.txt`)).text, 'inside');
		assert.equal((await get(`/api/workspace/${d}/in-link`)).text, 'inside');
		const listing = (await get(`/api/workspace/${d}`)).json;
		assert.deepEqual(listing.entries.map((e) => e.name), ['etc', 'in-link', 'out-dir', 'out-file']);
		for (const p of [`${d}/out-file`, `${d}/out-dir/key`, `${d}/out-dir`, `${d}/etc/passwd`])
			assert.equal((await get(`/api/workspace/${p}`)).status, 403, p);
		const bad = [
			['/api/workspace/..%2F..%2Fetc%2Fpasswd', 400],
			['/api/workspace/%2e%2e/%2e%2e/etc/passwd', 400],
			['/api/workspace/../../etc/passwd', 400],
			[`/api/workspace/${d}.txt%00.png`, 400],
			['/api/workspace/%E0%A4%A', 400],
			['/api/sessions/..%2F..%2F..%2Fetc/runs', 400],
			['/api/sessions/../../etc/runs', 400],
			['/api/sessions/%2e%2e/runs', 400],
			[`/api/sessions/${S}%00/runs`, 400],
			[`/api/sessions/${S}/runs/1%2F..%2F..%2Fstatus`, 400],
			[`/api/sessions/${S}/runs/..`, 400],
			[`/api/sessions/${S}/procs/..%2F..%2F..%2Fcmd/logs`, 400],
		];
		for (const [path, status] of bad) {
			const r = await get(path).catch((e) => assert.fail(`${path}: ${e.message}`));
			assert.ok(r.status === status || r.status === 404, `${path}: ${r.status}`);
			assert.doesNotMatch(r.text, /SECRET|root:x:0/, path);
		}
		/* the raw path reaches the server as sent (no client normalisation) */
		assert.equal((await get('/api/workspace/../../etc/passwd')).status, 400);
	} finally {
		rmSync(secret, { recursive: true, force: true });
	}
});

test('a non-loopback listener needs --token-file, one only its owner can read', () => {
	const r = runWeb([mount.mnt, '--listen', '0.0.0.0:0']);
	assert.equal(r.status, 2);
	assert.match(r.stderr, /not a loopback address: --token-file is required/);
	const h = runWeb(['-h']);
	assert.equal(h.status, 0);
	assert.match(h.stdout, /usage: sbxfs-web MOUNTPOINT/);
	const dir = mkdtempSync(join(tmpdir(), 'web-tok-'));
	writeFileSync(join(dir, 'short'), 'abc\n', { mode: 0o600 });
	assert.match(runWeb([mount.mnt, '--token-file', join(dir, 'short')]).stderr, /at least 16/);
	writeFileSync(join(dir, 'shared'), randomBytes(24).toString('hex'), { mode: 0o644 });
	const shared = runWeb([mount.mnt, '--token-file', join(dir, 'shared')]);
	assert.equal(shared.status, 2);
	assert.match(shared.stderr, /group or others may read it/);
	assert.match(runWeb([join(dir)]).stderr, /not an sbxfs mount/);
	rmSync(dir, { recursive: true });
});

test('token: refused without it, bearer header, one-time login URL sets a cookie', async () => {
	const dir = mkdtempSync(join(tmpdir(), 'web-tok-'));
	const token = randomBytes(24).toString('hex');
	writeFileSync(join(dir, 'token'), token + '\n', { mode: 0o600 });
	const w = await startWeb(mount.mnt, ['--listen', '0.0.0.0:0', '--token-file', join(dir, 'token')]);
	try {
		const base = `http://127.0.0.1:${new URL(w.base).port}`;
		assert.equal((await req(base, 'GET', '/api/sessions')).status, 401);
		assert.equal((await req(base, 'GET', '/')).status, 401);
		assert.equal((await req(base, 'GET', '/api/sessions', { headers: { Authorization: 'Bearer wrong' } })).status, 401);
		assert.equal((await req(base, 'GET', '/api/sessions', { headers: { Authorization: `Bearer ${token}` } })).status, 200);
		const ws = await RawWs.open(base, `/ws/sessions/${S}/terms/t2`);
		assert.equal(ws.status, 401);
		ws.destroy();
		const login = new URL(w.url).pathname;
		assert.match(login, /^\/login\//);
		const first = await req(base, 'GET', login);
		assert.equal(first.status, 303);
		const cookie = first.headers['set-cookie'][0].split(';')[0];
		assert.match(first.headers['set-cookie'][0], /HttpOnly; SameSite=Strict/);
		assert.equal((await req(base, 'GET', '/api/sessions', { headers: { Cookie: cookie } })).status, 200);
		assert.equal((await req(base, 'GET', login)).status, 403, 'a login URL works once');
		const name = cookie.split('=')[0];
		assert.equal(name, `sbxfs_web_${new URL(w.base).port}`);
		assert.equal((await req(base, 'GET', '/api/sessions', { headers: { Cookie: `${name}=forged` } })).status, 401);
		const more = await req(base, 'POST', '/api/login-url', { headers: { Authorization: `Bearer ${token}` } });
		assert.match(more.json.path, /^\/login\//);
		// A URL, as docs/web.md says: this server's address (not the request's Host), and its path.
		assert.equal(more.json.url, `${base}${more.json.path}`);
		const forgedHost = await req(base, 'POST', '/api/login-url', { headers: { Authorization: `Bearer ${token}`, Host: 'evil.example' } });
		assert.equal(new URL(forgedHost.json.url).host, new URL(base).host);
		assert.equal((await req(base, 'GET', more.json.path)).status, 303);
	} finally {
		await w.stop();
		rmSync(dir, { recursive: true });
	}
});

test('the server never runs a program: it has no child process', async () => {
	const pid = web.proc.pid;
	const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
	assert.equal(children, '');
});
