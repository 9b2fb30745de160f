// The routing of a fleet across nodes (bridge/lib/peers.js): every node finds the same owner
// for an id, ids spread evenly, and a node added takes ids only for itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownerOf } from '../bridge/lib/peers.js';

const nodes = (n) => Array.from({ length: n }, (_, i) => `http://sbxfs-${i}.sbxfs-nodes:8024`);
const ids = Array.from({ length: 6000 }, (_, i) => `sandbox-${i}`);

test('the owner depends only on the id and the list', () => {
	for (const id of ids.slice(0, 100)) assert.equal(ownerOf(id, nodes(5)), ownerOf(id, [...nodes(5)]));
	assert.equal(ownerOf('x', nodes(1)), 0);
});

test('ids spread evenly over the nodes', () => {
	const count = new Array(6).fill(0);
	for (const id of ids) count[ownerOf(id, nodes(6))]++;
	for (const c of count) assert.ok(c > 800 && c < 1200, `${count}`);
});

test('a node added takes ids only for itself, about its share', () => {
	let moved = 0;
	for (const id of ids) {
		const before = ownerOf(id, nodes(5)), after = ownerOf(id, nodes(6));
		if (before !== after) {
			assert.equal(after, 5, `${id} moved from ${before} to ${after}, not to the new node`);
			moved++;
		}
	}
	assert.ok(moved > 800 && moved < 1200, `${moved} of ${ids.length} moved`);
});

test('a node removed gives away only its own ids', () => {
	const four = nodes(5).filter((_, i) => i !== 2);
	for (const id of ids) {
		const before = nodes(5)[ownerOf(id, nodes(5))];
		if (before !== nodes(5)[2]) assert.equal(four[ownerOf(id, four)], before);
	}
});
