// The page: sessions, a command's live output, history, terminals (xterm.js over a WebSocket),
// background processes, exposed ports, the network (policy and log), snapshots and interpreter contexts, the journal
// and metrics graphs (observe.js). Text from the sandbox goes in as textContent,
// or through AnsiToHtml, which escapes it; HTML results only inside sandboxed iframes.
import { AnsiToHtml } from './ansi.js';
import { drawMetrics, refreshJournal, sampleMetrics } from './observe.js';

const $ = (sel) => document.querySelector(sel);
const state = { session: null, context: null, tab: 'commands', runStream: null, terms: new Map(), termTab: null };

function el(tag, props = {}, ...children) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(props)) {
		if (k === 'class') e.className = v;
		else if (k === 'dataset') Object.assign(e.dataset, v);
		else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
		else e[k] = v;
	}
	for (const c of children) e.append(c);
	return e;
}

async function api(method, path, body) {
	if (method === 'POST') body ??= {};
	const res = await fetch(`/api/${path}`, {
		method,
		headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	if (!res.ok) {
		/* The API's errors are JSON; the gates' (a 401 after sbxfs-web restarted, say) are
		 * text that says what to do. */
		const text = await res.text();
		let msg = text.trim() || `${res.status}`;
		try {
			msg = JSON.parse(text).error ?? msg;
		} catch {}
		throw new Error(`${method} ${path}: ${msg}`);
	}
	return res.status === 204 ? null : res.json();
}

function report(e) {
	$('#status-line').textContent = e ? String(e.message ?? e) : '';
}

const enc = encodeURIComponent;

/* Re-renders a list only when its data changed, so a click never lands on a row that was
 * replaced under the pointer. */
const rendered = new Map();
function changed(key, data) {
	const text = JSON.stringify(data);
	if (rendered.get(key) === text) return false;
	rendered.set(key, text);
	return true;
}

/* ---- sessions ---- */

async function refreshSessions() {
	const list = await api('GET', 'sessions');
	state.sessionIds = list.map((s) => s.id);
	if (state.session && !list.some((s) => s.id === state.session)) selectSession(null);
	if (!changed('sessions', [list, state.session])) return;
	const ul = $('#sessions');
	ul.replaceChildren(...list.map((s) => el('li', {
		class: s.id === state.session ? 'selected' : '',
		dataset: { session: s.id },
		onclick: () => selectSession(s.id),
	}, el('b', { textContent: s.id }), ' ', el('span', { class: `badge ${s.state.split(' ')[0]}`, textContent: s.state }),
	el('div', { class: 'meta', textContent: s.cwd }),
	el('div', { class: 'meta' }, el('code', { textContent: s.command.split('\n')[0] })))));
}

function selectSession(id) {
	if (state.session !== id) closeSessionViews();
	state.session = id;
	state.context = null;
	$('#context').hidden = true;
	$('#session').hidden = !id;
	$('#nothing').hidden = !!id;
	if (!id) return;
	$('#session-title').textContent = `Session ${id}`;
	for (const li of document.querySelectorAll('#sessions li')) li.classList.toggle('selected', li.dataset.session === id);
	showTab(state.tab);
	tick();
}

function closeSessionViews() {
	state.runStream?.close();
	state.runStream = null;
	$('#output').replaceChildren();
	$('#exit-line').textContent = '';
	$('#run-head').textContent = '';
	$('#proc-logs').textContent = '';
	$('#proc-logs-title').textContent = '';
	for (const name of [...state.terms.keys()]) closeTerm(name);
	$('#term-tabs').replaceChildren();
}

function showTab(tab) {
	state.tab = tab;
	history.replaceState(null, '', `#${enc(state.session)}:${tab}`);
	for (const b of document.querySelectorAll('#session > .tabs button')) b.classList.toggle('active', b.dataset.tab === tab);
	for (const t of ['commands', 'terminals', 'procs', 'metrics']) $(`#tab-${t}`).hidden = t !== tab;
	if (tab === 'terminals') fitTerm(state.termTab);
	tick();
}

/* ---- commands ---- */

function clearRun() {
	state.runStream?.close();
	state.runStream = null;
	$('#output').replaceChildren();
	const exitLine = $('#exit-line');
	exitLine.textContent = 'running…';
	exitLine.className = '';
	delete exitLine.dataset.exit;
	$('#run-head').textContent = '';
}

function watchRun(id, n) {
	clearRun();
	const out = $('#output');
	const exitLine = $('#exit-line');
	$('#run-head').textContent = `#${n}`;
	const conv = { stdout: new AnsiToHtml(), stderr: new AnsiToHtml() };
	const es = new EventSource(`/api/sessions/${enc(id)}/runs/${n}/stream`);
	state.runStream = es;
	es.addEventListener('out', (ev) => {
		const { s, d } = JSON.parse(ev.data);
		const span = el('span', { class: s });
		span.innerHTML = conv[s].push(d);
		const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
		out.append(span);
		if (atEnd) out.scrollTop = out.scrollHeight;
	});
	es.addEventListener('end', (ev) => {
		const r = JSON.parse(ev.data);
		$('#run-head').textContent = `#${r.n} ${r.command}`;
		exitLine.textContent = `exit ${r.exit}` + (r.signal ? ` (signal ${r.signal})` : '') +
			(r.timedOut ? ' (timed out)' : '') + ` · ${formatDuration(r.duration)}` + (r.error ? ` · ${r.error}` : '');
		exitLine.className = r.exit === 0 ? 'ok' : 'bad';
		exitLine.dataset.exit = String(r.exit);
		es.close();
		tick();
	});
	es.addEventListener('failure', (ev) => {
		exitLine.textContent = `failed: ${JSON.parse(ev.data).error}`;
		es.close();
	});
	es.onerror = () => es.close(); /* no automatic retry: it would replay the output again */
}

function formatDuration(s) {
	return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

async function refreshRuns() {
	const runs = await api('GET', `sessions/${enc(state.session)}/runs`);
	if (!changed('runs', [state.session, runs])) return;
	$('#runs tbody').replaceChildren(...runs.map((r) => el('tr', { onclick: () => watchRun(state.session, r.n) },
		el('td', { textContent: r.n }), el('td', {}, el('code', { textContent: r.command })),
		el('td', { textContent: r.exit ?? r.state }), el('td', { textContent: r.exit === null ? '' : formatDuration(r.duration) }))));
}

/* ---- terminals ---- */

function openTerm(name) {
	if (state.terms.has(name)) return switchTerm(name);
	const box = el('div', { class: 'term', dataset: { term: name } });
	$('#terms').append(box);
	const term = new window.Terminal({ convertEol: false, scrollback: 5000, fontSize: 14 });
	const fit = new window.FitAddon.FitAddon();
	term.loadAddon(fit);
	term.open(box);
	const entry = { term, fit, box, ws: null };
	state.terms.set(name, entry);
	$('#term-tabs').append(el('button', { dataset: { term: name }, textContent: name, onclick: () => switchTerm(name) }),
		el('button', { dataset: { closeTerm: name }, textContent: '×', title: `end ${name}`, onclick: () => endTerm(name) }));
	switchTerm(name);
	const proto = location.protocol === 'https:' ? 'wss' : 'ws';
	const ws = new WebSocket(`${proto}://${location.host}/ws/sessions/${enc(state.session)}/terms/${enc(name)}?rows=${term.rows}&cols=${term.cols}`);
	ws.binaryType = 'arraybuffer';
	entry.ws = ws;
	ws.onmessage = (ev) => {
		if (typeof ev.data === 'string') {
			const msg = JSON.parse(ev.data);
			if (msg.type === 'exit') term.write(`\r\n[ended, exit ${msg.exit}]\r\n`);
		} else {
			term.write(new Uint8Array(ev.data));
		}
	};
	ws.onclose = () => box.classList.add('closed');
	const te = new TextEncoder();
	term.onData((d) => ws.readyState === 1 && ws.send(te.encode(d)));
	term.onBinary((d) => ws.readyState === 1 && ws.send(Uint8Array.from(d, (c) => c.charCodeAt(0))));
	term.onResize(({ rows, cols }) => ws.readyState === 1 && ws.send(JSON.stringify({ type: 'resize', rows, cols })));
	ws.onopen = () => ws.send(JSON.stringify({ type: 'resize', rows: term.rows, cols: term.cols }));
}

function switchTerm(name) {
	state.termTab = name;
	for (const [n, t] of state.terms) t.box.hidden = n !== name;
	for (const b of document.querySelectorAll('#term-tabs button[data-term]')) b.classList.toggle('active', b.dataset.term === name);
	fitTerm(name);
	state.terms.get(name)?.term.focus();
}

function fitTerm(name) {
	const t = state.terms.get(name);
	if (t && !t.box.hidden && !$('#tab-terminals').hidden) t.fit.fit();
}

function closeTerm(name) {
	const t = state.terms.get(name);
	if (!t) return;
	t.ws?.close();
	t.term.dispose();
	t.box.remove();
	state.terms.delete(name);
	for (const b of document.querySelectorAll('#term-tabs button')) if (b.dataset.term === name || b.dataset.closeTerm === name) b.remove();
}

async function endTerm(name) {
	closeTerm(name);
	await api('DELETE', `sessions/${enc(state.session)}/terms/${enc(name)}`).catch(report);
	const next = state.terms.keys().next();
	if (!next.done) switchTerm(next.value);
}

async function refreshTerms() {
	const terms = await api('GET', `sessions/${enc(state.session)}/terms`);
	for (const t of terms) if (!state.terms.has(t.name) && ['idle', 'starting', 'running'].includes(t.state)) openTerm(t.name);
}

/* ---- background processes ---- */

async function refreshProcs() {
	const id = state.session;
	const procs = await api('GET', `sessions/${enc(id)}/procs`);
	if (!changed('procs', [id, procs, [...(state.ports ?? [])]])) return;
	$('#procs tbody').replaceChildren(...procs.map((p) => el('tr', { dataset: { proc: p.name } },
		el('td', { textContent: p.name }), el('td', {}, el('span', { class: `badge ${p.state}`, textContent: p.state })),
		el('td', { textContent: p.pid }), el('td', {}, ...p.ports.map(portCell)), el('td', { textContent: p.exit }),
		el('td', {}, el('code', { textContent: p.command })),
		el('td', {},
			el('button', { textContent: 'logs', onclick: () => showLogs(id, p.name) }),
			el('button', { class: 'danger', textContent: 'kill', disabled: p.state !== 'running', onclick: () => act('POST', `sessions/${enc(id)}/procs/${enc(p.name)}/kill`) }),
			el('button', { textContent: 'remove', onclick: () => act('DELETE', `sessions/${enc(id)}/procs/${enc(p.name)}`) })))));
}

async function showLogs(id, name) {
	const logs = await api('GET', `sessions/${enc(id)}/procs/${enc(name)}/logs`);
	$('#proc-logs-title').textContent = `Logs of ${name}`;
	const out = $('#proc-logs');
	out.replaceChildren();
	for (const s of ['stdout', 'stderr']) {
		const span = el('span', { class: s });
		span.innerHTML = new AnsiToHtml().push(logs[s]);
		out.append(span);
	}
}

async function act(method, path, body) {
	try {
		await api(method, path, body);
		report(null);
	} catch (e) {
		report(e);
	}
	tick();
}

/* ---- exposed ports ---- */

/* Only what the daemon's url file holds (http, a numeric address, a port) becomes a link. */
const PORT_URL = /^http:\/\/(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}\/$/;

async function refreshPorts() {
	const ports = await api('GET', 'ports');
	state.ports = new Map(ports.map((p) => [p.port, p.url]));
	if (!changed('ports', ports)) return;
	$('#ports').replaceChildren(...ports.map((p) => el('li', { dataset: { port: p.port } },
		el('b', { textContent: p.port }), ' ',
		PORT_URL.test(p.url) ? el('a', { href: p.url, target: '_blank', rel: 'noopener noreferrer', textContent: p.url }) : el('code', { textContent: p.url }),
		p.name ? el('div', { class: 'meta', textContent: p.name }) : '',
		el('button', { class: 'danger', textContent: '×', title: 'unexpose', onclick: () => act('DELETE', `ports/${p.port}`) }))));
}

/* A process's port: a link once exposed, else a button that exposes it. */
function portCell(port) {
	const url = state.ports?.get(port);
	if (url && PORT_URL.test(url)) return el('a', { href: url, target: '_blank', rel: 'noopener noreferrer', textContent: String(port) });
	return el('button', { textContent: `expose ${port}`, onclick: () => act('POST', 'ports', { port }) });
}

/* ---- the network ---- */

const ruleLine = (verb, pattern, priv) => `${verb} ${pattern}${priv ? ' private' : ''}`;
const logLine = (e) => `${e.time.slice(11, 19)} ${e.session ?? '-'} ${e.decision} ${e.target} (${e.reason})`;

async function refreshNetwork() {
	const net = await api('GET', 'network');
	if (!changed('network', net)) return;
	const rules = [...net.allow.map((r) => ruleLine('allow', r.pattern, r.private)), ...net.deny.map((p) => ruleLine('deny', p))];
	$('#network-mode').textContent = net.mode;
	$('#network-rules').replaceChildren(...rules.map((r) => el('li', { textContent: r })));
	// host mode is switched only by a remount: no form for it.
	$('#network-policy').hidden = net.mode === 'host';
	if (document.activeElement !== $('#network-policy-rules') && document.activeElement !== $('#network-policy-mode')) {
		$('#network-policy-mode').value = net.mode;
		$('#network-policy-rules').value = rules.join('\n');
	}
	// Newest first, as a log is read for what just happened.
	$('#network-log').textContent = net.log.map(logLine).reverse().join('\n');
}

/* The form's rules: `allow PATTERN [private]` and `deny PATTERN` lines, as the policy file
 * has them; the server and the daemon check each. */
function policyOf(mode, text) {
	const policy = { mode, allow: [], deny: [] };
	for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
		const [verb, pattern, marker, ...rest] = line.split(/\s+/);
		if (verb === 'allow' && pattern && (marker === undefined || marker === 'private') && !rest.length)
			policy.allow.push({ pattern, private: marker === 'private' });
		else if (verb === 'deny' && pattern && marker === undefined) policy.deny.push(pattern);
		else throw new Error(`not a rule: ${line}`);
	}
	return policy;
}

/* ---- snapshots ---- */

async function refreshSnapshots() {
	const list = await api('GET', 'snapshots');
	if (!changed('snapshots', list)) return;
	$('#snapshots').replaceChildren(...list.map((s) => el('li', { dataset: { snapshot: s.name } },
		el('b', { textContent: s.name }), ' ',
		el('span', { class: 'badge', textContent: s.state === 'ready' ? s.time.slice(0, 19).replace('T', ' ') : s.state }), ' ',
		el('button', { textContent: 'restore', disabled: s.state !== 'ready', onclick: () => restoreSnapshot(s.name) }),
		el('button', { class: 'danger', textContent: '×', title: 'delete', onclick: () => act('DELETE', `snapshots/${enc(s.name)}`) }))));
}

/* A restore while something runs is refused (409); the user may then end it all and restore. */
async function restoreSnapshot(name) {
	if (!confirm(`Make the workspace what it was in snapshot ${name}?`)) return;
	try {
		await api('POST', `snapshots/${enc(name)}/restore`, {});
		report(null);
	} catch (e) {
		if (!/EBUSY/.test(String(e.message)) || !confirm('Something runs in the sandbox: end it, then restore?')) return report(e);
		await act('POST', `snapshots/${enc(name)}/restore`, { force: true });
	}
}

/* ---- contexts ---- */

async function refreshContexts() {
	const info = await api('GET', 'info');
	$('#contexts-nav').hidden = !info.contexts;
	if (!info.contexts) return;
	const list = await api('GET', 'contexts');
	if (!changed('contexts', [list, state.context])) return;
	$('#contexts').replaceChildren(...list.map((c) => el('li', {
		class: c.name === state.context ? 'selected' : '', dataset: { context: c.name }, onclick: () => selectContext(c.name),
	}, el('b', { textContent: c.name }), ' ', el('span', { class: 'badge', textContent: c.language }))));
}

function selectContext(name) {
	selectSession(null);
	$('#nothing').hidden = true;
	state.context = name;
	$('#context').hidden = false;
	$('#context-title').textContent = `Context ${name}`;
	$('#cells').replaceChildren();
}

async function runCell(code) {
	const name = state.context;
	const { cell } = await api('POST', `contexts/${enc(name)}/run`, { code });
	const box = el('div', { class: 'cell', dataset: { cell } }, el('pre', { textContent: `[${cell}] ${code}` }));
	const out = el('pre', { class: 'output' });
	box.append(out);
	$('#cells').prepend(box);
	const conv = { stdout: new AnsiToHtml(), stderr: new AnsiToHtml() };
	const es = new EventSource(`/api/contexts/${enc(name)}/cells/${cell}/stream`);
	es.addEventListener('out', (ev) => {
		const { s, d } = JSON.parse(ev.data);
		const span = el('span', { class: s });
		span.innerHTML = conv[s].push(d);
		out.append(span);
	});
	es.addEventListener('end', (ev) => {
		es.close();
		showResult(box, JSON.parse(ev.data));
	});
	es.addEventListener('failure', (ev) => {
		es.close();
		box.append(el('pre', { class: 'stderr', textContent: JSON.parse(ev.data).error }));
	});
	es.onerror = () => es.close();
}

/* Each result in its richest safe form: PNG/JPEG as an image, HTML in a sandboxed iframe
 * (no scripts, no same origin), else text. */
function showResult(box, result) {
	for (const r of result.results ?? []) {
		if (r.png) box.append(el('img', { src: `data:image/png;base64,${r.png}`, alt: 'result' }));
		else if (r.jpeg) box.append(el('img', { src: `data:image/jpeg;base64,${r.jpeg}`, alt: 'result' }));
		else if (r.html) {
			const f = el('iframe', { srcdoc: r.html });
			f.setAttribute('sandbox', '');
			box.append(f);
		} else if (r.text !== undefined) box.append(el('pre', { textContent: r.text }));
	}
	if (result.error) {
		const e = result.error;
		box.append(el('pre', { class: 'stderr', textContent: `${e.name ?? 'Error'}: ${e.value ?? e.message ?? ''}\n${[].concat(e.traceback ?? []).join('\n')}` }));
	}
}

/* ---- refresh and wiring ---- */

let ticking = false;
async function tick() {
	if (ticking) return;
	ticking = true;
	try {
		await refreshSessions();
		await refreshPorts();
		await refreshNetwork();
		await refreshSnapshots();
		await refreshContexts();
		await refreshJournal(api, state.sessionIds ?? []);
		await sampleMetrics(api);
		if (state.session) {
			if (state.tab === 'commands') await refreshRuns();
			if (state.tab === 'procs') await refreshProcs();
			if (state.tab === 'terminals') await refreshTerms();
			if (state.tab === 'metrics') drawMetrics(state.session);
		}
		report(null);
	} catch (e) {
		report(e);
	} finally {
		ticking = false;
	}
}

function wire() {
	$('#new-session').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		try {
			const { id } = await api('POST', 'sessions', { id: $('#new-session-id').value.trim() });
			$('#new-session-id').value = '';
			await tick();
			selectSession(id);
		} catch (e) {
			report(e);
		}
	});
	$('#delete-session').addEventListener('click', async () => {
		const id = state.session;
		selectSession(null);
		await act('DELETE', `sessions/${enc(id)}`);
	});
	for (const b of document.querySelectorAll('#session > .tabs button')) b.addEventListener('click', () => showTab(b.dataset.tab));
	$('#command-form').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		const command = $('#command').value;
		if (!command.trim()) return;
		clearRun(); /* at once: nothing of the previous run may pass for this one's */
		try {
			const { run } = await api('POST', `sessions/${enc(state.session)}/exec`, { command });
			watchRun(state.session, run);
			report(null);
		} catch (e) {
			report(e);
		}
	});
	$('#kill-command').addEventListener('click', () => act('POST', `sessions/${enc(state.session)}/kill`));
	$('#new-term').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		const name = $('#new-term-name').value.trim() || `t${Date.now() % 100000}`;
		try {
			await api('POST', `sessions/${enc(state.session)}/terms`, { name });
			$('#new-term-name').value = '';
			openTerm(name);
		} catch (e) {
			report(e);
		}
	});
	$('#new-proc').addEventListener('submit', (ev) => {
		ev.preventDefault();
		act('POST', `sessions/${enc(state.session)}/procs`, { name: $('#new-proc-name').value.trim(), command: $('#new-proc-cmd').value });
	});
	$('#new-port').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		try {
			await api('POST', 'ports', { port: Number($('#new-port-number').value.trim()), name: $('#new-port-name').value.trim() });
			$('#new-port-number').value = '';
			$('#new-port-name').value = '';
			report(null);
		} catch (e) {
			report(e);
		}
		tick();
	});
	$('#network-policy').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		try {
			await api('POST', 'network', policyOf($('#network-policy-mode').value, $('#network-policy-rules').value));
			$('#network-policy-rules').blur();
			await refreshNetwork();
			report(null);
		} catch (e) {
			report(e);
		}
	});
	$('#new-snapshot').addEventListener('submit', (ev) => {
		ev.preventDefault();
		act('POST', 'snapshots', { name: $('#new-snapshot-name').value.trim() });
		$('#new-snapshot-name').value = '';
	});
	$('#new-context').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		try {
			const { name } = await api('POST', 'contexts', { name: $('#new-context-id').value.trim(), language: $('#new-context-lang').value });
			$('#new-context-id').value = '';
			await tick();
			selectContext(name);
		} catch (e) {
			report(e);
		}
	});
	$('#delete-context').addEventListener('click', async () => {
		const name = state.context;
		selectContext(null);
		$('#context').hidden = true;
		await act('DELETE', `contexts/${enc(name)}`);
	});
	$('#cell-form').addEventListener('submit', (ev) => {
		ev.preventDefault();
		runCell($('#cell-code').value).catch(report);
	});
	$('#journal-filter').addEventListener('submit', (ev) => {
		ev.preventDefault();
		tick();
	});
	$('#journal-session').addEventListener('change', () => tick());
	window.addEventListener('resize', () => fitTerm(state.termTab));
	setInterval(tick, 1500);
	/* #SESSION:TAB, as showTab leaves it, so a reload comes back to the same view */
	const [id, tab] = location.hash.slice(1).split(':').map(decodeURIComponent);
	if (['commands', 'terminals', 'procs', 'metrics'].includes(tab)) state.tab = tab;
	tick().then(() => id && selectSession(id));
}

wire();
