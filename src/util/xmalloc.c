/* Allocation wrappers: the one place that decides what happens when memory runs out. */
#include "xmalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		fatal("malloc %zu", size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		fatal("calloc %zu", n * size);
	return p;
}

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		fatal("realloc %zu", size);
	return q;
}

char *xstrdup(const char *s)
{
	return xmemdup(s, strlen(s) + 1);
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *xmemdup(const void *p, size_t n)
{
	void *q = xmalloc(n);

	memcpy(q, p, n);
	return q;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		fatal("vasprintf");
	va_end(ap);
	return s;
}
