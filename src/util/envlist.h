/* A session's environment as NAME=VALUE strings, and the env control file's edit language. */
#ifndef SBX_ENVLIST_H
#define SBX_ENVLIST_H

#include <stdbool.h>
#include <stddef.h>

struct envlist {
	char **v; /* NAME=VALUE, NULL-terminated */
	size_t n;
};

/* One edit line: `NAME=VALUE` sets, `-NAME` unsets (value NULL). */
struct envedit {
	char *name;
	char *value;
};

struct envedits {
	struct envedit *e;
	size_t n;
};

bool env_name_valid(const char *s, size_t len);

void envlist_init(struct envlist *el);
void envlist_free(struct envlist *el);
void envlist_copy(struct envlist *dst, const struct envlist *src);
void envlist_set(struct envlist *el, const char *name, const char *value);
void envlist_unset(struct envlist *el, const char *name);
const char *envlist_get(const struct envlist *el, const char *name);
/* Adds a NAME=VALUE entry as is (no validation beyond '=' presence). */
void envlist_put(struct envlist *el, const char *entry);
void envlist_apply(struct envlist *el, const struct envedits *ed);
/* Bytes the list takes in an execve's environment: each NAME=VALUE with its NUL. */
size_t envlist_bytes(const struct envlist *el);
/* The same for one variable. */
size_t env_entry_bytes(const char *name, const char *value);
/* -EFBIG if ed sets a variable bigger than entry_max, or makes el (with ed applied) bigger
 * than total_max and bigger than it was: a write that shrinks an env too big stays allowed. */
int envlist_check_edits(const struct envlist *el, const struct envedits *ed, size_t entry_max,
			size_t total_max);
/* Whether a line still being written (no newline yet) already sets a variable over entry_max,
 * whatever its end: its $'...' form can shrink at most 4 to 1 (\xHH). */
bool envedit_partial_too_big(const char *line, size_t len, size_t entry_max);
/* "NAME=VALUE\n" lines sorted by name; caller frees. */
char *envlist_format(const struct envlist *el, size_t *len);

/* What an edit line is, as a refusal says it. */
#define ENVEDIT_FORM                                                                               \
	"a line is NAME=VALUE or -NAME: NAME of letters, digits and _, not first a digit; VALUE "  \
	"as is, or in the $'...' form, no NUL"

/* Parses edit lines; empty lines are skipped. -EINVAL on any bad line (nothing is kept). */
int envedits_parse(const char *buf, size_t len, struct envedits *out);
void envedits_append(struct envedits *dst, struct envedits *src);
void envedits_free(struct envedits *ed);

#endif
