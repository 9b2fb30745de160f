/* The daemon's settings: defaults, the ini file, and validation. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

struct config {
	char *workspace;      /* backing directory of workspace/ */
	char *state_dir;      /* spool files and the lock */
	char *launcher;       /* path of sbxfs-launcher; "" = next to the sbxfs binary */
	enum log_level log_level;

	char *cgroup;         /* auto, v1, v2 or none */

	char *shell;          /* bash: the session driver is a bash script */
	uint64_t timeout_ms;  /* a session's default command timeout; 0 = none */
	uint64_t kill_grace_ms; /* from a kill's signal to SIGKILL */
	unsigned history;     /* runs kept per session */
	uint64_t output_cap;  /* bytes kept per output stream of a command */
	char **base_env;      /* NAME=VALUE, NULL-terminated: a new session's environment */
	size_t n_base_env;

	bool ws_cache;        /* workspace changed only through sbxfs and the sandbox */
	double ws_timeout;    /* entry/attr timeout in seconds when ws_cache is on */
};

void config_defaults(struct config *cfg);
/* Reads an ini file over the current values; on error returns -errno and writes a reason. */
int config_load(struct config *cfg, const char *path, char *err, size_t errlen);
/* Sets one key as the ini file would ("section", "key", "value"). */
int config_set(struct config *cfg, const char *section, const char *key, const char *value,
	       char *err, size_t errlen);
void config_free(struct config *cfg);

#endif
