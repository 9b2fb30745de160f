/* Parsing the session driver's reports (see shell.h): what the shell in the sandbox writes back
 * on fd 4, kept apart from the pipes and the loop so it can be fuzzed. A command can write
 * there too, so a report may be huge or cut anywhere: the parse is linear in its size, and a
 * report still coming is only scanned for its end. The env comes as NAME=VALUE fields, or as
 * one field of bash's `declare -px` output after a newline: bash lists its exported variables
 * in one builtin, where walking them in shell code cost most of an exec's time. */
#include "shell.h"

#include <stdbool.h>
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

/* The env being built: a table of the names seen (a report may hold millions). */
struct env_table {
	struct envlist *env;
	size_t cap, *slot; /* index + 1 into env->v, 0 for none */
	char *scratch;	   /* a declared entry being decoded: as long as the field, at most */
};

/* Adds NAME=VALUE (taking entry) as envlist_put would: a later one of a name replaces the
 * earlier in place. bash exports valid names only: anything else was written by someone else,
 * and a name with a newline would forge a line of the env file. */
static void put_one(struct env_table *t, char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t nlen = eq ? (size_t)(eq - entry) : 0, i;
	char **v = t->env->v;

	if (!eq || !env_name_valid(entry, nlen)) {
		free(entry);
		return;
	}
	for (i = name_hash(entry, nlen) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		const char *old = v[t->slot[i] - 1];

		if (!strncmp(old, entry, nlen) && old[nlen] == '=')
			break;
	}
	if (t->slot[i]) {
		free(v[t->slot[i] - 1]);
		v[t->slot[i] - 1] = entry;
	} else {
		v[t->env->n++] = entry;
		t->slot[i] = t->env->n;
	}
}

static int octal_or_hex(const char **p, const char *end, int base, int max)
{
	int v = 0, d;

	for (int i = 0; i < max && *p < end; i++, (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '7')
			d = c - '0';
		else if (base == 16 && ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'))
			d = (c | 0x20) - 'a' + 10;
		else if (base == 16 && (c == '8' || c == '9'))
			d = c - '0';
		else
			break;
		v = v * base + d;
	}
	return v & 0xff;
}

/* One backslash escape of $'...' at p (past the backslash), as bash's ansic_quote writes them. */
static char ansic_escape(const char **p, const char *end)
{
	static const char from[] = "abeEfnrtv", to[] = "\a\b\033\033\f\n\r\t\v";
	const char *hit;
	char c = *(*p)++;

	if ((hit = strchr(from, c)) != NULL && c)
		return to[hit - from];
	if (c >= '0' && c <= '7') {
		(*p)--;
		return (char)octal_or_hex(p, end, 8, 3);
	}
	if (c == 'x')
		return (char)octal_or_hex(p, end, 16, 2);
	return c; /* \\ \' \" \? and anything else: the character itself */
}

/* Decodes the value at p, "..." or $'...', onto out; returns the position past its closing
 * quote, or NULL if it has none before end. */
static const char *decode_value(const char *p, const char *end, char *out)
{
	bool ansic = p + 1 < end && p[0] == '$' && p[1] == '\'';
	char quote = ansic ? '\'' : '"';

	if (!ansic && (p >= end || *p != '"'))
		return NULL;
	for (p += ansic ? 2 : 1; p < end && *p != quote;) {
		if (*p == '\\' && p + 1 < end && ansic) {
			p++;
			*out++ = ansic_escape(&p, end);
		} else if (*p == '\\' && p + 1 < end && strchr("\"$`\\", p[1]) && p[1]) {
			*out++ = p[1];
			p += 2;
		} else {
			*out++ = *p++;
		}
	}
	*out = '\0';
	return p < end ? p + 1 : NULL;
}

/* Adds the variables of `declare -px` lines (declare -FLAGS NAME="VALUE") whose name starts
 * with an underscore or not (under), in their order: the driver used to list A-Z, a-z, then
 * _, and the env file keeps that order. Arrays (not exported by bash) and namerefs are left
 * out, as are exported names without a value; a malformed line is skipped. */
static void put_declared(struct env_table *t, const char *p, const char *end, bool under)
{
	static const char head[] = "declare -";

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		const char *flags = p + sizeof(head) - 1, *name, *eq, *past;

		if ((size_t)(eol - p) < sizeof(head) || memcmp(p, head, sizeof(head) - 1) ||
		    !(name = memchr(flags, ' ', (size_t)(eol - flags)))) {
			p = eol + 1;
			continue;
		}
		name++;
		eq = memchr(name, '=', (size_t)(eol - name));
		if (!eq || memchr(flags, 'a', (size_t)(name - flags)) ||
		    memchr(flags, 'A', (size_t)(name - flags)) ||
		    memchr(flags, 'n', (size_t)(name - flags)) || (*name == '_') != under) {
			p = eol + 1;
			continue;
		}
		memcpy(t->scratch, name, (size_t)(eq - name) + 1);
		past = decode_value(eq + 1, end, t->scratch + (eq - name) + 1);
		if (!past || (past < end && *past != '\n')) {
			p = eol + 1;
			continue;
		}
		put_one(t, xstrdup(t->scratch));
		p = past + 1;
	}
}

/* Adds the env fields from f to end (NAME=VALUE, or declare lines after a newline). */
static void put_all(struct envlist *env, const char *f, const char *end, size_t max)
{
	struct env_table t = {env, 16, NULL, NULL};

	for (const char *c = f; c < end; c++)
		max += *c == '\n'; /* a declare line is an entry */
	while (t.cap < max * 2)
		t.cap *= 2;
	t.slot = xcalloc(t.cap, sizeof(*t.slot));
	env->v = xrealloc(env->v, (max + 1) * sizeof(char *));
	for (; f < end; f += strlen(f) + 1) {
		if (*f == '\n') {
			t.scratch = xrealloc(t.scratch, strlen(f));
			put_declared(&t, f + 1, f + strlen(f), false);
			put_declared(&t, f + 1, f + strlen(f), true);
		} else {
			put_one(&t, xstrdup(f));
		}
	}
	env->v[env->n] = NULL;
	free(t.slot);
	free(t.scratch);
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
