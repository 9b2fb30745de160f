/* The verbs of a ctl file as a table: a row per verb, with the argument it takes and the function
 * that applies it, and one function that reads a line against the table. A line is checked
 * (no object: at write) and applied (at close) by the same parse, so it applies as it was
 * checked. */
#ifndef SBX_VERB_H
#define SBX_VERB_H

#include <stddef.h>
#include <stdint.h>

/* The longest line, its newline aside, is one byte shorter. */
#define VERB_LINE_MAX 128

enum verb_arg {
	VA_NONE,   /* "restart" */
	VA_SIGNAL, /* "kill [SIGNAL]": a name or number (signame.h), SIGTERM if none */
	VA_MS,	   /* "timeout MS": decimal milliseconds, at most UINT32_MAX */
};

/* One line of a verb and at most one argument. */
struct ctl_line {
	char buf[VERB_LINE_MAX];
	char *verb;
	char *arg; /* NULL if none */
};

/* Splits one line (a trailing newline allowed); -EINVAL if empty, too long, or with more
 * than one argument. */
int ctl_line_split(const char *line, size_t len, struct ctl_line *cl);

struct verb_value {
	int sig;
	uint64_t ms;
};

struct verb {
	const char *name;
	enum verb_arg arg;
	/* Applies the verb to obj, under whatever lock its caller holds: 0 or -errno. */
	int (*apply)(void *obj, const char *name, const struct verb_value *v);
};

/* Reads one line (a trailing newline allowed) against the n rows of table and, unless obj is
 * NULL, applies it to obj: 0, -EINVAL for a line no row takes, or what the row's apply says. */
int verb_run(const struct verb *table, size_t n, void *obj, const char *line, size_t len);

/* Why this thread's last verb_run refused its line ("no verb 'stop' (it takes: kill [SIGNAL],
 * timeout MS)"), "" if it did not. */
const char *verb_why(void);

/* Decimal milliseconds, at most UINT32_MAX, nothing else: 0 or -EINVAL. */
int verb_parse_ms(const char *text, uint64_t *ms);

#define VERBS(table) (table), (sizeof(table) / sizeof((table)[0]))

#endif
