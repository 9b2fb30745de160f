// Code interpreter contexts: contexts/NAME/ at the mount's root (issue 14), cells by run handle.
import { mkdir, readdir, rmdir, stat } from './io.js';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CodeInterpreterUnavailableError, ValidationError, mapError } from './errors.js';
import { ENV_NAME, envValue, follow, readText, submit, writeControl } from './fsio.js';
import { checkName, isName } from './names.js';
import { sseStream } from './sse.js';

const LANGUAGES = ['python', 'javascript', 'typescript'];

async function contextsDir(sandbox) {
	const dir = join(sandbox.mountpoint, 'contexts');
	const st = await stat(dir).catch(() => null);
	if (!st?.isDirectory())
		throw new CodeInterpreterUnavailableError(`${sandbox.mountpoint} has no contexts/: this sbxfs has no code interpreter contexts`);
	return dir;
}

function fail(err, id) {
	return mapError(err, 'context', `code context ${id}`);
}

export async function createCodeContext(sandbox, opts = {}) {
	const language = opts.language ?? 'python';
	if (!LANGUAGES.includes(language)) throw new ValidationError(`unknown language: ${language}`);
	const env = Object.entries(opts.envVars ?? {});
	for (const [name] of env) if (!ENV_NAME.test(name)) throw new ValidationError(`invalid environment variable name: ${name}`);
	if (opts.id !== undefined) checkName(opts.id, 'code context');
	const root = await contextsDir(sandbox);
	let id = opts.id;
	try {
		if (id === undefined) id = (await readText(join(root, 'clone'))).trim();
		else await mkdir(join(root, id));
	} catch (err) {
		throw fail(err, id);
	}
	const dir = join(root, id);
	try {
		await writeControl(join(dir, 'language'), `${language}\n`);
		if (opts.cwd) await writeControl(join(dir, 'cwd'), `${opts.cwd}\n`);
		if (env.length) await writeControl(join(dir, 'env'), env.map(([k, v]) => `${k}=${envValue(v)}\n`).join(''));
		if (opts.timeout) await writeControl(join(dir, 'timeout'), `${opts.timeout}\n`);
		// Read back: with none given it is the one the interpreter starts in, the workspace.
		const cwd = (await readText(join(dir, 'cwd'))).replace(/\n$/, '');
		const now = new Date();
		return { id, language, cwd, createdAt: now, lastUsed: now };
	} catch (err) {
		// Removed again, so that a bad cwd or env leaves none of the mount's 16 contexts taken.
		await rmdir(dir).catch(() => {});
		throw fail(err, id);
	}
}

export async function listCodeContexts(sandbox) {
	const root = await contextsDir(sandbox);
	const out = [];
	for (const id of await readdir(root)) {
		if (id === 'clone' || !isName(id)) continue;
		const dir = join(root, id);
		const read = (f) => readText(join(dir, f)).then((t) => t.replace(/\n$/, ''), () => undefined);
		out.push({ id, language: await read('language'), cwd: await read('cwd') });
	}
	return out;
}

export async function deleteCodeContext(sandbox, id) {
	checkName(id, 'code context');
	const root = await contextsDir(sandbox);
	try {
		await rmdir(join(root, id));
	} catch (err) {
		throw fail(err, id);
	}
}

/* Each sandbox's default contexts, by language (kept out of the sandbox object, so that it
 * serialises as the sandbox). */
const defaultContexts = new WeakMap();

/* The context for runCode: the one given, else one per language kept for the sandbox. */
async function contextId(sandbox, opts) {
	if (opts.context !== undefined && opts.context !== null)
		return checkName(typeof opts.context === 'string' ? opts.context : opts.context.id, 'code context');
	const language = opts.language ?? 'python';
	if (!defaultContexts.has(sandbox)) defaultContexts.set(sandbox, new Map());
	const byLanguage = defaultContexts.get(sandbox);
	if (!byLanguage.has(language)) byLanguage.set(language, createCodeContext(sandbox, { language }));
	return (await byLanguage.get(language)).id;
}

async function submitCell(sandbox, code, opts) {
	const id = await contextId(sandbox, opts);
	const dir = join(await contextsDir(sandbox), id);
	try {
		if (opts.timeout) await writeControl(join(dir, 'ctl'), `timeout ${opts.timeout}\n`);
		const n = await submit(join(dir, 'code'), code);
		return { id, cellDir: join(dir, 'cells', String(n)), n };
	} catch (err) {
		throw fail(err, id);
	}
}

function followCell(cellDir, emit) {
	return Promise.all(
		['stdout', 'stderr'].map((stream) => {
			const decoder = new StringDecoder('utf8');
			return follow(join(cellDir, stream), (bytes) => {
				const text = decoder.write(bytes);
				if (text) emit(stream, { text, timestamp: Date.now() });
			});
		}),
	);
}

/* The SDK's Execution: results[], logs {stdout[], stderr[]}, error, executionCount. */
export async function runCode(sandbox, code, opts = {}) {
	const { cellDir, n } = await submitCell(sandbox, code, opts);
	const streaming =
		opts.onStdout || opts.onStderr
			? followCell(cellDir, (stream, msg) => (stream === 'stdout' ? opts.onStdout : opts.onStderr)?.(msg))
			: null;
	const result = JSON.parse(await readText(join(cellDir, 'result')));
	if (streaming) await streaming;
	for (const r of result.results ?? []) await opts.onResult?.(r);
	if (result.error) await opts.onError?.(result.error);
	return { results: result.results ?? [], logs: result.logs ?? { stdout: [], stderr: [] }, error: result.error ?? undefined, executionCount: result.executionCount ?? n };
}

export function runCodeStream(sandbox, code, opts = {}) {
	return sseStream(async (emit) => {
		const { cellDir, n } = await submitCell(sandbox, code, opts);
		await followCell(cellDir, (type, msg) => emit({ type, ...msg }));
		const result = JSON.parse(await readText(join(cellDir, 'result')));
		for (const r of result.results ?? []) emit({ type: 'result', ...r });
		if (result.error) emit({ type: 'error', ...result.error });
		emit({ type: 'execution_complete', executionCount: result.executionCount ?? n });
	});
}
