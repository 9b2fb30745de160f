// gitCheckout: one request line to the session's checkout file, then its final line.
import { join } from 'node:path';
import { GitTimeoutError, ValidationError, gitError, mapError } from './errors.js';
import { readText, submit } from './fsio.js';

function requestLine(url, { branch, targetDir, depth } = {}) {
	const parts = [url];
	if (branch !== undefined) parts.push(`branch=${branch}`);
	if (targetDir !== undefined) parts.push(`dir=${targetDir}`);
	if (depth !== undefined) parts.push(`depth=${depth}`);
	for (const p of parts)
		if (typeof p !== 'string' || p === '' || /\s/.test(p))
			throw new ValidationError(`git checkout: invalid argument ${JSON.stringify(p)}`);
	return parts.join(' ') + '\n';
}

/* The checkout file shows the session's latest checkout, opened right after this one was
 * queued: a checkout queued by another caller in between would be read instead (its DIR is
 * checked). cloneTimeoutMs bounds the wait; the clone itself is bounded by the daemon's
 * [session] git_timeout_ms. */
export async function gitCheckout(session, url, opts = {}) {
	const path = join(session.dir, 'checkout');
	const line = requestLine(url, opts);
	let text;
	try {
		await submit(path, line);
		const abort = new AbortController();
		const ms = opts.cloneTimeoutMs;
		const timer = ms ? setTimeout(() => abort.abort(new GitTimeoutError(`git checkout of ${url}: no result within ${ms} ms`)), ms) : undefined;
		try {
			text = await readText(path, abort.signal);
		} finally {
			clearTimeout(timer);
		}
	} catch (err) {
		throw mapError(err, 'session', `git checkout of ${url}`);
	}
	const last = text.trimEnd().split('\n').pop() ?? '';
	let m = /^ok (\S+) (.*) (\S+)$/.exec(last);
	if (m)
		return { success: true, repoUrl: url, branch: m[3], targetDir: m[2], commit: m[1], timestamp: new Date().toISOString() };
	m = /^error ([a-z-]+): (.*)$/.exec(last);
	if (m) throw gitError(m[1], m[2]);
	throw gitError('io', `unexpected checkout status: ${last}`);
}
