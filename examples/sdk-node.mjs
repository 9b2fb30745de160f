#!/usr/bin/env node
// sdk-node.mjs: the hosted Sandbox SDK's session example, run against a local sbxfs mount with
// clients/node. Only the import of getSandbox differs from code written for the hosted SDK.
//
// usage: node examples/sdk-node.mjs [MOUNTPOINT]     (default /mnt/sbx; sbxfs must be mounted)
//        SBXFS_TOKEN=SECRET node examples/sdk-node.mjs http://HOST:8024/v1/sandbox/ID   (over sbxfs-bridge)
import { CommandTimeoutError, getSandbox, parseSSEStream } from '../clients/node/index.js';

const sandbox = getSandbox(process.argv[2] ?? '/mnt/sbx');

const session = await sandbox.createSession({
	id: 'example',
	env: { NODE_ENV: 'test' },
	cwd: '/workspace/example',
	commandTimeoutMs: 5000,
});
try {
	await session.writeFile('/workspace/example/hello.js', "console.log(`hello from ${process.env.NODE_ENV}`);\n");
	const r = await session.exec('node hello.js');
	console.log(r.exitCode, r.stdout.trim(), `${r.duration} ms`);

	for await (const ev of parseSSEStream(session.execStream('for i in 1 2 3; do echo $i; sleep 0.2; done')))
		if (ev.type === 'stdout') process.stdout.write(`streamed: ${ev.data}`);

	const web = await session.startProcess('python3 -m http.server 8000 --bind 127.0.0.1', { processId: 'web' });
	await web.waitForPort(8000, { timeout: 10000 });
	const page = await session.exec('python3 -c "import urllib.request as u; print(u.urlopen(\'http://127.0.0.1:8000/\').status)"');
	console.log('GET / ->', page.stdout.trim());
	await web.kill();

	try {
		await session.exec('sleep 10', { timeout: 1000 });
	} catch (err) {
		if (!(err instanceof CommandTimeoutError)) throw err;
		console.log('timed out, exit', err.result.exitCode);
	}
} finally {
	await sandbox.deleteSession('example');
}
