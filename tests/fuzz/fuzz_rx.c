/* Fuzz target: wait's regular expressions (src/util/rx.c) against glibc's regexec. Input: a
 * pattern, a newline, then a line. Properties: a pattern both take matches the same lines in
 * both (glibc in the C locale with REG_EXTENDED | REG_NEWLINE, as wait used it), and a search
 * is done in at most O(line x program) steps (a run past -timeout is a finding). */
#include <regex.h>

#include "fuzz.h"
#include "rx.h"

/* Whether glibc can be asked: its regcomp takes exponential time on stacked or nested
 * repetitions (a*********, (a*\>)*++++_, (a*()*){13}{2}), so only patterns with at most 6 of
 * them, none right after another, and bounds of at most 4. */
static bool glibc_can(const char *pattern, size_t len)
{
	unsigned repeats = 0;

	for (size_t i = 0; i < len; i++) {
		if (pattern[i] == '\0')
			return false;
		if (!strchr("*+?{", pattern[i]))
			continue;
		if (++repeats > 6 || (i > 0 && strchr("*+?}", pattern[i - 1])))
			return false;
		for (size_t j = i + 1, n = 0; pattern[i] == '{' && j < len && pattern[j] != '}';
		     j++) {
			n = pattern[j] >= '0' && pattern[j] <= '9'
				? n * 10 + (size_t)(pattern[j] - '0')
				: 0;
			if (n > 4)
				return false;
		}
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nl = memchr(text, '\n', size);
	size_t plen = nl ? (size_t)(nl - text) : size;
	char *pattern = fuzz_str(data, plen), *line;
	size_t llen = nl ? size - plen - 1 : 0;
	struct rx *rx;
	regex_t re;

	line = fuzz_str(nl ? (const uint8_t *)nl + 1 : data, llen);
	/* regexec reads a C string, and a screen line has no newline */
	llen = strcspn(line, "\n");
	line[llen] = '\0';
	if (rx_compile(pattern, plen, &rx) == 0) {
		bool mine = rx_search(rx, line, llen);

		/* glibc's own matcher backtracks: only on short lines */
		if (glibc_can(pattern, plen) && llen <= 64 &&
		    regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE) == 0) {
			FUZZ_ASSERT(mine == (regexec(&re, line, 0, NULL, 0) == 0));
			regfree(&re);
		}
		rx_free(rx);
	}
	free(pattern);
	free(line);
	return 0;
}
