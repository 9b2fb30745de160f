// The Bridge's error bodies ({error, code}) and what an errno of a file operation answers: one
// status and one code per errno, the table docs/api.md prints.

/* An answer a handler gives by throwing: status, a code of the Bridge's ErrorResponse (or one
 * of ours, docs/api.md), and a message. */
export class BridgeError extends Error {
	constructor(status, code, message, errno) {
		super(message);
		this.status = status;
		this.code = code;
		if (errno) this.errno = errno;
	}
}

export const invalid = (message) => new BridgeError(400, 'invalid_request', message);

/* errno -> [status, code]. A file operation's errno keeps its name in the message. */
export const ERRNO = {
	ENOENT: [404, 'not_found'],
	ENOTDIR: [404, 'not_found'],
	EEXIST: [409, 'exists'],
	ENOTEMPTY: [409, 'not_empty'],
	EBUSY: [409, 'busy'],
	ESRCH: [409, 'busy'],
	EISDIR: [409, 'is_directory'],
	EINVAL: [400, 'invalid_request'],
	ENAMETOOLONG: [400, 'invalid_request'],
	E2BIG: [413, 'too_large'],
	EFBIG: [413, 'too_large'],
	EACCES: [403, 'forbidden'],
	EPERM: [403, 'forbidden'],
	EROFS: [403, 'forbidden'],
	ELOOP: [403, 'forbidden'],
	EAGAIN: [503, 'unavailable'],
	EMFILE: [503, 'unavailable'],
	ENFILE: [503, 'unavailable'],
	ENOMEM: [503, 'unavailable'],
	ENOSPC: [507, 'capacity_exceeded'],
	EDQUOT: [507, 'capacity_exceeded'],
	EIO: [502, 'io_error'],
	ENOTCONN: [502, 'io_error'],
	ETIMEDOUT: [504, 'timeout'],
	EINTR: [503, 'unavailable'],
	ENOTSUP: [405, 'not_supported'],
	EOPNOTSUPP: [405, 'not_supported'],
	ENOSYS: [405, 'not_supported'],
};

/* The errno name of a Node fs error or of the client's SandboxError (which keeps it). */
export function errnoOf(err) {
	if (typeof err?.errno === 'string') return err.errno;
	return typeof err?.code === 'string' && /^E[A-Z0-9]+$/.test(err.code) ? err.code : null;
}

/* err as a BridgeError: its own, an errno's (what the request named, never a host path; the
 * errno's name kept in `errno`), or
 * `fallback` ([status, code]) with the message. */
export function toBridgeError(err, what, fallback = [500, 'internal_error']) {
	if (err instanceof BridgeError) return err;
	const e = errnoOf(err);
	if (e && ERRNO[e]) return Object.assign(new BridgeError(ERRNO[e][0], ERRNO[e][1], `${what}: ${e}`), { errno: e });
	if (err?.code === 'VALIDATION_FAILED') return invalid(err.message);
	return new BridgeError(fallback[0], fallback[1], `${what}: ${e ?? err?.message ?? String(err)}`);
}

export function sendError(res, err) {
	if (res.headersSent) return void res.destroy();
	/* errno: the file operation's, for a client that gives its callers the same errors as on
	 * a mount (remote.js). */
	const body = JSON.stringify(err.errno ? { error: err.message, code: err.code, errno: err.errno } : { error: err.message, code: err.code });
	res.writeHead(err.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
	res.end(body);
}
