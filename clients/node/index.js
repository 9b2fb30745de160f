// sbxfs-client: the hosted Sandbox SDK's session API over a local sbxfs mount; the files are the
// protocol.
import { Sandbox } from './lib/session.js';

export { ExecutionSession, Sandbox } from './lib/session.js';
export { Process } from './lib/processes.js';
export { Terminal } from './lib/terminals.js';
export { parseSSEStream } from './lib/sse.js';
export * from './lib/errors.js';

/* The sandbox of the sbxfs mounted at `mountpoint`; it acts as the session `default`. */
export function getSandbox(mountpoint, opts) {
	return new Sandbox(mountpoint, opts);
}

/* The SDK's helper: the events of an execStream() or streamProcessLogs() stream. */
export { parseSSEStream as streamEvents } from './lib/sse.js';
