/* Fuzz target: launcher frames (src/util/msg.c), read as both ends read their socket: the daemon's
 * START, SIGNAL, HOLD and DROP by the launcher, the launcher's STARTED, EXITED and HELD by the
 * daemon (sandboxed code can write to that socket). Properties: a frame's length never runs past
 * the bytes, a cut frame is incomplete (0) rather than malformed, and a frame that decodes
 * re-encodes to exactly its bytes (the encoding is canonical, so nothing is read twice or
 * skipped). */
#include <errno.h>

#include "fuzz.h"
#include "msg.h"

static void reencode(const struct msg *m, struct msgbuf *b)
{
	if (m->type == MSG_START)
		msg_start_encode(b, m->id, m->cwd, m->argv, m->envp, m->nfds, m->ncg);
	else
		msg_int_encode(b, m->type, m->id, m->a, m->b);
}

static void check_frame(const char *frame, size_t len)
{
	struct msgbuf b = {0};
	struct msg m;
	int rc = msg_decode(frame, len, &m);

	FUZZ_ASSERT(rc == 0 || rc == -EBADMSG);
	if (rc < 0)
		return;
	FUZZ_ASSERT((m.type >= MSG_START && m.type <= MSG_DROP) || m.type == MSG_NOTIFY);
	if (m.type == MSG_START)
		FUZZ_ASSERT(m.cwd && m.argv && m.argv[0] && m.envp && m.nfds + m.ncg <= MSG_MAXFDS);
	reencode(&m, &b);
	FUZZ_ASSERT(fuzz_same(b.data, b.len, frame, len));
	msgbuf_free(&b);
	msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0;
	ssize_t flen;

	while ((flen = msg_frame_len(buf + off, size - off)) > 0) {
		FUZZ_ASSERT((size_t)flen >= MSG_HDR && (size_t)flen <= size - off);
		FUZZ_ASSERT(msg_frame_len(buf + off, (size_t)flen - 1) == 0);
		check_frame(buf + off, (size_t)flen);
		off += (size_t)flen;
	}
	FUZZ_ASSERT(flen == 0 || flen == -EBADMSG);
	return 0;
}
