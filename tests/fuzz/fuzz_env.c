/* Fuzz target: the env files' edit lines (src/envlist.c envedits_parse, the root env's
 * rootenv_write) and the NAME=VALUE listing they read back as. Properties: the root env's apply
 * gives the parse's verdict and the listing the same edits give a plain list; every edit names
 * a valid variable with a NUL-free value; a listing is one line per variable, and parsed as
 * edits it rebuilds the same list. */
#include <errno.h>

#include "envlist.h"
#include "fuzz.h"
#include "rootenv.h"

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
	int rc = envedits_parse(buf, size, &ed);

	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	FUZZ_ASSERT(rootenv_write(buf, size) == rc);
	root = rootenv_read(&rlen);
	if (rc < 0) {
		FUZZ_ASSERT(rlen == 0); /* nothing applied */
		free(root);
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
