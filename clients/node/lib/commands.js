// exec and execStream: a command submitted through a run handle, its result from runs/N/result.
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CommandTimeoutError, ValidationError, mapError } from './errors.js';
import { ENV_NAME, follow, readToEnd, shellQuote, submitAndWait } from './fsio.js';
import { sseStream } from './sse.js';

/* The command with a per-call env and cwd: in a subshell, so they hold for it alone. */
export function wrapCommand(command, { env, cwd } = {}) {
	const prefix = envCwdPrefix(env, cwd);
	if (!prefix) return command;
	return `( ${prefix}eval ${shellQuote(command)}\n)`;
}

/* `cd -- DIR || exit; export A=...; ` for a per-call cwd and env. */
export function envCwdPrefix(env, cwd) {
	let prefix = '';
	if (cwd !== undefined) prefix += `cd -- ${shellQuote(cwd)} || exit $?; `;
	for (const [name, value] of Object.entries(env ?? {})) {
		if (!ENV_NAME.test(name)) throw new ValidationError(`invalid environment variable name: ${name}`);
		if (value === undefined || value === null) prefix += `unset ${name}; `;
		else prefix += `export ${name}=${shellQuote(value)}; `;
	}
	return prefix;
}

/* Submits on the session's cmd; returns the run number and a promise of its raw result JSON,
 * tracked by the session while the command runs. A per-call timeout is the session's `ctl
 * timeout`, which the next command to start takes: it is written only once every command this
 * client submitted to the session has ended, so that next command is this one. */
export async function submitCommand(session, text, timeout) {
	const cmdPath = join(session.dir, 'cmd');
	return session._serialize(async () => {
		let submitted;
		try {
			let ctl;
			if (timeout !== undefined && timeout !== null) {
				if (!Number.isInteger(timeout) || timeout < 0)
					throw new ValidationError(`invalid timeout: ${timeout}`);
				await session._drain();
				ctl = `timeout ${timeout}\n`;
			}
			submitted = await submitAndWait(cmdPath, text, ctl);
		} catch (err) {
			throw mapError(err, 'session', `session ${session.id}`);
		}
		const { n, result } = submitted;
		return { n, runDir: join(session.dir, 'runs', String(n)), raw: session._track(result) };
	});
}

function decodeField(raw, name) {
	const value = raw[name] ?? '';
	return raw[`${name}Encoding`] === 'base64' ? Buffer.from(value, 'base64').toString('utf8') : value;
}

/* The SDK's ExecResult from the daemon's result JSON; a stream past the 1 MiB the JSON embeds
 * is read whole from runs/N/. */
export async function toExecResult(raw, runDir, command) {
	const out = {
		success: raw.success,
		exitCode: raw.exitCode,
		stdout: decodeField(raw, 'stdout'),
		stderr: decodeField(raw, 'stderr'),
		command,
		duration: raw.duration,
		timestamp: raw.timestamp,
		sessionId: raw.sessionId,
		run: raw.run,
		signal: raw.signal,
		timedOut: raw.timedOut,
		truncated: raw.truncated,
		error: raw.error,
	};
	for (const name of ['stdout', 'stderr'])
		if (raw[`${name}Truncated`] && !raw.truncated)
			out[name] = (await readToEnd(join(runDir, name))).toString('utf8');
	return out;
}

function timeoutError(result) {
	const err = new CommandTimeoutError(`command timed out: ${result.command}`, { details: result });
	err.result = result;
	return err;
}

/* Follows runs/N/stdout and stderr, calling onOutput(stream, text) as output comes. */
function followOutput(runDir, onOutput) {
	return Promise.all(
		['stdout', 'stderr'].map((stream) => {
			const decoder = new StringDecoder('utf8');
			return follow(join(runDir, stream), (bytes) => {
				const text = decoder.write(bytes);
				if (text) onOutput(stream, text);
			}).then(() => {
				const rest = decoder.end();
				if (rest) onOutput(stream, rest);
			});
		}),
	);
}

export async function exec(session, command, opts = {}) {
	const { runDir, raw } = await submitCommand(session, wrapCommand(command, opts), opts.timeout);
	const streaming = opts.onOutput ? followOutput(runDir, opts.onOutput) : null;
	let result;
	try {
		result = await toExecResult(await raw, runDir, command);
	} catch (err) {
		streaming?.catch(() => {}); // its failure is this one's, already thrown
		throw err;
	}
	if (streaming) await streaming;
	if (result.timedOut) throw timeoutError(result);
	return result;
}

export function execStream(session, command, opts = {}) {
	return sseStream(async (emit) => {
		const now = () => new Date().toISOString();
		const { n, runDir, raw } = await submitCommand(session, wrapCommand(command, opts), opts.timeout);
		emit({ type: 'start', timestamp: now(), command, run: n, sessionId: session.id });
		await followOutput(runDir, (type, data) => emit({ type, timestamp: now(), data }));
		const result = await toExecResult(await raw, runDir, command);
		if (result.timedOut) throw timeoutError(result);
		emit({ type: 'complete', timestamp: now(), exitCode: result.exitCode, result });
	});
}
