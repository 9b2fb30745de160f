/* What config.c (defaults, checks, free) and config_set.c (setting keys) share. */
#ifndef SBX_CONFIG_PRIV_H
#define SBX_CONFIG_PRIV_H

#include "config.h"

/* Sets NAME=value in the env commands start with, in place of an earlier NAME. */
void config_base_env_set(struct config *cfg, const char *name, const char *value);
/* The default of [sbxfs] workspace ("workspace") or state_dir ("state"): /var/lib/sbxfs/NAME as
 * root; an ordinary user cannot write there, so theirs is $XDG_DATA_HOME/sbxfs/workspace and
 * $XDG_STATE_HOME/sbxfs/state (~/.local/share and ~/.local/state without them). */
char *config_default_dir(const char *name);
/* Frees a NULL-terminated list of strings (NULL: nothing). */
void config_free_list(char **list);

#endif
