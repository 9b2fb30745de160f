// Terminals: sessions/ID/terms/NAME/, a program on a pty driven through in, size, ctl, wait.
import { mkdir, rmdir } from './io.js';
import { join } from 'node:path';
import { TerminalError, mapError } from './errors.js';
import { envCwdPrefix } from './commands.js';
import { parseStatus, readSnapshot, readText, shellQuote, writeControl } from './fsio.js';
import { checkName } from './names.js';

export class Terminal {
	constructor(session, id) {
		this.id = checkName(id, 'terminal');
		// Not enumerable, as a Process's: JSON.stringify(terminal) gives its id, not a cycle.
		Object.defineProperties(this, {
			session: { value: session },
			dir: { value: join(session.dir, 'terms', id) },
		});
	}

	_fail(err) {
		return mapError(err, 'terminal', `terminal ${this.id}`);
	}

	async _write(file, data) {
		try {
			await writeControl(join(this.dir, file), data);
		} catch (err) {
			throw this._fail(err);
		}
	}

	/* Bytes as typed: `\r` is Enter, `\x03` Ctrl-C. The first write starts an interactive shell
	 * when no command was given. */
	write(data) {
		return this._write('in', data);
	}

	resize(cols, rows) {
		return this._write('size', `${rows} ${cols}\n`);
	}

	interrupt() {
		return this._write('ctl', 'interrupt\n');
	}

	async terminate(signal) {
		try {
			await this._write('ctl', `kill${signal ? ' ' + String(signal).replace(/^SIG/, '') : ''}\n`);
		} catch (err) {
			if (err.errno !== 'ESRCH') throw err;
		}
	}

	/* The raw output held now (the last [session] term_ring bytes), without waiting. */
	async output() {
		try {
			return (await readSnapshot(join(this.dir, 'out'))).toString('utf8');
		} catch (err) {
			throw this._fail(err);
		}
	}

	/* The screen as text, one line a row. */
	async screen() {
		try {
			return await readText(join(this.dir, 'screen'));
		} catch (err) {
			throw this._fail(err);
		}
	}

	/* Waits until a line of the screen matches the extended regular expression; returns it. */
	async waitFor(pattern) {
		const path = join(this.dir, 'wait');
		try {
			await writeControl(path, `${pattern}\n`);
			const line = await readText(path);
			if (!line) throw new TerminalError(`terminal ${this.id} ended before a line matched ${pattern}`);
			return line.replace(/\n$/, '');
		} catch (err) {
			throw this._fail(err);
		}
	}

	async getStatus() {
		try {
			return parseStatus(await readText(join(this.dir, 'status')));
		} catch (err) {
			throw this._fail(err);
		}
	}

	async waitForExit() {
		try {
			return { exitCode: Number(await readText(join(this.dir, 'exit'))) };
		} catch (err) {
			throw this._fail(err);
		}
	}

	/* Ends the program with its whole tree and removes the terminal. */
	async close() {
		try {
			await rmdir(this.dir);
		} catch (err) {
			if (err.code !== 'ENOENT') throw this._fail(err);
		}
	}
}

/* command: an argv array or a shell line; none starts the session's interactive shell. */
export async function createTerminal(session, opts = {}) {
	const id = opts.id ?? `term-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
	const term = new Terminal(session, id);
	try {
		await mkdir(term.dir);
	} catch (err) {
		throw term._fail(err);
	}
	if (opts.cols || opts.rows) await term.resize(opts.cols ?? 80, opts.rows ?? 24);
	const env = opts.env ?? opts.envVars;
	let line = Array.isArray(opts.command) ? `exec ${opts.command.map(shellQuote).join(' ')}` : opts.command;
	if (env || opts.cwd) line = `${envCwdPrefix(env, opts.cwd)}${line ?? 'exec bash -i'}`;
	if (line) await term._write('cmd', `${line}\n`);
	return term;
}
