// A sandbox over HTTP: its tree through sbxfs-bridge's /v1/sandbox/ID/fs/ routes (docs/api.md),
// under a root path of its own, so that the client's modules, which name files by path, reach
// it with the same calls as a mount. io.js sends a path under such a root here. Every call is
// one request; an error answer comes back as the errno the server's file operation met, so the
// client's errors are the same as on a mount.
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { getSystemErrorMap } from 'node:util';

const roots = new Map(); /* root path -> Remote */
let serial = 0;

/* errno name -> its words, as fs errors say them ("no such file or directory"). */
const WORDS = new Map([...getSystemErrorMap().values()]);

/* An error as fs gives it for errno `code`: "ENOENT: no such file or directory". */
function errnoError(code, fallback) {
	const err = new Error(`${code}: ${WORDS.get(code) ?? fallback}`);
	err.code = code;
	return err;
}

/* The remote and the path below its root ('' for the root), or null for a local path. */
export function remoteOf(path) {
	if (typeof path !== 'string' || !path.startsWith('/@sbxfs-remote-')) return null;
	const slash = path.indexOf('/', 1);
	const root = slash < 0 ? path : path.slice(0, slash);
	const r = roots.get(root);
	return r ? { r, rel: slash < 0 ? '' : path.slice(slash + 1) } : null;
}

export class Remote {
	/* url: http(s)://HOST:PORT/v1/sandbox/ID; token: a bearer secret; ca: a CA to trust. */
	constructor(url, { token, ca } = {}) {
		const u = new URL(url);
		if (!/^https?:$/.test(u.protocol) || !/^\/v1\/sandbox\/[A-Za-z0-9._-]{1,64}\/?$/.test(u.pathname))
			throw errnoError('EINVAL', `${url}: a sandbox's URL is http(s)://HOST:PORT/v1/sandbox/ID`);
		this.url = u;
		this.base = `${u.pathname.replace(/\/$/, '')}/fs/`;
		this.token = token;
		this.ca = ca;
		this.send = u.protocol === 'https:' ? httpsRequest : httpRequest;
		this.agent = new (u.protocol === 'https:' ? HttpsAgent : HttpAgent)({ keepAlive: true, ca });
		this.root = `/@sbxfs-remote-${++serial}`;
		roots.set(this.root, this);
	}

	path(rel) {
		return `${this.base}${rel.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
	}

	/* One request: resolves with the response (its body unread) for a 2xx, else rejects with
	 * the errno of the server's answer. */
	request(method, rel, { query = '', body, signal } = {}) {
		return new Promise((resolve, reject) => {
			const headers = {};
			if (this.token) headers.Authorization = `Bearer ${this.token}`;
			if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
			const req = this.send({
				host: this.url.hostname, port: this.url.port, method, agent: this.agent, signal,
				path: this.path(rel) + query, headers,
			}, (res) => {
				if (res.statusCode < 300) return resolve(res);
				const chunks = [];
				res.on('data', (c) => chunks.push(c));
				res.on('end', () => {
					let e = {};
					try {
						e = JSON.parse(Buffer.concat(chunks).toString('utf8'));
					} catch {}
					const code = e.errno ?? (res.statusCode === 401 ? 'EACCES' : res.statusCode === 404 ? 'ENOENT' : 'EIO');
					reject(errnoError(code, e.error ?? `HTTP ${res.statusCode}`));
				});
				res.on('error', reject);
			});
			req.on('error', (err) => reject(err.name === 'AbortError' ? signal.reason ?? err : errnoError('EIO', `${this.url.host}: ${err.code ?? err.message}`)));
			req.end(body);
		});
	}

	async bytes(method, rel, opts) {
		const res = await this.request(method, rel, opts);
		const chunks = [];
		for await (const c of res) chunks.push(c);
		return Buffer.concat(chunks);
	}

	/* Each chunk of a GET to onChunk, to the end (a stream file: until its command ends). */
	async follow(rel, onChunk, signal) {
		let res;
		try {
			res = await this.request('GET', rel, { signal });
		} catch (err) {
			if (signal?.aborted) return;
			throw err;
		}
		try {
			for await (const c of res) onChunk(c);
		} catch (err) {
			if (!signal?.aborted) throw err;
		}
	}

	readAll(rel, signal) {
		return this.bytes('GET', rel, { signal });
	}

	readNow(rel) {
		return this.bytes('GET', rel, { query: '?nowait' });
	}

	write(rel, data) {
		return this.bytes('PUT', rel, { body: typeof data === 'string' ? Buffer.from(data) : data });
	}

	/* A run handle: the line the file answers after the write, on the same open. */
	submit(rel, text) {
		return this.bytes('PUT', rel, { query: '?reply', body: Buffer.from(text) });
	}

	async stat(rel) {
		const st = JSON.parse((await this.bytes('GET', rel, { query: '?stat' })).toString('utf8'));
		return {
			...st,
			mtime: new Date(st.mtimeMs),
			isDirectory: () => st.type === 'directory',
			isFile: () => st.type === 'file',
			isSymbolicLink: () => st.type === 'symlink',
			isFIFO: () => false, isSocket: () => false, isCharacterDevice: () => false, isBlockDevice: () => false,
		};
	}

	/* [{name, type}] (a name that is not UTF-8 is left out: no path of the client can name it). */
	async list(rel) {
		return JSON.parse((await this.bytes('GET', `${rel}/`)).toString('utf8')).filter((e) => e.name !== undefined);
	}

	mkdir(rel) {
		return this.bytes('POST', rel);
	}

	remove(rel) {
		return this.bytes('DELETE', rel);
	}

	rename(from, to) {
		const target = to.split('/').filter(Boolean).map(encodeURIComponent).join('/');
		return this.bytes('POST', from, { query: `?rename=${target}` });
	}
}
