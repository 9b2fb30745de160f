// The page's journal and metrics: the journal's last events (filtered by session and kind, in
// the sidebar), and per session graphs of memory and CPU from /api/metrics, sampled at each
// refresh. Text from the sandbox (a command, a name) goes in as textContent only.

const HISTORY = 80; /* samples a graph shows */
const history = new Map(); /* session -> [{t, mem, cpu}] (cpu: seconds, a counter) */

const $ = (sel) => document.querySelector(sel);

/* One event as a line: its time, number, kind and session, then its other fields. */
function eventLine(e) {
	const rest = Object.entries(e)
		.filter(([k]) => !['v', 'seq', 'time', 'kind', 'session'].includes(k))
		.map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v.length > 80 ? v.slice(0, 80) + '…' : v) : JSON.stringify(v)}`);
	return `${e.time.slice(11, 23)} #${e.seq} ${e.kind}${e.session ? ' [' + e.session + ']' : ''} ${rest.join(' ')}`;
}

let shownJournal = '';
export async function refreshJournal(api, sessions) {
	const pick = $('#journal-session');
	const want = pick.value;
	const options = ['', ...sessions];
	if ([...pick.options].map((o) => o.value).join('\n') !== options.join('\n')) {
		pick.replaceChildren(...options.map((id) => Object.assign(document.createElement('option'), { value: id, textContent: id || 'all sessions' })));
		pick.value = options.includes(want) ? want : '';
	}
	const q = new URLSearchParams();
	if (pick.value) q.set('session', pick.value);
	const kind = $('#journal-kind').value.trim();
	if (kind) q.set('kind', kind);
	const events = await api('GET', `journal?${q}`);
	const text = events.map(eventLine).reverse().join('\n');
	if (text !== shownJournal) {
		shownJournal = text;
		$('#journal').textContent = text; // newest first
	}
}

/* One sample per session (and the sandbox's, as "") of memory and CPU time. */
export async function sampleMetrics(api) {
	const samples = await api('GET', 'metrics');
	const now = Date.now() / 1000;
	const at = new Map();
	for (const s of samples) {
		const key = s.labels.scope === 'sandbox' ? '' : s.labels.session;
		if (key === undefined || s.labels.proc !== undefined) continue;
		if (!at.has(key)) at.set(key, { t: now });
		if (s.name === 'sbxfs_memory_bytes') at.get(key).mem = s.value;
		if (s.name === 'sbxfs_cpu_seconds_total') at.get(key).cpu = s.value;
	}
	for (const [key, v] of at) {
		const h = history.get(key) ?? [];
		h.push(v);
		if (h.length > HISTORY) h.shift();
		history.set(key, h);
	}
}

/* A line graph of values (already in its unit) on canvas, with its last value written. */
function graph(canvas, values, label, unit) {
	const ctx = canvas.getContext('2d');
	const w = canvas.width, h = canvas.height;
	ctx.clearRect(0, 0, w, h);
	ctx.fillStyle = '#fff';
	ctx.fillRect(0, 0, w, h);
	const max = Math.max(1e-9, ...values) * 1.1;
	ctx.strokeStyle = '#36c';
	ctx.beginPath();
	values.forEach((v, i) => {
		const x = (i / Math.max(1, HISTORY - 1)) * w;
		const y = h - (v / max) * (h - 14);
		if (i) ctx.lineTo(x, y);
		else ctx.moveTo(x, y);
	});
	ctx.stroke();
	ctx.fillStyle = '#222';
	ctx.font = '12px system-ui';
	const last = values.length ? values[values.length - 1] : 0;
	ctx.fillText(`${label}: ${last.toFixed(unit === '%' ? 0 : 1)} ${unit}`, 4, 12);
}

export function drawMetrics(session) {
	const h = history.get(session) ?? [];
	graph($('#metrics-memory'), h.map((s) => (s.mem ?? 0) / (1 << 20)), 'memory', 'MiB');
	// CPU: the counter's growth between samples, as a share of one CPU
	const cpu = h.slice(1).map((s, i) => (s.cpu !== undefined && h[i].cpu !== undefined && s.t > h[i].t
		? Math.max(0, (s.cpu - h[i].cpu) / (s.t - h[i].t)) * 100 : 0));
	graph($('#metrics-cpu'), cpu, 'CPU', '%');
	$('#metrics-note').textContent = h.length < 2 ? 'sampling…' : `the last ${h.length} samples, one at each refresh`;
}
