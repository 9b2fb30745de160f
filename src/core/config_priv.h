/* What config.c (defaults, checks, free) and config_set.c (setting keys) share. */
#ifndef SBX_CONFIG_PRIV_H
#define SBX_CONFIG_PRIV_H

#include "config.h"

/* Sets NAME=value in the env commands start with, in place of an earlier NAME. */
void config_base_env_set(struct config *cfg, const char *name, const char *value);
/* Frees a NULL-terminated list of strings (NULL: nothing). */
void config_free_list(char **list);

#endif
