/* Fuzz target: `-o` option lists (src/core/config_opt.c), as mount(8) and fstab hand them to sbxfs.
 * Properties: the split items, escaped again and joined, split to the same items; no item is
 * empty; each NAME=VALUE either sets its key or fails with a reason, and a config after any
 * mix of them is still freed whole (leaks show under ASan). */
#include <errno.h>

#include "config_opt.h"
#include "fuzz.h"
#include "xmalloc.h"

/* item with "\" before each comma and backslash, as config_opt_split reads them back */
static char *escape_item(const char *item)
{
	char *out = xmalloc(2 * strlen(item) + 1), *p = out;

	for (; *item; item++) {
		if (*item == ',' || *item == '\\')
			*p++ = '\\';
		*p++ = *item;
	}
	*p = '\0';
	return out;
}

static void check_round_trip(char **items)
{
	char *joined = xstrdup(""), *t, *e;
	char **again;
	size_t i;

	for (i = 0; items[i]; i++) {
		FUZZ_ASSERT(items[i][0] != '\0');
		e = escape_item(items[i]);
		t = xasprintf("%s%s%s", joined, i ? "," : "", e);
		free(e);
		free(joined);
		joined = t;
	}
	again = config_opt_split(joined);
	for (i = 0; items[i]; i++)
		FUZZ_ASSERT(again[i] && !strcmp(again[i], items[i]));
	FUZZ_ASSERT(again[i] == NULL);
	config_opt_free(again);
	free(joined);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size), **items = config_opt_split(s);
	struct config cfg;
	char err[512];

	check_round_trip(items);
	config_defaults(&cfg);
	for (size_t i = 0; items[i]; i++) {
		char *eq = strchr(items[i], '=');

		if (!eq)
			continue;
		*eq = '\0';
		err[0] = '\0';
		if (config_set_opt(&cfg, items[i], eq + 1, err, sizeof(err)) < 0)
			FUZZ_ASSERT(err[0] != '\0');
	}
	config_free(&cfg);
	config_opt_free(items);
	free(s);
	return 0;
}
