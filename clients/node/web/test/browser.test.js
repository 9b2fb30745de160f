// The page in Debian's chromium, driven by playwright-core: the login, a session, a command
// and its streamed output, a terminal with replay and resize, the token. A screenshot of each state
// goes to the artifacts directory printed at the end (SBXFS_WEB_ARTIFACTS, else a temp dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startMount, startWeb, waitFor, freePort } from './helpers.js';

const CHROMIUM = process.env.SBXFS_CHROMIUM || '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (scripts/bootstrap --test installs Debian's chromium for these tests)`;
const S = `br-${randomBytes(3).toString('hex')}`;
let mount, web, browser, page, artifacts;

async function shot(name) {
	await page.screenshot({ path: join(artifacts, `${name}.png`) });
}

before(async () => {
	if (skip) return;
	const { chromium } = await import('playwright-core');
	artifacts = process.env.SBXFS_WEB_ARTIFACTS || mkdtempSync(join(tmpdir(), 'sbxfs-web-artifacts-'));
	mkdirSync(artifacts, { recursive: true });
	mount = await startMount();
	web = await startWeb(mount.mnt);
	browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
	page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	page.on('pageerror', (e) => console.error('page error:', e.message));
});

after(async () => {
	await browser?.close();
	await web?.stop();
	await mount?.stop();
	if (artifacts) console.log(`# screenshots in ${artifacts}`);
});

const screenText = () => page.evaluate(() => {
	const rows = document.querySelector('.term:not([hidden]) .xterm-rows');
	return rows ? [...rows.children].map((r) => r.textContent).join('\n') : '';
});

test('on loopback the page is refused until the login URL is opened; it works once', { skip }, async () => {
	const refused = await page.goto(`${web.base}/`);
	assert.equal(refused.status(), 401);
	assert.match(await page.textContent('body'), /login URL/);
	await shot('0-refused-without-login');
	await page.goto(web.url);
	assert.equal(new URL(page.url()).pathname, '/');
	const [cookie] = await page.context().cookies();
	assert.equal(cookie.name, `sbxfs_web_${new URL(web.base).port}`);
	assert.ok(cookie.httpOnly);
	assert.equal(cookie.sameSite, 'Strict');
	await page.waitForSelector('#sessions li[data-session="default"]');
	/* A browser without the cookie (sbxfs-web restarted, say): the page says what to do. */
	await page.context().clearCookies();
	await page.waitForFunction(() => /open the login URL/.test(document.querySelector('#status-line').textContent));
	await page.context().addCookies([cookie]);
	await page.waitForFunction(() => document.querySelector('#status-line').textContent === '');
	const other = await browser.newPage();
	assert.equal((await other.goto(web.url)).status(), 403, 'a login URL works once');
	await other.close();
});

test('the first paint: the Contexts section is there, and the icon is served', { skip }, async (t) => {
	if (!existsSync(join(mount.mnt, 'contexts'))) return t.skip('the mount has no contexts/ (a build without issue 14)');
	const missing = [];
	const onResponse = (r) => r.status() === 404 && missing.push(r.url());
	page.on('response', onResponse);
	/* What the page shows before app.js has had any answer from the server. */
	await page.addInitScript(() => document.addEventListener('DOMContentLoaded', () => {
		window.contextsAtFirstPaint = !document.querySelector('#contexts-nav').hidden;
	}));
	await page.goto(`${web.base}/`);
	await page.waitForSelector('#sessions li[data-session="default"]');
	await page.waitForLoadState('networkidle');
	page.off('response', onResponse);
	assert.equal(await page.evaluate(() => window.contextsAtFirstPaint), true);
	assert.deepEqual(missing, []);
	/* Headless chromium asks for no icon at all; a browser with tabs asks for the one the page
	 * names, or for /favicon.ico without it: neither is a 404. */
	const href = await page.getAttribute('link[rel="icon"]', 'href');
	for (const path of [href, '/favicon.ico']) {
		const res = await page.request.get(`${web.base}${path}`);
		assert.equal(res.status(), 200, path);
		assert.equal(res.headers()['content-type'], 'image/svg+xml', path);
	}
});

test('create a session, run echo hi, see hi and exit 0', { skip }, async () => {
	await page.goto(`${web.base}/`);
	await page.fill('#new-session-id', S);
	await page.click('#new-session button');
	await page.waitForSelector(`#sessions li[data-session="${S}"].selected`);
	await page.fill('#command', 'echo hi');
	await page.press('#command', 'Enter');
	await page.waitForSelector('#exit-line[data-exit="0"]');
	assert.equal(await page.textContent('#output'), 'hi\n');
	assert.match(await page.textContent('#exit-line'), /^exit 0 · \d+ ms$/);
	await page.waitForSelector(`#sessions li[data-session="${S}"] code:text("echo hi")`);
	await shot('1-echo-hi');
});

test('the journal shows the session\'s events, filtered by kind; the metrics tab draws its graphs', { skip }, async () => {
	await page.selectOption('#journal-session', S);
	await page.fill('#journal-kind', 'cmd.end');
	await page.press('#journal-kind', 'Enter');
	// a refresh begun before the filter changed may paint once more: wait for the filtered one
	await page.waitForFunction((s) => {
		const lines = document.querySelector('#journal').textContent.split('\n');
		return lines.some((l) => l.includes(`cmd.end [${s}]`)) && lines.every((l) => l.includes(' cmd.end '));
	}, S);
	await page.click('#session > .tabs button[data-tab="metrics"]');
	await page.waitForFunction(() => !document.querySelector('#tab-metrics').hidden &&
		document.querySelector('#metrics-note').textContent.startsWith('the last'));
	const inked = await page.evaluate(() => {
		const c = document.querySelector('#metrics-memory');
		const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < px.length; i += 4) if (px[i] < 200) n++;
		return n;
	});
	assert.ok(inked > 50, `the memory graph has ${inked} dark pixels`);
	await shot('journal-metrics');
	await page.click('#session > .tabs button[data-tab="commands"]');
});

test('the network log: newest first, long lines wrapped, not cut at the column', { skip }, async () => {
	// Two requests the proxy refuses (the mount's policy is mode none): a line each in the log.
	const long = `second-${'x'.repeat(50)}.${'y'.repeat(50)}.${'z'.repeat(50)}.test`;
	writeFileSync(join(mount.mnt, 'sessions', 'default', 'cmd'), `curl -sS -m 5 http://first.test/; curl -sS -m 5 http://${long}/\n`);
	readFileSync(join(mount.mnt, 'sessions', 'default', 'exit'));
	// The page's next refresh shows them (it stays as the tests before left it).
	await page.waitForFunction((name) => document.querySelector('#network-log').textContent.includes(name), long);
	const { lines, scroll, client } = await page.evaluate(() => {
		const log = document.querySelector('#network-log');
		return { lines: log.textContent.split('\n'), scroll: log.scrollWidth, client: log.clientWidth };
	});
	assert.ok(lines[0].includes(long), lines.join('\n'));
	assert.ok(lines.findIndex((l) => l.includes('first.test')) > 0, lines.join('\n'));
	assert.ok(scroll <= client, `the log is ${scroll} px wide in a ${client} px column`);
	await shot('network-log');
});

test('a command printing for 2 s shows its lines as they arrive, colours rendered', { skip }, async () => {
	await page.fill('#command', 'for i in 1 2 3 4 5; do printf "\\e[31mline $i\\e[0m\\n"; sleep 0.4; done');
	await page.press('#command', 'Enter');
	await page.waitForFunction(() => document.querySelector('#output').textContent.includes('line 2'));
	assert.doesNotMatch(await page.textContent('#output'), /line 5/, 'line 5 is not there yet');
	assert.equal(await page.textContent('#exit-line'), 'running…');
	await shot('2-streaming');
	await page.waitForSelector('#exit-line[data-exit="0"]');
	assert.equal(await page.textContent('#output'), 'line 1\nline 2\nline 3\nline 4\nline 5\n');
	assert.equal(await page.locator('#output span.fg-a-red').count(), 5);
	assert.equal(await page.locator('#runs tbody tr').count(), 2);
	await shot('3-done-with-history');
});

test('output that looks like HTML stays text', { skip }, async () => {
	await page.fill('#command', `echo '<img src=x onerror=alert(1)><b>bold</b>'`);
	await page.press('#command', 'Enter');
	await page.waitForSelector('#exit-line[data-exit="0"]');
	assert.equal(await page.textContent('#output'), '<img src=x onerror=alert(1)><b>bold</b>\n');
	assert.equal(await page.locator('#output img, #output b').count(), 0);
});

test('a terminal: type echo web-ok, see it on the xterm screen; reload replays; resize', { skip }, async () => {
	await page.click('button[data-tab="terminals"]');
	await page.fill('#new-term-name', 'main');
	await page.click('#new-term button');
	await page.waitForSelector('.term[data-term="main"] .xterm-rows');
	await page.waitForFunction(() => document.querySelector('.xterm-rows').textContent.trim() !== ''); /* the prompt */
	await page.click('.term[data-term="main"]');
	await page.keyboard.type('echo web-ok\n');
	await waitFor(async () => /^web-ok$/m.test(await screenText()), 'web-ok on the screen');
	await shot('4-terminal');

	await page.reload();
	await page.waitForSelector('.term[data-term="main"] .xterm-rows');
	await waitFor(async () => /^web-ok$/m.test(await screenText()), 'web-ok replayed after the reload');
	await shot('5-terminal-replayed');

	const size = () => readFileSync(join(mount.mnt, 'sessions', S, 'terms/main/size'), 'utf8').trim();
	const before = size();
	await page.setViewportSize({ width: 900, height: 560 });
	await waitFor(() => size() !== before, `the size to change from ${before}`);
	const [rows, cols] = size().split(' ').map(Number);
	await page.click('.term[data-term="main"]');
	await page.keyboard.type('stty size\n');
	await waitFor(async () => (await screenText()).includes(`${rows} ${cols}`), `stty size ${rows} ${cols}`);
	await shot('6-terminal-resized');
});

test('several terminal tabs, and processes with a kill button', { skip }, async () => {
	await page.setViewportSize({ width: 1280, height: 800 });
	await page.fill('#new-term-name', 'second');
	await page.click('#new-term button');
	await page.waitForSelector('.term[data-term="second"] .xterm-rows');
	assert.equal(await page.locator('#term-tabs button[data-term]').count(), 2);
	await page.click('button[data-tab="procs"]');
	await page.fill('#new-proc-name', 'srv');
	await page.fill('#new-proc-cmd', 'echo serving; exec sleep 1000');
	await page.click('#new-proc button');
	await page.waitForSelector('#procs tr[data-proc="srv"] .badge.running');
	await page.click('#procs tr[data-proc="srv"] button:text("logs")');
	await page.waitForFunction(() => document.querySelector('#proc-logs').textContent.includes('serving'));
	await shot('7-processes');
	await page.click('#procs tr[data-proc="srv"] button:text("kill")');
	await page.waitForSelector('#procs tr[data-proc="srv"] .badge.killed');
});

test('a process\'s port exposed from the page: a link in the list, and unexposed again', { skip }, async () => {
	const port = await freePort();
	await page.click('button[data-tab="procs"]');
	await page.fill('#new-proc-name', 'site');
	await page.fill('#new-proc-cmd', `exec python3 -m http.server ${port} --bind 127.0.0.1`);
	await page.click('#new-proc button');
	await page.click(`#procs tr[data-proc="site"] button:text("expose ${port}")`);
	const link = page.locator(`#ports li[data-port="${port}"] a`);
	await link.waitFor();
	const url = await link.getAttribute('href');
	assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
	assert.equal((await fetch(url)).status, 200);
	await page.waitForSelector(`#procs tr[data-proc="site"] a[href="${url}"]`);
	await shot('8-exposed-port');
	await page.click(`#ports li[data-port="${port}"] button`);
	await page.waitForSelector(`#ports li[data-port="${port}"]`, { state: 'detached' });
	await page.fill('#new-port-number', String(port));
	await page.fill('#new-port-name', 'again');
	await page.click('#new-port button');
	await page.waitForSelector(`#ports li[data-port="${port}"] .meta:text("again")`);
	await page.click(`#ports li[data-port="${port}"] button`);
	await page.waitForSelector(`#ports li[data-port="${port}"]`, { state: 'detached' });
	await page.click('#procs tr[data-proc="site"] button:text("kill")');
	await page.waitForSelector('#procs tr[data-proc="site"] .badge.killed');
});

test('a context: a cell\'s output, text, PNG and HTML results (HTML sandboxed)', { skip }, async (t) => {
	if (!existsSync(join(mount.mnt, 'contexts'))) return t.skip('the mount has no contexts/ (a build without issue 14)');
	const name = `cx-${randomBytes(3).toString('hex')}`;
	await page.waitForSelector('#contexts-nav:not([hidden])');
	await page.fill('#new-context-id', name);
	await page.click('#new-context button');
	await page.waitForSelector('#context:not([hidden])');
	const run = async (code) => {
		const before = await page.locator('#cells .cell').count();
		await page.fill('#cell-code', code);
		await page.click('#cell-form button');
		await page.waitForFunction((n) => document.querySelectorAll('#cells .cell').length > n, before);
		return page.locator('#cells .cell').first();
	};
	let cell = await run('print("from stdout")\n6 * 7');
	await cell.locator('pre:text("42")').waitFor({ timeout: 30000 });
	assert.match(await cell.locator('pre.output').textContent(), /from stdout/);
	cell = await run('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])');
	await cell.locator('img').waitFor({ timeout: 30000 });
	assert.match(await cell.locator('img').getAttribute('src'), /^data:image\/png;base64,iVBOR/);
	cell = await run(`from IPython.display import HTML\nHTML("<b>bold</b><script>parent.document.title='pwned'</script>")`);
	await cell.locator('iframe').waitFor({ timeout: 30000 });
	assert.equal(await cell.locator('iframe').getAttribute('sandbox'), '');
	assert.equal(await page.locator('#cells b').count(), 0, 'no HTML result in the page itself');
	assert.equal(await page.frameLocator('#cells iframe').locator('b').textContent(), 'bold');
	assert.equal(await page.title(), 'sbxfs');
	await shot('8-context');
	await page.click('#delete-context');
	await page.waitForSelector(`#contexts li[data-context="${name}"]`, { state: 'detached' });
	await page.click(`#sessions li[data-session="${S}"]`);
});

test('delete the session from the page: its directory is gone', { skip }, async () => {
	await page.click('#delete-session');
	await page.waitForSelector(`#sessions li[data-session="${S}"]`, { state: 'detached' });
	assert.ok(!existsSync(join(mount.mnt, 'sessions', S)));
	assert.ok(await page.isVisible('#nothing'));
});

test('on a non-loopback listener, the page without the token is refused; the login URL lets in', { skip }, async () => {
	const dir = mkdtempSync(join(tmpdir(), 'web-tok-'));
	writeFileSync(join(dir, 'token'), randomBytes(20).toString('hex'), { mode: 0o600 });
	const w = await startWeb(mount.mnt, ['--listen', '0.0.0.0:0', '--token-file', join(dir, 'token')]);
	try {
		const port = new URL(w.base).port;
		const res = await page.goto(`http://127.0.0.1:${port}/`);
		assert.equal(res.status(), 401);
		await shot('9-refused-without-token');
		const login = new URL(w.url).pathname;
		await page.goto(`http://127.0.0.1:${port}${login}`);
		await page.waitForSelector('#sessions li[data-session="default"]');
		assert.equal((await page.goto(`http://127.0.0.1:${port}${login}`)).status(), 403);
	} finally {
		await w.stop();
		rmSync(dir, { recursive: true });
	}
});
