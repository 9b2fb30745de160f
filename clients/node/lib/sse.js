// Server-sent events as the SDK streams them: `data: JSON\n\n` frames in a ReadableStream.

const encoder = new TextEncoder();

/* A ReadableStream<Uint8Array> fed by `produce(emit)`, where emit(event) sends one event;
 * a throw from produce becomes an `error` event, then the stream ends. */
export function sseStream(produce) {
	const abort = new AbortController();
	return new ReadableStream({
		async start(controller) {
			const emit = (event) => {
				if (!abort.signal.aborted)
					controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
			};
			try {
				await produce(emit, abort.signal);
			} catch (err) {
				emit({ type: 'error', timestamp: new Date().toISOString(), error: err.message });
			}
			if (!abort.signal.aborted) controller.close();
		},
		cancel() {
			abort.abort();
		},
	});
}

/* The events of an SSE byte stream, parsed, as an async iterator (the SDK's helper). Leaving
 * the loop early cancels the stream, which stops what feeds it. */
export async function* parseSSEStream(stream, signal) {
	const reader = stream.getReader();
	const decoder = new TextDecoder();
	let buffer = '';
	let ended = false;
	try {
		for (;;) {
			if (signal?.aborted) return;
			const { value, done } = await reader.read();
			if (done) {
				ended = true;
				break;
			}
			buffer += decoder.decode(value, { stream: true });
			let end;
			while ((end = buffer.indexOf('\n\n')) >= 0) {
				const frame = buffer.slice(0, end);
				buffer = buffer.slice(end + 2);
				const data = frame
					.split('\n')
					.filter((l) => l.startsWith('data:'))
					.map((l) => l.slice(5).trimStart())
					.join('\n');
				if (data) yield JSON.parse(data);
			}
		}
	} finally {
		if (!ended) await reader.cancel();
		reader.releaseLock();
	}
}
