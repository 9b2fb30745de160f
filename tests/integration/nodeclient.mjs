// Runs calls of the Node client (clients/node) against a mount for the Python tests: a JSON
// request on stdin, {mount, calls}, and the outcome of each call as JSON on stdout, so that one
// node process serves a whole test. A call is {on, method, args, stream}: `on` is "sandbox",
// {"session": ID} (getSession) or {"construct": ID} (new ExecutionSession, no check by the
// mount); `stream` collects the SSE events of a returned stream. {"parallel": [calls]} runs
// calls at once. A call with `watchFor: {ms, touch}` is a watch(): its events are collected
// for `ms` while the host appends to each path of `touch`, then it stops. An outcome is {ok,
// value} or {ok: false, error: {name, errno, code, message}}, with `ms`; the last line also
// gives the process's peak memory (maxRSS, KiB): VmHWM, its own memory's. getrusage's maxrss
// is the larger of that and the parent's peak at the exec (a vfork's child execs from the
// parent's memory), so a test runner grown large would pass for this process.
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionSession, getSandbox, parseSSEStream } from '../../clients/node/index.js';

const input = JSON.parse(await new Response(process.stdin).text());
const sandbox = getSandbox(input.mount, input.options);

/* What a result says, small and as JSON: objects of the client by their id. */
function summary(value) {
	if (value === undefined || value === null) return null;
	if (typeof value === 'string') return value.length > 400 ? `${value.slice(0, 400)}...` : value;
	if (typeof value !== 'object') return value;
	if ('session' in value && 'id' in value) return { id: value.id };
	if (value instanceof ExecutionSession) return { id: value.id };
	if (Array.isArray(value)) return value.map(summary);
	return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, summary(v)]));
}

async function target(on) {
	if (on === undefined || on === 'sandbox') return sandbox;
	if (on.session !== undefined) return sandbox.getSession(on.session);
	return new ExecutionSession(sandbox, on.construct);
}

async function call({ on, method, args = [], stream = false, watchFor }) {
	const t0 = performance.now();
	const events = [];
	if (watchFor) args = [args[0], { ...args[1], onEvent: (e) => events.push(e) }];
	try {
		let value = await (await target(on))[method](...args);
		if (watchFor) {
			for (const path of watchFor.touch) appendFileSync(path, 'x');
			await sleep(watchFor.ms);
			value.stop();
			value = events;
		}
		if (stream) {
			const got = [];
			for await (const ev of parseSSEStream(value)) got.push(ev);
			value = got;
		}
		return { ok: true, value: summary(value), ms: performance.now() - t0 };
	} catch (err) {
		const { name, errno, code, message } = err;
		return { ok: false, error: { name, errno, code, message }, ms: performance.now() - t0 };
	}
}

const outcomes = [];
for (const c of input.calls) outcomes.push(c.parallel ? { parallel: await Promise.all(c.parallel.map(call)) } : await call(c));
const maxRSS = Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
process.stdout.write(`${JSON.stringify(outcomes)}\n${JSON.stringify({ maxRSS })}\n`);
