/* Config keys by name, as `-o key=value` gives them: the table of keys and their sections. */
#ifndef SBX_CONFIG_OPT_H
#define SBX_CONFIG_OPT_H

#include <stddef.h>

#include "config.h"

struct config_key {
	const char *section, *key;
	const char *example; /* a valid value, unlike the default where it can be */
	const char *bad;     /* a value the key refuses; NULL: it takes any string */
};

/* Every key of every section but [env] (whose names are the variables'), ended by a NULL key. */
extern const struct config_key config_keys[];

/* Sets NAME ("key" or "section.key"; "env.NAME" for a variable) as the ini file would. A key
 * in two sections must be named with its section. -EINVAL with a reason naming the key. */
int config_set_opt(struct config *cfg, const char *name, const char *value, char *err,
		   size_t errlen);

/* Splits a comma-separated option list ("\," is a comma in a value, "\\" a backslash) into a
 * NULL-terminated list of strings (empty items dropped), each owned by the list. */
char **config_opt_split(const char *opts);
void config_opt_free(char **list);

#endif
