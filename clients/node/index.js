// sbxfs-client: the hosted Sandbox SDK's session API over a local sbxfs mount; the files are the
// protocol.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from './lib/errors.js';
import { Remote } from './lib/remote.js';
import { Sandbox } from './lib/session.js';

export { ExecutionSession, Sandbox } from './lib/session.js';
export { Fleet, FleetSandbox, getFleet } from './lib/fleet.js';
export { Process } from './lib/processes.js';
export { Terminal } from './lib/terminals.js';
export { parseSSEStream } from './lib/sse.js';
export * from './lib/errors.js';

/* The sandbox of the sbxfs mounted at `mountpoint`; it acts as the session `default`. A path
 * that is no sbxfs mount (no sessions/default in it) is a SandboxError that says so, not a
 * missing session later. A URL (http(s)://HOST:PORT/v1/sandbox/ID, with opts.token, else
 * $SBXFS_TOKEN, and opts.ca) is that sandbox of a fleet over sbxfs-bridge's tree routes: the
 * same calls, each a request (docs/clients.md says what a mount has that HTTP has not). */
export function getSandbox(mountpoint, opts) {
	if (typeof mountpoint === 'string' && /^https?:\/\//.test(mountpoint)) {
		let remote;
		try {
			remote = new Remote(mountpoint, { token: opts?.token ?? process.env.SBXFS_TOKEN, ca: opts?.ca });
		} catch (err) {
			throw new SandboxError(err.message, { errno: err.code });
		}
		return new Sandbox(remote.root, opts);
	}
	let dir = false;
	try {
		dir = statSync(join(mountpoint, 'sessions', 'default')).isDirectory();
	} catch {
		// no such directory: said below
	}
	if (!dir) {
		throw new SandboxError(`${mountpoint}: not an sbxfs mount (it has no sessions/default)`, {
			errno: 'ENOENT',
		});
	}
	return new Sandbox(mountpoint, opts);
}

/* The SDK's helper: the events of an execStream() or streamProcessLogs() stream. */
export { parseSSEStream as streamEvents } from './lib/sse.js';
