/* Reading a ctl line against a table of verbs (verb.h). */
#include "verb.h"

#include <errno.h>
#include <signal.h>
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

int verb_run(const struct verb *table, size_t n, void *obj, const char *line, size_t len)
{
	struct verb_value v = {0};
	struct ctl_line cl;

	if (ctl_line_split(line, len, &cl) < 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cl.verb, table[i].name) != 0)
			continue;
		if (parse_arg(table[i].arg, cl.arg, &v) < 0)
			return -EINVAL;
		return obj ? table[i].apply(obj, table[i].name, &v) : 0;
	}
	return -EINVAL;
}
