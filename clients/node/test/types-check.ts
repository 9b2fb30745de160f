// Written against index.d.ts only: `tsc --noEmit -p test/tsconfig.json` checks both.
import {
	CommandTimeoutError,
	DirectoryBackup,
	ExecEvent,
	ExecResult,
	ExecutionSession,
	FileNotFoundError,
	FleetSandbox,
	Sandbox,
	SandboxLimitError,
	SessionNotFoundError,
	getFleet,
	getSandbox,
	parseSSEStream,
} from '../index.js';

export async function seed(mount: string): Promise<number> {
	const sandbox = getSandbox(mount);
	const remote: Sandbox = getSandbox('http://127.0.0.1:8024/v1/sandbox/demo', { token: 'secret-0123456789abcdef' });
	void remote;
	const s: ExecutionSession = await sandbox.createSession({
		id: 'test',
		env: { NODE_ENV: 'test' },
		cwd: '/workspace/test',
		commandTimeoutMs: 5000,
	});
	try {
		const r: ExecResult = await s.exec('npm run build', { timeout: 3000 });
		for await (const ev of parseSSEStream<ExecEvent>(s.execStream('ls'))) {
			if (ev.type === 'stdout') console.log(ev.data.length);
			if (ev.type === 'complete') console.log(ev.result.exitCode);
		}
		const p = await s.startProcess('python3 -m http.server 8000', { processId: 'web' });
		await p.waitForPort(8000, { timeout: 10000 });
		const { line } = await p.waitForLog(/Serving/);
		await s.setEnvVars({ NODE_ENV: undefined });
		const f = await s.readFile('/workspace/test/a.txt', { encoding: 'base64', maxBytes: 1 << 20 });
		const t = await s.createTerminal({ command: ['bash'], cols: 80, rows: 24 });
		await t.write('ls\r');
		const ctx = await s.createCodeContext({ language: 'python' });
		const ex = await s.runCode('1+1', { context: ctx, onResult: (v) => console.log(v.isMainResult) });
		const { url } = await sandbox.exposePort(8000, { name: 'web' });
		for (const e of await sandbox.getExposedPorts()) console.log(e.port, e.url, e.name ?? '', e.status);
		await sandbox.unexposePort(8000);
		console.log(url.length);
		const policy = await sandbox.getNetworkPolicy();
		await sandbox.setNetworkPolicy({ mode: 'filtered', allow: ['registry.example', { pattern: '*.example.org', private: false }], deny: policy.deny });
		for (const e of await sandbox.getNetworkLog({ session: 'default', limit: 10 })) console.log(e.decision, e.target, e.durationMs, e.address ?? '-');
		for (const e of await sandbox.getJournal({ since: 1, limit: 10 })) console.log(e.seq, e.kind, e.session ?? '-');
		for (const s of await sandbox.getMetrics({ session: 'default' })) console.log(s.name, s.labels, s.value);
		const stop = new AbortController();
		await sandbox.watchJournal({ onEvent: (e) => { console.log(e.kind); stop.abort(); }, signal: stop.signal });
		console.log(ctx.cwd.length, JSON.stringify(p));
		const backup: DirectoryBackup = await sandbox.createBackup({ dir: '/workspace/test', name: 'before' });
		const restored = await sandbox.restoreBackup(backup, { force: true });
		await sandbox.deleteBackup(backup);
		console.log(restored.success, backup.id);
		return r.exitCode + line.length + f.size + (ex.results.find((v) => v.isMainResult)?.text?.length ?? 0);
	} catch (err) {
		if (err instanceof CommandTimeoutError) return err.result?.exitCode ?? 124;
		if (err instanceof SessionNotFoundError) return -1;
		if (err instanceof FileNotFoundError) return err.path?.length ?? -2;
		throw err;
	} finally {
		await sandbox.deleteSession('test');
	}
}

export async function fleetLifecycle(root: string): Promise<string[]> {
	const fleet = await getFleet(root);
	try {
		const sbx: FleetSandbox = await fleet.create({ id: 'web' });
		await sbx.setKeepAlive(true);
		const r = await sbx.exec('echo ok');
		const info = await sbx.getInfo();
		console.log(r.stdout, info.state, info.pid, info.reason ?? '-');
		const again = await fleet.connect('web');
		await again.kill();
	} catch (err) {
		if (err instanceof SandboxLimitError) return [];
		throw err;
	}
	return (await fleet.list()).map((i) => i.sandboxId);
}
