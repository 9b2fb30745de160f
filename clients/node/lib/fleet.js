// A fleet of sandboxes (sbxfs-fleet): FLEET/ID/fs is a whole mount each. The lifecycle calls
// take the hosted SDKs' names (E2B's create, list, connect, kill; Cloudflare's getSandbox,
// destroy, setKeepAlive) and are file operations on the fleet's tree: mkdir, clone, readdir,
// status, rmdir, keep_alive.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, readdir, rmdir, stat, writeFile } from './io.js';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import { SandboxError, SandboxNotFoundError, ValidationError, mapError } from './errors.js';
import { checkName } from './names.js';
import { Sandbox } from './session.js';

/* `key value` lines as an object. */
function parseStatus(text) {
	const out = {};
	for (const line of text.split('\n')) {
		const at = line.indexOf(' ');
		if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
	}
	return out;
}

/* What a fleet's status says of one sandbox. */
function info(id, st) {
	return {
		sandboxId: id,
		state: st.state,
		pid: Number(st.pid),
		restarts: Number(st.restarts),
		reason: st.reason === '-' ? null : st.reason,
	};
}

/* A sandbox of a fleet: a Sandbox on FLEET/ID/fs that knows its id and its fleet. */
export class FleetSandbox extends Sandbox {
	constructor(fleet, id, opts) {
		super(join(fleet.root, id, 'fs'), opts);
		Object.defineProperty(this, 'fleet', { value: fleet });
		this.sandboxId = id;
	}
	getInfo() {
		return this.fleet.getInfo(this.sandboxId);
	}
	setKeepAlive(on) {
		return this.fleet.setKeepAlive(this.sandboxId, on);
	}
	getConfig() {
		return this.fleet.getConfig(this.sandboxId);
	}
	setConfig(text) {
		return this.fleet.setConfig(this.sandboxId, text);
	}
	kill() {
		return this.fleet.kill(this.sandboxId);
	}
	destroy() {
		return this.kill();
	}
}

export class Fleet {
	constructor(root) {
		this.root = root;
	}

	_path(id, ...rest) {
		return join(this.root, checkName(id, 'sandbox'), ...rest);
	}

	/* A new sandbox, up once this resolves: with `id`, that one (SandboxAlreadyExistsError if it
	 * is there), else a fresh id from `clone`; with `config` (ini text), running with that
	 * config (written to ID/config); with `template` (a path of this host's: a tar archive,
	 * plain or zstd, such as a snapshot's `archive`), its workspace restored from it. What is
	 * refused destroys the sandbox again. SandboxLimitError past the fleet's bound. */
	async create(opts = {}) {
		let id = opts.id;
		try {
			if (id === undefined) id = (await readFile(join(this.root, 'clone'), 'utf8')).trim();
			else await mkdir(this._path(id));
			// A path into its fs/ waits for its daemon (EIO if it failed: its status says why).
			await stat(this._path(id, 'fs', 'sessions'));
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id ?? '(new)'}`);
		}
		try {
			if (opts.config !== undefined) await this.setConfig(id, opts.config);
			if (opts.template !== undefined) await this._fromTemplate(id, opts.template);
		} catch (err) {
			await this.kill(id).catch(() => {});
			throw err;
		}
		return new FleetSandbox(this, id, opts);
	}

	/* The archive imported as the snapshot `template` (all or nothing), then restored. */
	async _fromTemplate(id, archive) {
		if (typeof archive !== 'string') throw new ValidationError('a template is the path of a tar archive');
		const snaps = this._path(id, 'fs', 'snapshots');
		try {
			await pipeline(createReadStream(archive), createWriteStream(join(snaps, 'import', 'template')));
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id} template`);
		}
		try {
			await writeFile(join(snaps, 'template', 'ctl'), 'restore\n');
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id} template restore`);
		}
	}

	/* Its own config (ini text). */
	async getConfig(id) {
		try {
			return await readFile(this._path(id, 'config'), 'utf8');
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id}`);
		}
	}

	/* Replaces its config whole; resolves once it runs with it (a sleeping one reads it when it
	 * wakes). A config that does not load is a ValidationError, one past a budget a
	 * SandboxLimitError; either way the config stays as it was (the fleet's status says why). */
	async setConfig(id, text) {
		if (typeof text !== 'string') throw new ValidationError('a config is ini text');
		try {
			await writeFile(this._path(id, 'config'), text);
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id} config`);
		}
	}

	/* Every sandbox with its state (running, sleeping, ...), sorted by id. */
	async list() {
		const names = await readdir(this.root, { withFileTypes: true });
		const out = [];
		for (const d of names.filter((n) => n.isDirectory()).map((n) => n.name).sort()) {
			try {
				out.push(await this.getInfo(d));
			} catch (err) {
				if (!(err instanceof SandboxNotFoundError)) throw err; // gone meanwhile
			}
		}
		return out;
	}

	async getInfo(id) {
		try {
			return info(id, parseStatus(await readFile(this._path(id, 'status'), 'utf8')));
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id}`);
		}
	}

	/* The sandbox there is (SandboxNotFoundError if none); a sleeping one wakes on its first use. */
	async connect(id, opts) {
		await this.getInfo(id);
		return new FleetSandbox(this, id, opts);
	}

	/* Cloudflare's getSandbox(id): the sandbox, made if it is not there. */
	async getSandbox(id, opts = {}) {
		try {
			return await this.create({ ...opts, id });
		} catch (err) {
			if (err.code === 'SANDBOX_ALREADY_EXISTS') return new FleetSandbox(this, id, opts);
			throw err;
		}
	}

	/* Destroys it: its processes, mounts, uid and files; resolves once it is gone. */
	async kill(id) {
		try {
			await rmdir(this._path(id));
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id}`);
		}
	}

	async setKeepAlive(id, on) {
		if (typeof on !== 'boolean') throw new ValidationError('setKeepAlive takes true or false');
		try {
			await writeFile(this._path(id, 'keep_alive'), on ? 'yes\n' : 'no\n');
		} catch (err) {
			throw mapError(err, 'sandbox', `sandbox ${id}`);
		}
	}

	/* The fleet's own status: counts by state, its bound, the last create refused. */
	async status() {
		const st = parseStatus(await readFile(join(this.root, 'status'), 'utf8'));
		for (const k of Object.keys(st)) if (/^\d+$/.test(st[k])) st[k] = Number(st[k]);
		return st;
	}
}

/* The fleet mounted at `root`: a path that is no fleet (no fleet status in it) is a SandboxError
 * that says so. Nothing here reads clone, which would make a sandbox. */
export async function getFleet(root) {
	try {
		const st = await readFile(join(root, 'status'), 'utf8');
		if (!st.startsWith('sandboxes ')) throw new Error('not a fleet');
	} catch {
		throw new SandboxError(`${root}: not an sbxfs fleet (it has no fleet status)`, { errno: 'ENOENT' });
	}
	return new Fleet(root);
}
