/* Fuzz target: what the journal writes of text from outside (src/core/journal.c), and the
 * limits file's lines (src/isolation/cgroup_live.c). Properties: a string field of any bytes
 * makes one line's worth of JSON text (no control byte, no U+2028 or U+2029 left raw), and
 * the exact bytes come back from it (the JSON string, or the base64 of bytes that are not
 * UTF-8); a limits line is taken with a value in bounds or refused with a reason. */
#include "cgroup_live.h"
#include "fuzz.h"
#include "journal.h"

static int b64(char c)
{
	const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(t, c) : NULL;

	return p ? (int)(p - t) : -1;
}

/* The bytes a base64 text stands for, into out; their count. */
static size_t unbase64(const char *s, size_t len, unsigned char *out)
{
	size_t n = 0;
	unsigned acc = 0, bits = 0;

	for (size_t i = 0; i < len && s[i] != '='; i++) {
		acc = acc << 6 | (unsigned)b64(s[i]);
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	return n;
}

static void one_field(const uint8_t *data, size_t size)
{
	struct jrec r;
	const char *v;
	size_t len;

	jrec_begin(&r, "t", NULL);
	jrec_strn(&r, "k", (const char *)data, size);
	for (size_t i = 0; i < r.b.len; i++) {
		FUZZ_ASSERT((unsigned char)r.b.p[i] >= 0x20);
		FUZZ_ASSERT(i + 2 >= r.b.len || memcmp(r.b.p + i, "\xe2\x80\xa8", 3));
		FUZZ_ASSERT(i + 2 >= r.b.len || memcmp(r.b.p + i, "\xe2\x80\xa9", 3));
	}
	v = strstr(r.b.p, ",\"k\":");
	FUZZ_ASSERT(v != NULL);
	v += 5;
	len = r.b.len - (size_t)(v - r.b.p);
	if (!strncmp(v, "{\"base64\":\"", 11)) {
		unsigned char *out = malloc(size + 4);

		FUZZ_ASSERT(unbase64(v + 11, len - 13, out) == size && !memcmp(out, data, size));
		free(out);
	} else {
		FUZZ_ASSERT(v[0] == '"' && v[len - 1] == '"');
	}
	free(r.b.p);
}

static void one_limit(const uint8_t *data, size_t size)
{
	struct cg_live l = {0};
	char why[160] = "";

	if (cgroup_live_parse((const char *)data, size, &l, why, sizeof(why)) < 0) {
		FUZZ_ASSERT(why[0] != '\0');
		return;
	}
	FUZZ_ASSERT(l.set[CGL_MEMORY] || l.set[CGL_PIDS] || l.set[CGL_CPU]);
	FUZZ_ASSERT(!l.set[CGL_MEMORY] || l.memory == 0 || l.memory >= (1u << 20));
	FUZZ_ASSERT(!l.set[CGL_CPU] || (l.cpu_period >= 1000 && l.cpu_period <= 1000000));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one_field(data, size);
	one_limit(data, size);
	return 0;
}
