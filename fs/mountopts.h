/* The command line's `-o` lists: FUSE's mount options, sbxfs's own and config keys. */
#ifndef SBX_MOUNTOPTS_H
#define SBX_MOUNTOPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct mountopts {
	char *fuse;	 /* options for libfuse's mount, comma-separated; NULL: none */
	char *config;	 /* config=PATH: the ini file */
	bool syslog;	 /* log to syslog, not the state dir's log file */
	char **settings; /* NAME=VALUE config keys in the order given, NULL-terminated */
	size_t n_settings;
};

/* Adds one -o list; -EINVAL with a reason naming the option if one is not known. */
int mountopts_add(struct mountopts *mo, const char *opts, char *err, size_t errlen);
/* Sets the config keys given, in order; -EINVAL with a reason at the first bad one. */
int mountopts_apply(const struct mountopts *mo, struct config *cfg, char *err, size_t errlen);
void mountopts_free(struct mountopts *mo);

#endif
