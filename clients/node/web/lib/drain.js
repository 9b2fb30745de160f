// Waiting for a slow reader: a response whose socket buffer is full resolves this once it has
// room again (or is closed), so a writer goes at the reader's pace instead of buffering.
export function drained(res) {
	return new Promise((resolve) => {
		const done = () => {
			res.off('drain', done);
			res.off('close', done);
			resolve();
		};
		res.on('drain', done);
		res.on('close', done);
	});
}
