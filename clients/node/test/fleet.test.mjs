// The fleet calls (lib/fleet.js) against a real sbxfs-fleet: create, list, connect, getSandbox,
// kill, setKeepAlive with sleep and wake, the bound, and bad ids. Root only, isolated.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
	SandboxAlreadyExistsError,
	SandboxError,
	SandboxLimitError,
	SandboxNotFoundError,
	ValidationError,
	getFleet,
} from '../index.js';
import { isolationNone, startFleet } from './mount.mjs';

const skip = process.getuid() !== 0 || isolationNone() ? 'a fleet is root\'s, isolated' : false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, what, ms = 15000) {
	const deadline = Date.now() + ms;
	while (!(await cond())) {
		if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
		await sleep(50);
	}
}

describe('a fleet', { timeout: 120000, skip }, () => {
	let f;
	let fleet;

	before(async () => {
		f = await startFleet('[sandbox]\nsleep_after = 1\n');
		fleet = await getFleet(f.root);
	});
	after(async () => {
		await f?.stop();
	});

	it('creates, lists, connects and kills, with the SDK errors', async () => {
		const web = await fleet.create({ id: 'web' });
		assert.equal(web.sandboxId, 'web');
		assert.equal((await web.exec('echo ok')).stdout, 'ok\n');
		const fresh = await fleet.create();
		assert.match(fresh.sandboxId, /^s\d+$/);
		assert.equal((await fresh.exec('echo $((6*7))')).stdout, '42\n');
		const ids = (await fleet.list()).map((i) => i.sandboxId);
		assert.deepEqual(ids, [fresh.sandboxId, 'web'].sort());
		await assert.rejects(fleet.create({ id: 'web' }), SandboxAlreadyExistsError);
		await assert.rejects(fleet.connect('nope'), SandboxNotFoundError);
		await assert.rejects(fleet.create({ id: '../etc' }), ValidationError);
		const again = await fleet.connect('web');
		assert.equal((await again.exec('echo again')).stdout, 'again\n');
		const made = await fleet.getSandbox('cf'); // made, as Cloudflare's getSandbox does
		assert.equal((await fleet.getSandbox('cf')).sandboxId, 'cf'); // and found again
		assert.equal((await made.getInfo()).state, 'running');
		const four = await fleet.create({ id: 'four', config: '[sandbox]\nmemory_max = 1G\n' });
		assert.equal(await four.getConfig(), '[sandbox]\nmemory_max = 1G\n');
		assert.match(readFileSync(join(f.root, 'four', 'fs', 'limits'), 'utf8'), new RegExp(`memory_max ${1 << 30}\n`));
		await assert.rejects(four.setConfig('[sandbox]\nmemory_max = lots\n'), ValidationError);
		assert.equal(await four.getConfig(), '[sandbox]\nmemory_max = 1G\n');
		await assert.rejects(fleet.create({ id: 'five' }), SandboxLimitError);
		assert.match(String((await fleet.status()).refused), /max is 4/);
		await fresh.kill();
		await fleet.kill('four');
		// a template: a tar of a directory becomes the workspace
		const src = mkdtempSync(join(tmpdir(), 'sbxfs-tmpl-'));
		mkdirSync(join(src, 'app'));
		writeFileSync(join(src, 'app', 'index.js'), 'console.log(1)\n');
		spawnSync('tar', ['-C', src, '-cf', join(src, '..', `${basename(src)}.tar`), '.']);
		const t = await fleet.create({ id: 'tmpl', template: `${src}.tar` });
		assert.equal((await t.exec('cat /workspace/app/index.js')).stdout, 'console.log(1)\n');
		writeFileSync(`${src}.bad`, 'not a tar'.repeat(100));
		await assert.rejects(fleet.create({ id: 'badtmpl', template: `${src}.bad` }), SandboxError);
		assert.ok(!(await fleet.list()).some((i) => i.sandboxId === 'badtmpl'));
		await t.kill();
		rmSync(src, { recursive: true });
		rmSync(`${src}.tar`);
		rmSync(`${src}.bad`);
		await made.destroy();
		assert.deepEqual((await fleet.list()).map((i) => i.sandboxId), ['web']);
		await assert.rejects(fleet.kill('four'), SandboxNotFoundError);
	});

	it('keeps a sandbox awake with setKeepAlive, and wakes a sleeping one on use', async () => {
		const sbx = await fleet.getSandbox('web');
		await sbx.setKeepAlive(true);
		assert.equal(readFileSync(join(f.root, 'web', 'keep_alive'), 'utf8'), 'yes\n');
		await sbx.exec('export KEPT=1');
		await sleep(2500);
		assert.equal((await sbx.getInfo()).state, 'running');
		await assert.rejects(sbx.setKeepAlive('yes'), ValidationError);
		await sbx.setKeepAlive(false);
		await until(async () => (await sbx.getInfo()).state === 'sleeping', 'web asleep');
		assert.equal((await sbx.getInfo()).pid, 0);
		assert.equal((await sbx.exec('echo "woke $KEPT"')).stdout, 'woke 1\n');
		assert.equal((await sbx.getInfo()).state, 'running');
	});

	it('refuses a path that is no fleet', async () => {
		await assert.rejects(getFleet('/proc'), SandboxError);
	});
});
