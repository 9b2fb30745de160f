/* Fuzz target: a context driver's event frames (src/context/context_frame.c), which the daemon
 * reads from a process a cell can take over. Properties: a body parses or is refused with -EPROTO
 * and leaves nothing allocated; a parsed event is one of the four, an error has its three texts,
 * every text is UTF-8 with its length, and a JSON value kept as text parses again as a value. */
#include <errno.h>

#include "context_frame.h"
#include "fuzz.h"
#include "json.h"

static void check_json_value(const char *v, size_t len)
{
	struct jbuf b = {0};
	struct ctx_event again;

	jbuf_add(&b, "{\"ev\":\"result\",\"data\":{\"application/json\":", 42);
	jbuf_add(&b, v, len);
	jbuf_add(&b, "}}", 2);
	FUZZ_ASSERT(ctx_event_parse(b.p, b.len, &again) == 0);
	FUZZ_ASSERT(again.datalen[7] == len && fuzz_same(again.data[7], len, v, len));
	ctx_event_free(&again);
	free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx_event ev;
	int rc = ctx_event_parse((const char *)data, size, &ev);

	FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
	if (rc < 0)
		return 0;
	FUZZ_ASSERT(ev.ev <= EV_DONE);
	if (ev.ev == EV_ERROR)
		FUZZ_ASSERT(ev.name && ev.value && ev.traceback);
	for (unsigned i = 0; i < CTX_FORMATS; i++) {
		if (!ev.data[i])
			continue;
		FUZZ_ASSERT(utf8_prefix(ev.data[i], ev.datalen[i], NULL) == ev.datalen[i]);
		FUZZ_ASSERT(ev.data[i][ev.datalen[i]] == '\0');
		if (i == 7)
			check_json_value(ev.data[i], ev.datalen[i]);
	}
	ctx_event_free(&ev);
	return 0;
}
