// public/ansi.js: colours to spans, everything else escaped or dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnsiToHtml } from '../public/ansi.js';

const html = (...chunks) => {
	const c = new AnsiToHtml();
	return chunks.map((s) => c.push(s)).join('');
};

test('text is escaped', () => {
	assert.equal(html(`<script>alert("x")</script> & 'q'`), '&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;q&#39;');
});

test('SGR colours and attributes become spans; reset ends them', () => {
	assert.equal(html('\x1b[1;31mred\x1b[0m plain'), '<span class="fg-a-red a-bold">red</span> plain');
	assert.equal(html('\x1b[92;44mx\x1b[39mY'), '<span class="fg-a-bright-green bg-a-blue">x</span><span class="bg-a-blue">Y</span>');
	assert.equal(html('\x1b[38;5;196ma\x1b[38;2;1;2;3mb'), '<span style="color:#ff0000">a</span><span style="color:#010203">b</span>');
	assert.equal(html('\x1b[38;5;244mg'), '<span style="color:#808080">g</span>');
});

test('a sequence cut between chunks still applies', () => {
	assert.equal(html('a\x1b[3', '2mb'), 'a<span class="fg-a-green">b</span>');
});

test('other sequences and control bytes are dropped', () => {
	assert.equal(html('\x1b[2J\x1b[H\x1b]0;title\x07\x1b(Bok\x07\x08'), 'ok');
	assert.equal(html('\x1b[?2004hx\r\n'), 'x\r\n');
});

test('values cannot inject markup through a style or class', () => {
	assert.doesNotMatch(html('\x1b[38;2;999;"><b>;0mz'), /<b>|"><|999/);
});
