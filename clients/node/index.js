// sbxfs-client: the hosted Sandbox SDK's session API over a local sbxfs mount; the files are the
// protocol.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from './lib/errors.js';
import { Sandbox } from './lib/session.js';

export { ExecutionSession, Sandbox } from './lib/session.js';
export { Fleet, FleetSandbox, getFleet } from './lib/fleet.js';
export { Process } from './lib/processes.js';
export { Terminal } from './lib/terminals.js';
export { parseSSEStream } from './lib/sse.js';
export * from './lib/errors.js';

/* The sandbox of the sbxfs mounted at `mountpoint`; it acts as the session `default`. A path
 * that is no sbxfs mount (no sessions/default in it) is a SandboxError that says so, not a
 * missing session later. */
export function getSandbox(mountpoint, opts) {
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
