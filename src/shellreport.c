/* Parsing the session driver's reports (see shell.h): what the shell in the sandbox writes back
 * on fd 4, kept apart from the pipes and the loop so it can be fuzzed. A command can write
 * there too, so a report may be huge or cut anywhere: the parse is linear in its size, and a
 * report still coming is only scanned for its end. */
#include "shell.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

/* The length of the whole report at the start of buf, 0 if its end has not come; *nenv gets
 * how many fields it has past the first three, its terminator included. */
static size_t report_end(const char *buf, size_t len, size_t *nenv)
{
	size_t pos = 0, nf = 0;

	while (pos < len) {
		const char *z = memchr(buf + pos, '\0', len - pos);

		if (!z)
			return 0;
		if (++nf > 3 && z == buf + pos) {
			*nenv = nf - 3;
			return (size_t)(z - buf) + 1;
		}
		pos = (size_t)(z - buf) + 1;
	}
	return 0;
}

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* Adds NAME=VALUE entries to env as envlist_put would (a later one of a name replaces the
 * earlier in place), through a table of the names seen: a report may hold millions. */
static void put_all(struct envlist *env, const char *f, const char *end, size_t max)
{
	size_t cap = 16, *slot;

	while (cap < max * 2)
		cap *= 2;
	slot = xcalloc(cap, sizeof(*slot)); /* index + 1 into env->v, 0 for none */
	env->v = xrealloc(env->v, (max + 1) * sizeof(char *));
	for (; f < end; f += strlen(f) + 1) {
		const char *eq = strchr(f, '=');
		size_t nlen = eq ? (size_t)(eq - f) : 0, i;

		/* bash exports valid names only: anything else was written by someone else, and a
		 * name with a newline would forge a line of the env file */
		if (!eq || !env_name_valid(f, nlen))
			continue;
		for (i = name_hash(f, nlen) & (cap - 1); slot[i]; i = (i + 1) & (cap - 1)) {
			const char *old = env->v[slot[i] - 1];

			if (!strncmp(old, f, nlen) && old[nlen] == '=')
				break;
		}
		if (slot[i]) {
			free(env->v[slot[i] - 1]);
			env->v[slot[i] - 1] = xstrdup(f);
		} else {
			env->v[env->n++] = xstrdup(f);
			slot[i] = env->n;
		}
	}
	env->v[env->n] = NULL;
	free(slot);
}

size_t shell_report_parse(const char *buf, size_t len, struct shell_report *rep)
{
	size_t nenv, used = report_end(buf, len, &nenv);
	const char *f = buf;

	if (!used) {
		memset(&rep->env, 0, sizeof(rep->env)); /* nothing to free */
		return 0;
	}
	envlist_init(&rep->env);
	rep->seq = f;
	f += strlen(f) + 1;
	rep->status = atoi(f);
	f += strlen(f) + 1;
	rep->cwd = f;
	f += strlen(f) + 1;
	put_all(&rep->env, f, buf + used - 1, nenv - 1);
	return used;
}
