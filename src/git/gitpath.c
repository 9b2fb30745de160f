/* Host paths in sbxfs-git's messages (see gitpath.h). */
#include "gitpath.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

#define ELSEWHERE "(a path outside the workspace)"

static struct {
	char *host;
	char *shown;
} known[4];
static size_t nknown;

/* Paths only: "/" would turn every path into the workspace. */
static void add(char *host, const char *shown)
{
	size_t n = host ? strlen(host) : 0;

	while (n > 1 && host[n - 1] == '/')
		host[--n] = '\0';
	if (n <= 1 || nknown == sizeof(known) / sizeof(known[0])) {
		free(host);
		return;
	}
	known[nknown].host = host;
	known[nknown++].shown = xstrdup(shown);
}

void gitpath_init(const char *host, const char *inside, int target_fd, const char *target_shown)
{
	char link[64];

	snprintf(link, sizeof(link), "/proc/self/fd/%d", target_fd);
	/* libgit2 is given the link and resolves it; the target is below the workspace, so it
	 * comes first: the longest match wins anyway, this only keeps it cheap. */
	add(realpath(link, NULL), target_shown);
	add(xstrdup(link), target_shown);
	add(xstrdup(host), inside);
	add(realpath(host, NULL), inside);
}

static bool name_char(char c)
{
	return c && (isalnum((unsigned char)c) || strchr("._-+~@%", c));
}

/* The known path msg starts with (a whole name: "/ws" is not in "/ws2"), or -1. */
static int known_at(const char *msg)
{
	size_t best = 0;
	int found = -1;

	for (size_t i = 0; i < nknown; i++) {
		size_t n = strlen(known[i].host);

		if (n > best && !strncmp(msg, known[i].host, n) && !name_char(msg[n])) {
			best = n;
			found = (int)i;
		}
	}
	return found;
}

/* Whether an absolute path starts at msg + i: after a blank, a quote, a bracket or "=", or as
 * the path of a "file://" URL. */
static bool path_starts(const char *msg, size_t i)
{
	if (msg[i] != '/' || !name_char(msg[i + 1]))
		return false;
	if (i == 0 || strchr(" \t'\"`([<=", msg[i - 1]))
		return true;
	return i >= 3 && !strncmp(msg + i - 3, "://", 3);
}

/* Where a path that starts at msg + i ends: at its closing quote, else at a blank, less the
 * punctuation a sentence puts after it. */
static size_t path_end(const char *msg, size_t i)
{
	char quote = i > 0 && strchr("'\"`", msg[i - 1]) ? msg[i - 1] : '\0';
	size_t j = i;

	if (quote) {
		while (msg[j] && msg[j] != quote)
			j++;
		return j;
	}
	while (msg[j] && !isspace((unsigned char)msg[j]))
		j++;
	while (j > i + 1 && strchr(":,.;)]>", msg[j - 1]))
		j--;
	return j;
}

char *gitpath_shown(const char *msg)
{
	size_t len = strlen(msg), cap = len + sizeof(ELSEWHERE) + 1, n = 0;
	char *out = xmalloc(cap);

	for (size_t i = 0; i < len;) {
		const char *put = msg + i;
		size_t take = 1, skip = 1;
		int k = msg[i] == '/' ? known_at(msg + i) : -1;

		if (k >= 0) {
			put = known[k].shown;
			take = strlen(put);
			skip = strlen(known[k].host);
		} else if (path_starts(msg, i)) {
			put = ELSEWHERE;
			take = strlen(ELSEWHERE);
			skip = path_end(msg, i) - i;
		}
		if (n + take + 1 > cap)
			out = xrealloc(out, cap = 2 * (n + take + 1));
		memcpy(out + n, put, take);
		n += take;
		i += skip;
	}
	out[n] = '\0';
	return out;
}
