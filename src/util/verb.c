/* Reading a ctl line against a table of verbs (verb.h). */
#include "verb.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signame.h"

int verb_parse_ms(const char *text, uint64_t *ms)
{
	unsigned long long v;
	char *end;

	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*ms = v;
	return 0;
}

int ctl_line_split(const char *line, size_t len, struct ctl_line *cl)
{
	char *save;

	while (len > 0 && line[len - 1] == '\n')
		len--;
	if (len == 0 || len >= sizeof(cl->buf) || memchr(line, '\0', len) ||
	    memchr(line, '\n', len))
		return -EINVAL;
	memcpy(cl->buf, line, len);
	cl->buf[len] = '\0';
	cl->verb = strtok_r(cl->buf, " \t", &save);
	cl->arg = strtok_r(NULL, " \t", &save);
	return cl->verb && !strtok_r(NULL, " \t", &save) ? 0 : -EINVAL;
}

static int parse_arg(enum verb_arg kind, const char *arg, struct verb_value *v)
{
	switch (kind) {
	case VA_NONE:
		return arg ? -EINVAL : 0;
	case VA_SIGNAL:
		v->sig = SIGTERM;
		return arg ? signal_parse(arg, &v->sig) : 0;
	case VA_MS:
		return arg ? verb_parse_ms(arg, &v->ms) : -EINVAL;
	}
	return -EINVAL;
}

/* Why the last line this thread read was refused. */
static __thread char why[256];

const char *verb_why(void)
{
	return why;
}

static const char *arg_form(enum verb_arg kind)
{
	return kind == VA_SIGNAL ? " [SIGNAL]" : kind == VA_MS ? " MS" : "";
}

static const char *arg_fault(enum verb_arg kind)
{
	switch (kind) {
	case VA_NONE:
		return "it takes no argument";
	case VA_SIGNAL:
		return "no such signal";
	case VA_MS:
		return "not a number of milliseconds";
	}
	return "";
}

/* The verbs a table takes, "kill [SIGNAL], timeout MS", into why after prefix. */
static int refuse(const struct verb *table, size_t n, const char *prefix)
{
	size_t used = (size_t)snprintf(why, sizeof(why), "%s (it takes:", prefix);

	for (size_t i = 0; i < n && used < sizeof(why); i++)
		used += (size_t)snprintf(why + used, sizeof(why) - used, "%s %s%s", i ? "," : "",
					 table[i].name, arg_form(table[i].arg));
	if (used < sizeof(why))
		snprintf(why + used, sizeof(why) - used, ")");
	return -EINVAL;
}

int verb_run(const struct verb *table, size_t n, void *obj, const char *line, size_t len)
{
	struct verb_value v = {0};
	struct ctl_line cl;
	char prefix[VERB_LINE_MAX + 64];

	why[0] = '\0';
	if (ctl_line_split(line, len, &cl) < 0)
		return refuse(table, n, "not one line of a verb and at most one argument");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cl.verb, table[i].name) != 0)
			continue;
		if (parse_arg(table[i].arg, cl.arg, &v) == 0)
			return obj ? table[i].apply(obj, table[i].name, &v) : 0;
		if (cl.arg)
			snprintf(prefix, sizeof(prefix), "%s %s: %s", cl.verb, cl.arg,
				 arg_fault(table[i].arg));
		else
			snprintf(prefix, sizeof(prefix), "%s wants%s", cl.verb,
				 arg_form(table[i].arg));
		return refuse(table, n, prefix);
	}
	snprintf(prefix, sizeof(prefix), "no verb '%s'", cl.verb);
	return refuse(table, n, prefix);
}
