/* What ctl and signal files take: signal names as users write them ("TERM", "SIGTERM",
 * "term" or "15"), and ctl lines of a verb and at most one argument. */
#ifndef SBX_SIGNAME_H
#define SBX_SIGNAME_H

#include <stddef.h>

int signal_parse(const char *name, int *sig);

struct ctl_line {
	char buf[128];
	char *verb;
	char *arg; /* NULL if none */
};

/* Splits one line (a trailing newline allowed); -EINVAL if empty, too long, or with more
 * than one argument. */
int ctl_line_split(const char *line, size_t len, struct ctl_line *cl);

#endif
