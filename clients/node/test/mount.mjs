// Starts an sbxfs daemon on a temporary mountpoint for the tests, as tests/integration does.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export function sbxfsBinary() {
	if (process.env.SBXFS_BIN) return resolve(process.env.SBXFS_BIN);
	return resolve(here, '../../../build/sbxfs');
}

export function isolationNone() {
	return /--isolation(=|\s+)none/.test(process.env.SBXFS_EXTRA_ARGS ?? '');
}

function mounted(path) {
	return readFileSync('/proc/self/mountinfo', 'utf8')
		.split('\n')
		.some((line) => line.split(' ')[4] === path);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, what, ms = 10000) {
	const deadline = Date.now() + ms;
	while (!cond()) {
		if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
		await sleep(20);
	}
}

/* { mnt, ws, stop() }: the daemon runs until stop(), which unmounts and removes the files. */
export async function startMount() {
	const tmp = mkdtempSync(join(tmpdir(), 'sbxfs-node-'));
	const [mnt, ws, state] = ['mnt', 'ws', 'state'].map((d) => join(tmp, d));
	for (const d of [mnt, ws, state]) mkdirSync(d);
	const extra = (process.env.SBXFS_EXTRA_ARGS ?? '').split(/\s+/).filter(Boolean);
	const bin = sbxfsBinary();
	if (!existsSync(bin)) throw new Error(`sbxfs binary not found: ${bin} (set SBXFS_BIN)`);
	const daemon = spawn(bin, ['-f', '--workspace', ws, '--state-dir', state, ...extra, mnt], {
		stdio: ['ignore', 'ignore', 'inherit'],
		detached: true,
	});
	let exited = false;
	daemon.on('exit', () => (exited = true));
	await waitFor(() => exited || mounted(mnt), 'sbxfs mounted');
	if (exited) throw new Error('sbxfs exited before mounting');
	if (process.getuid() === 0 && !isolationNone())
		await waitFor(() => mounted(join(mnt, 'workspace')), 'workspace/ mounted');
	// A test run killed by a signal (a timeout of its runner) unmounts before it goes.
	const onSignal = (sig) => {
		spawnSync(bin, ['-u', mnt]);
		process.kill(process.pid, sig);
	};
	for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, onSignal);
	return {
		mnt,
		ws,
		async stop() {
			for (const sig of ['SIGTERM', 'SIGINT']) process.off(sig, onSignal);
			for (let i = 0; i < 20 && mounted(mnt); i++) {
				if (spawnSync(bin, ['-u', mnt]).status === 0) break;
				await sleep(250);
			}
			const deadline = Date.now() + 10000;
			while (!exited && Date.now() < deadline) await sleep(20);
			if (!exited) daemon.kill('SIGKILL');
			if (mounted(mnt)) spawnSync('fusermount3', ['-u', '-z', mnt]);
			try {
				rmSync(tmp, { recursive: true, force: true });
			} catch (err) {
				console.error(`sbxfs test mount: ${tmp} left behind: ${err.message}`);
			}
		},
	};
}

/* { root, stop() }: an sbxfs-fleet (next to the sbxfs under test) whose sandboxes start from
 * sandboxConfig (ini text); stop() ends it (it stops its daemons) and removes the files. */
export async function startFleet(sandboxConfig = '') {
	const tmp = mkdtempSync(join(tmpdir(), 'sbxfs-node-fleet-'));
	const root = join(tmp, 'fleet');
	const ini = join(tmp, 'sandbox.ini');
	writeFileSync(ini, sandboxConfig);
	const bin = join(dirname(sbxfsBinary()), 'sbxfs-fleet');
	const fleet = spawn(bin, ['--state-dir', join(tmp, 'state'), '--sandbox-config', ini, '--max', '4', root], {
		stdio: ['ignore', 'ignore', 'inherit'],
		detached: true,
	});
	let exited = false;
	fleet.on('exit', () => (exited = true));
	await waitFor(() => exited || existsSync(join(root, 'status')), 'sbxfs-fleet mounted');
	if (exited) throw new Error('sbxfs-fleet exited before mounting');
	const onSignal = (sig) => {
		fleet.kill('SIGTERM');
		process.kill(process.pid, sig);
	};
	for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, onSignal);
	return {
		root,
		async stop() {
			for (const sig of ['SIGTERM', 'SIGINT']) process.off(sig, onSignal);
			fleet.kill('SIGTERM');
			const deadline = Date.now() + 60000;
			while (!exited && Date.now() < deadline) await sleep(20);
			if (!exited) fleet.kill('SIGKILL');
			if (mounted(root)) spawnSync('umount', ['-l', root]);
			spawnSync('rm', ['-rf', '--one-file-system', tmp]);
		},
	};
}

/* The transport the suites run over: a mount (the default), or SBXFS_CLIENT_TRANSPORT=http, a
 * sandbox of a fleet reached over sbxfs-bridge. */
export const overHttp = process.env.SBXFS_CLIENT_TRANSPORT === 'http';

/* { mnt, ws, url, token, stop() }: a fleet and a bridge over it, and its sandbox `t`, whose
 * mount (mnt) the suites look at from the host as they look at startMount's. */
export async function startRemote() {
	const tmp = mkdtempSync(join(tmpdir(), 'sbxfs-node-http-'));
	const fleet = join(tmp, 'fleet');
	mkdirSync(fleet);
	const bin = join(dirname(sbxfsBinary()), 'sbxfs-fleet');
	const fleetProc = spawn(bin, ['--state-dir', join(tmp, 'state'), fleet], { stdio: ['ignore', 'ignore', 'inherit'], detached: true });
	let fleetExited = false;
	fleetProc.on('exit', () => (fleetExited = true));
	await waitFor(() => fleetExited || existsSync(join(fleet, 'clone')), 'sbxfs-fleet mounted');
	if (fleetExited) throw new Error('sbxfs-fleet exited before mounting');
	const token = 'node-suite-secret-0123456789';
	writeFileSync(join(tmp, 'tokens'), `suite * ${token}\n`, { mode: 0o600 });
	const bridge = spawn(process.execPath, [resolve(here, '../web/bridge/bin/sbxfs-bridge.js'), fleet,
		'--tokens', join(tmp, 'tokens'), '--listen', '127.0.0.1:0', '--rate', '100000', '--concurrent', '1000'],
	{ stdio: ['ignore', 'pipe', 'inherit'] });
	const line = await new Promise((ok, fail) => {
		let text = '';
		bridge.stdout.on('data', (d) => {
			text += d;
			if (text.includes('\n')) ok(text);
		});
		bridge.on('exit', () => fail(new Error('sbxfs-bridge exited before it listened')));
	});
	const base = /listening on (\S+)/.exec(line)[1];
	mkdirSync(join(fleet, 't'));
	const mnt = join(fleet, 't', 'fs');
	await waitFor(() => existsSync(join(mnt, 'sessions', 'default')), 'the sandbox up');
	const stop = async () => {
		bridge.kill('SIGTERM');
		fleetProc.kill('SIGTERM');
		const deadline = Date.now() + 60000;
		while (!fleetExited && Date.now() < deadline) await sleep(50);
		if (!fleetExited) fleetProc.kill('SIGKILL');
		if (mounted(fleet)) spawnSync('umount', ['-l', fleet]);
		rmSync(tmp, { recursive: true, force: true });
	};
	for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, async () => {
		await stop();
		process.exit(1);
	});
	return { mnt, ws: join(mnt, 'workspace'), url: `${base}/v1/sandbox/t`, token, stop };
}
