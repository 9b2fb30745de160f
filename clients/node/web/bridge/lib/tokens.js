// Who may call the Bridge: bearer tokens from the operator's tokens file, one per line
// `NAME SCOPE SECRET` (SCOPE `*` for the whole fleet, or one sandbox id). The file is read again
// when it changes, so a line removed is a token revoked on the next request. Secrets are kept
// by their SHA-256 and looked up by digest: a lookup's time tells nothing of a secret's bytes.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';

const SECRET_MIN = 16;
const LINE = /^([A-Za-z0-9._-]{1,64}) (\*|[A-Za-z0-9._-]{1,64}) (\S+)$/;

const digest = (s) => createHash('sha256').update(s).digest('hex');

/* name -> {name, scope} by digest of the secret; throws with the line that is wrong. */
export function parseTokens(text, file) {
	const byDigest = new Map();
	const names = new Set();
	text.split('\n').forEach((raw, i) => {
		const line = raw.trim();
		if (line === '' || line.startsWith('#')) return;
		const m = LINE.exec(line);
		if (!m) throw new Error(`${file}:${i + 1}: expected "NAME SCOPE SECRET" (SCOPE is * or a sandbox id)`);
		const [, name, scope, secret] = m;
		if (secret.length < SECRET_MIN) throw new Error(`${file}:${i + 1}: a secret has at least ${SECRET_MIN} characters`);
		if (names.has(name)) throw new Error(`${file}:${i + 1}: the name ${name} is there twice`);
		names.add(name);
		byDigest.set(digest(secret), { name, scope });
	});
	return byDigest;
}

/* The tokens of `file`, which only its owner may read (as ssh's keys). */
function load(file) {
	const fd = openSync(file, 'r');
	try {
		const st = fstatSync(fd);
		if (st.mode & 0o077) throw new Error(`${file}: group or others may read it: chmod 600 it`);
		return { tokens: parseTokens(readFileSync(fd, 'utf8'), file), key: `${st.ino}:${st.size}:${st.mtimeMs}` };
	} finally {
		closeSync(fd);
	}
}

export class Tokens {
	constructor(file) {
		this.file = file;
		({ tokens: this.tokens, key: this.key } = load(file));
	}

	/* Read again if the file changed; a file that became wrong revokes every token (and says
	 * why once) rather than keeping the old ones. */
	refresh() {
		let key;
		try {
			const st = statSync(this.file);
			key = `${st.ino}:${st.size}:${st.mtimeMs}`;
		} catch {
			key = 'gone';
		}
		if (key === this.key) return;
		this.key = key;
		try {
			this.tokens = load(this.file).tokens;
		} catch (e) {
			this.tokens = new Map();
			process.stderr.write(`sbxfs-bridge: every token revoked: ${e.message}\n`);
		}
	}

	/* {name, scope} of the request's bearer token (or `?token=` where `query` allows), or null. */
	caller(req, query = null) {
		this.refresh();
		const m = /^Bearer ([\x21-\x7e]+)$/i.exec(req.headers.authorization ?? '');
		const secret = m ? m[1] : query;
		return typeof secret === 'string' ? (this.tokens.get(digest(secret)) ?? null) : null;
	}
}

/* Whether a caller may act on sandbox `id` (null: the fleet itself, as POST /v1/sandbox). */
export function allows(caller, id) {
	return caller.scope === '*' || (id !== null && caller.scope === id);
}
