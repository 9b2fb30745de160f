/* Environment lists (NAME=VALUE arrays kept in order) and parsing of the env file's edit lines. */
#include "envlist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "xmalloc.h"

bool env_name_valid(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

void envlist_init(struct envlist *el)
{
	el->n = 0;
	el->v = xcalloc(1, sizeof(char *));
}

void envlist_free(struct envlist *el)
{
	for (size_t i = 0; i < el->n; i++)
		free(el->v[i]);
	free(el->v);
	el->v = NULL;
	el->n = 0;
}

void envlist_copy(struct envlist *dst, const struct envlist *src)
{
	/* src holds each name once: copied as is, in linear time (a shell may report millions) */
	dst->n = src->n;
	dst->v = xcalloc(src->n + 1, sizeof(char *));
	for (size_t i = 0; i < src->n; i++)
		dst->v[i] = xstrdup(src->v[i]);
}

static ssize_t envlist_find(const struct envlist *el, const char *name, size_t nlen)
{
	for (size_t i = 0; i < el->n; i++)
		if (strncmp(el->v[i], name, nlen) == 0 && el->v[i][nlen] == '=')
			return (ssize_t)i;
	return -1;
}

void envlist_put(struct envlist *el, const char *entry)
{
	const char *eq = strchr(entry, '=');
	ssize_t i;

	if (!eq)
		return;
	i = envlist_find(el, entry, (size_t)(eq - entry));
	if (i >= 0) {
		free(el->v[i]);
		el->v[i] = xstrdup(entry);
		return;
	}
	el->v = xrealloc(el->v, (el->n + 2) * sizeof(char *));
	el->v[el->n++] = xstrdup(entry);
	el->v[el->n] = NULL;
}

void envlist_set(struct envlist *el, const char *name, const char *value)
{
	char *entry = xasprintf("%s=%s", name, value);

	envlist_put(el, entry);
	free(entry);
}

void envlist_unset(struct envlist *el, const char *name)
{
	ssize_t i = envlist_find(el, name, strlen(name));

	if (i < 0)
		return;
	free(el->v[i]);
	memmove(&el->v[i], &el->v[i + 1], (el->n - (size_t)i) * sizeof(char *));
	el->n--;
}

const char *envlist_get(const struct envlist *el, const char *name)
{
	size_t nlen = strlen(name);
	ssize_t i = envlist_find(el, name, nlen);

	return i < 0 ? NULL : el->v[i] + nlen + 1;
}

void envlist_apply(struct envlist *el, const struct envedits *ed)
{
	for (size_t i = 0; i < ed->n; i++) {
		if (ed->e[i].value)
			envlist_set(el, ed->e[i].name, ed->e[i].value);
		else
			envlist_unset(el, ed->e[i].name);
	}
}

size_t env_entry_bytes(const char *name, const char *value)
{
	return strlen(name) + 1 + strlen(value) + 1;
}

size_t envlist_bytes(const struct envlist *el)
{
	size_t total = 0;

	for (size_t i = 0; i < el->n; i++)
		total += strlen(el->v[i]) + 1;
	return total;
}

int envlist_check_edits(const struct envlist *el, const struct envedits *ed, size_t entry_max,
			size_t total_max)
{
	struct envlist after;
	size_t before = envlist_bytes(el), total;

	for (size_t i = 0; i < ed->n; i++)
		if (ed->e[i].value && env_entry_bytes(ed->e[i].name, ed->e[i].value) > entry_max)
			return -EFBIG;
	envlist_copy(&after, el);
	envlist_apply(&after, ed);
	total = envlist_bytes(&after);
	envlist_free(&after);
	return total > total_max && total > before ? -EFBIG : 0;
}

bool envedit_partial_too_big(const char *line, size_t len, size_t entry_max)
{
	const char *eq = memchr(line, '=', len);
	size_t name = eq ? (size_t)(eq - line) : 0, value = eq ? len - name - 1 : 0;

	if (!eq || line[0] == '-')
		return false;
	if (value >= 2 && eq[1] == '$' && eq[2] == '\'')
		value = (value - 2) / 4; /* its closing quote is not there yet */
	return name + 1 + value + 1 > entry_max;
}

static int entry_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
	int c = memcmp(x, y, nx < ny ? nx : ny);

	return c ? c : (nx > ny) - (nx < ny);
}

char *envlist_format(const struct envlist *el, size_t *len)
{
	const char **sorted = xcalloc(el->n + 1, sizeof(char *));
	char **shown = xcalloc(el->n + 1, sizeof(char *));
	size_t total = 0, off = 0, *slen = xcalloc(el->n + 1, sizeof(size_t));
	char *buf;

	/* Sorted by name, so the file reads the same whatever order the shell reported. */
	if (el->n) /* an empty list may have no array at all */
		memcpy(sorted, el->v, el->n * sizeof(char *));
	qsort(sorted, el->n, sizeof(char *), entry_cmp);
	for (size_t i = 0; i < el->n; i++) {
		const char *eq = strchr(sorted[i], '=') + 1;
		char *value = esc_encode(eq, strlen(eq), &slen[i]);

		/* values go in their escape.h form: one line each, whatever they hold */
		shown[i] = xasprintf("%.*s%s\n", (int)(eq - sorted[i]), sorted[i], value);
		slen[i] += (size_t)(eq - sorted[i]) + 1;
		total += slen[i];
		free(value);
	}
	buf = xmalloc(total + 1);
	for (size_t i = 0; i < el->n; i++) {
		memcpy(buf + off, shown[i], slen[i]);
		off += slen[i];
		free(shown[i]);
	}
	buf[off] = '\0';
	*len = off;
	free(sorted);
	free(shown);
	free(slen);
	return buf;
}

static int envedit_parse_line(const char *line, size_t len, struct envedit *e)
{
	const char *eq;
	size_t vlen;

	if (memchr(line, '\0', len))
		return -EINVAL;
	if (line[0] == '-') {
		if (!env_name_valid(line + 1, len - 1))
			return -EINVAL;
		e->name = xstrndup(line + 1, len - 1);
		e->value = NULL;
		return 0;
	}
	eq = memchr(line, '=', len);
	if (!eq || !env_name_valid(line, (size_t)(eq - line)))
		return -EINVAL;
	if (esc_decode(eq + 1, len - (size_t)(eq - line) - 1, &e->value, &vlen) < 0)
		return -EINVAL;
	e->name = xstrndup(line, (size_t)(eq - line));
	return 0;
}

int envedits_parse(const char *buf, size_t len, struct envedits *out)
{
	size_t pos = 0;

	out->e = NULL;
	out->n = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t llen = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		if (llen > 0) {
			out->e = xrealloc(out->e, (out->n + 1) * sizeof(*out->e));
			if (envedit_parse_line(buf + pos, llen, &out->e[out->n]) < 0) {
				envedits_free(out);
				return -EINVAL;
			}
			out->n++;
		}
		pos += llen + 1;
	}
	return 0;
}

void envedits_append(struct envedits *dst, struct envedits *src)
{
	if (src->n) { /* an empty list may have no array at all */
		dst->e = xrealloc(dst->e, (dst->n + src->n) * sizeof(*dst->e));
		memcpy(dst->e + dst->n, src->e, src->n * sizeof(*src->e));
		dst->n += src->n;
	}
	free(src->e);
	src->e = NULL;
	src->n = 0;
}

void envedits_free(struct envedits *ed)
{
	for (size_t i = 0; i < ed->n; i++) {
		free(ed->e[i].name);
		free(ed->e[i].value);
	}
	free(ed->e);
	ed->e = NULL;
	ed->n = 0;
}
