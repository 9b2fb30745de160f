// Exposed ports: the mount's ports/ directory as the SDK's exposePort, unexposePort and
// getExposedPorts. The url is where this host reaches the port (the daemon's listener), where
// the hosted SDK gives a preview hostname.
import { mkdir, readFile, readdir, rmdir, writeFile } from './io.js';
import { join } from 'node:path';
import { InvalidPortError, ValidationError, mapError } from './errors.js';
import { parseStatus } from './fsio.js';

/* A port as ports/ names it: an integer from 1 to 65535. */
function checkPort(port) {
	if (!Number.isInteger(port) || port < 1 || port > 65535)
		throw new InvalidPortError(`invalid port ${JSON.stringify(port)}: an integer from 1 to 65535`);
	return port;
}

function portDir(sandbox, port) {
	return join(sandbox.mountpoint, 'ports', String(port));
}

/* The SDK's shape of an exposed port, from its status file. */
function shape(st) {
	const out = { url: st.url, port: Number(st.port), status: 'active' };
	if (st.name !== undefined) out.name = st.name;
	return out;
}

async function readPort(sandbox, port) {
	return shape(parseStatus(await readFile(join(portDir(sandbox, port), 'status'), 'utf8')));
}

/* Exposes the sandbox's port on this host: { url, port, name }. */
export async function exposePort(sandbox, port, opts = {}) {
	checkPort(port);
	const { name } = opts;
	if (name !== undefined && (typeof name !== 'string' || /[\x00-\x1f\x7f]/.test(name)))
		throw new ValidationError(`port ${port}: a name is one line of text`);
	const dir = portDir(sandbox, port);
	try {
		await mkdir(dir);
	} catch (err) {
		throw mapError(err, 'port', `port ${port}`);
	}
	try {
		if (name !== undefined) await writeFile(join(dir, 'name'), `${name}\n`);
		const { url } = await readPort(sandbox, port);
		return name === undefined ? { url, port } : { url, port, name };
	} catch (err) {
		await rmdir(dir).catch(() => {});
		throw mapError(err, 'port', `port ${port}`);
	}
}

/* Closes the port on this host: its connections are reset; the server keeps running. */
export async function unexposePort(sandbox, port) {
	checkPort(port);
	try {
		await rmdir(portDir(sandbox, port));
	} catch (err) {
		throw mapError(err, 'port', `port ${port}`);
	}
}

/* Every exposed port: [{ url, port, name?, status }], by port. */
export async function getExposedPorts(sandbox) {
	let names;
	try {
		names = await readdir(join(sandbox.mountpoint, 'ports'));
	} catch (err) {
		throw mapError(err, 'port', 'ports');
	}
	const ports = names.filter((n) => /^[1-9][0-9]*$/.test(n)).map(Number).sort((a, b) => a - b);
	const out = [];
	for (const port of ports) {
		try {
			out.push(await readPort(sandbox, port));
		} catch (err) {
			if (err.code !== 'ENOENT') throw mapError(err, 'port', `port ${port}`); // unexposed meanwhile
		}
	}
	return out;
}
