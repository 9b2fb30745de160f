// ANSI output to HTML: SGR colours and bold/italic/underline become spans, every other escape
// sequence is dropped, and all text is HTML-escaped. State carries across chunks, so a
// sequence cut in two by the stream still applies.

const BASIC = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];
const CUBE = [0, 95, 135, 175, 215, 255];

export function escapeHtml(s) {
	return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function hex(r, g, b) {
	return '#' + [r, g, b].map((v) => Math.max(0, Math.min(255, v | 0)).toString(16).padStart(2, '0')).join('');
}

/* xterm's 256-colour palette beyond the 16 named ones. */
function color256(n) {
	if (n >= 232) return hex(8 + (n - 232) * 10, 8 + (n - 232) * 10, 8 + (n - 232) * 10);
	n -= 16;
	return hex(CUBE[Math.floor(n / 36)], CUBE[Math.floor(n / 6) % 6], CUBE[n % 6]);
}

export class AnsiToHtml {
	constructor() {
		this.pending = ''; /* an escape sequence not yet complete */
		this.reset();
	}

	reset() {
		this.fg = null;
		this.bg = null;
		this.bold = this.italic = this.underline = false;
	}

	/* One more chunk of text; returns its HTML. */
	push(text) {
		let s = this.pending + text, out = '';
		this.pending = '';
		for (let i = 0; i < s.length;) {
			const esc = s.indexOf('\x1b', i);
			const end = esc < 0 ? s.length : esc;
			if (end > i) out += this.span(s.slice(i, end).replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, ''));
			if (esc < 0) break;
			const m = /^\x1b(?:\[([0-9;:?<=>]*)[ -/]*([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[@-Z\\-_])/.exec(s.slice(esc));
			if (!m) {
				if (s.length - esc < 256) {
					this.pending = s.slice(esc);
					break;
				}
				i = esc + 1; /* not a sequence: drop the ESC */
				continue;
			}
			if (m[2] === 'm') this.sgr(m[1]);
			i = esc + m[0].length;
		}
		return out;
	}

	sgr(params) {
		const p = params === '' ? [0] : params.split(/[;:]/).map((x) => Number(x) || 0);
		for (let i = 0; i < p.length; i++) {
			const c = p[i];
			if (c === 0) this.reset();
			else if (c === 1) this.bold = true;
			else if (c === 3) this.italic = true;
			else if (c === 4) this.underline = true;
			else if (c === 22) this.bold = false;
			else if (c === 23) this.italic = false;
			else if (c === 24) this.underline = false;
			else if (c >= 30 && c <= 37) this.fg = `a-${BASIC[c - 30]}`;
			else if (c >= 90 && c <= 97) this.fg = `a-bright-${BASIC[c - 90]}`;
			else if (c === 39) this.fg = null;
			else if (c >= 40 && c <= 47) this.bg = `a-${BASIC[c - 40]}`;
			else if (c >= 100 && c <= 107) this.bg = `a-bright-${BASIC[c - 100]}`;
			else if (c === 49) this.bg = null;
			else if (c === 38 || c === 48) {
				let v = null;
				if (p[i + 1] === 5 && p[i + 2] !== undefined) {
					const n = p[i + 2];
					v = n < 8 ? `a-${BASIC[n]}` : n < 16 ? `a-bright-${BASIC[n - 8]}` : color256(Math.min(n, 255));
					i += 2;
				} else if (p[i + 1] === 2 && p[i + 4] !== undefined) {
					v = hex(p[i + 2], p[i + 3], p[i + 4]);
					i += 4;
				}
				if (c === 38) this.fg = v;
				else this.bg = v;
			}
		}
	}

	span(text) {
		if (text === '') return '';
		const cls = [], style = [];
		for (const [v, prop] of [[this.fg, 'color'], [this.bg, 'background-color']]) {
			if (!v) continue;
			if (v.startsWith('#')) style.push(`${prop}:${v}`);
			else cls.push(prop === 'color' ? `fg-${v}` : `bg-${v}`);
		}
		if (this.bold) cls.push('a-bold');
		if (this.italic) cls.push('a-italic');
		if (this.underline) cls.push('a-underline');
		const body = escapeHtml(text);
		if (!cls.length && !style.length) return body;
		return `<span${cls.length ? ` class="${cls.join(' ')}"` : ''}${style.length ? ` style="${style.join(';')}"` : ''}>${body}</span>`;
	}
}
