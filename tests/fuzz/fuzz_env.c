/* Fuzz target: the env files' edit lines (src/util/envlist.c envedits_parse, the root env's
 * rootenv_write under small env bounds) and the NAME=VALUE listing they read back as.
 * Properties: the root env's apply gives the verdict of the parse and of its check-only
 * (rootenv_check: EFBIG past the bounds), and then the listing the same edits give a plain
 * list, else it changes nothing; every edit names a valid variable; a listing is one line per
 * variable, and parsed as edits it rebuilds the same list; a line still being written is never
 * called too big when what it ends as is not. */
#include <errno.h>

#include "config.h"
#include "envlist.h"
#include "fuzz.h"
#include "rootenv.h"
#include "session.h"

#define VALUE_MAX 300 /* bytes of one NAME=VALUE, small so that inputs reach past it */
#define ENV_MAX	  2000

static struct config cfg;

static void setup(void)
{
	config_defaults(&cfg);
	cfg.env_value_max = VALUE_MAX;
	cfg.env_max = ENV_MAX;
	sessions_init(&cfg, "/nonexistent", "/workspace", NULL);
}

/* Every prefix of each line that parses as an edit: called too big only if the line is. */
static void check_partial(const char *buf, size_t len)
{
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		struct envedits one;

		if (llen && envedits_parse(buf + pos, llen, &one) == 0) {
			bool big = one.e[0].value &&
				   env_entry_bytes(one.e[0].name, one.e[0].value) > VALUE_MAX;

			for (size_t k = 1; k <= llen && !big; k++)
				FUZZ_ASSERT(!envedit_partial_too_big(buf + pos, k, VALUE_MAX));
			envedits_free(&one);
		}
		pos += llen + 1;
	}
}

static void check_edits(const struct envedits *ed)
{
	for (size_t i = 0; i < ed->n; i++) {
		FUZZ_ASSERT(env_name_valid(ed->e[i].name, strlen(ed->e[i].name)));
		FUZZ_ASSERT(!strchr(ed->e[i].name, '='));
	}
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	FUZZ_ASSERT(len == 0 || text[len - 1] == '\n');
	return n;
}

/* The listing of el, parsed as edits and applied to an empty list, lists the same. */
static void check_listing(const struct envlist *el, const char *text, size_t len)
{
	struct envedits again;
	struct envlist back;
	size_t len2;
	char *text2;

	FUZZ_ASSERT(strlen(text) == len);
	FUZZ_ASSERT(count_lines(text, len) == el->n);
	FUZZ_ASSERT(envedits_parse(text, len, &again) == 0);
	FUZZ_ASSERT(again.n == el->n);
	envlist_init(&back);
	envlist_apply(&back, &again);
	text2 = envlist_format(&back, &len2);
	FUZZ_ASSERT(fuzz_same(text, len, text2, len2));
	free(text2);
	envlist_free(&back);
	envedits_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct envedits ed;
	struct envlist el;
	size_t len, rlen;
	char *text, *root;
	int rc, want;

	if (!cfg.shell)
		setup();
	check_partial(buf, size);
	rc = envedits_parse(buf, size, &ed);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	want = rc < 0 || ed.n == 0 ? rc : rootenv_check(&ed);
	FUZZ_ASSERT(want == 0 || want == -EINVAL || want == -EFBIG);
	FUZZ_ASSERT(rootenv_write(buf, size) == want);
	root = rootenv_read(&rlen);
	if (want < 0) {
		FUZZ_ASSERT(rlen == 0); /* nothing applied */
		free(root);
		if (rc == 0)
			envedits_free(&ed);
		return 0;
	}
	check_edits(&ed);
	envlist_init(&el);
	envlist_apply(&el, &ed);
	text = envlist_format(&el, &len);
	FUZZ_ASSERT(fuzz_same(text, len, root, rlen));
	check_listing(&el, text, len);
	free(text);
	free(root);
	envlist_free(&el);
	envedits_free(&ed);
	rootenv_free();
	return 0;
}
