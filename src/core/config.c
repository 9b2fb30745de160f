/* The daemon's settings: built-in defaults (conf/sbxfs.ini documents the same values), the
 * checks across keys, and the limits derived from them. Setting keys is config_set.c's, loading
 * the ini file config_load.c's. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_priv.h"
#include "xmalloc.h"

void config_base_env_set(struct config *cfg, const char *name, const char *value)
{
	size_t nlen = strlen(name);
	char *entry = xasprintf("%s=%s", name, value);

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		if (strncmp(cfg->base_env[i], name, nlen) == 0 && cfg->base_env[i][nlen] == '=') {
			free(cfg->base_env[i]);
			cfg->base_env[i] = entry;
			return;
		}
	}
	cfg->base_env = xrealloc(cfg->base_env, (cfg->n_base_env + 2) * sizeof(char *));
	cfg->base_env[cfg->n_base_env++] = entry;
	cfg->base_env[cfg->n_base_env] = NULL;
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->workspace = xstrdup("/var/lib/sbxfs/workspace");
	cfg->state_dir = xstrdup("/var/lib/sbxfs/state");
	cfg->launcher = xstrdup("");
	cfg->log_level = LOG_LVL_INFO;
	cfg->cgroup = xstrdup("auto");
	cfg->shell = xstrdup("/bin/bash");
	cfg->timeout_ms = 0;
	cfg->kill_grace_ms = 2000;
	cfg->history = 100;
	cfg->output_cap = 1ull << 30;
	cfg->git_timeout_ms = 600000;
	cfg->git_allow_private = false;
	cfg->git_local_roots = xcalloc(1, sizeof(char *));
	cfg->env_value_max = 128ull << 10;
	cfg->env_max = 1ull << 20;
	cfg->term_ring = 1ull << 20;
	cfg->term_wait_ms = 30000;
	cfg->terms_max = 64;
	/* 64 terminals of 300x100; each cell costs about 100 bytes of emulator */
	cfg->term_cells_max = 2u << 20;
	cfg->isolate = true;
	cfg->user = xstrdup("");
	cfg->host_network = false;
	cfg->idmap = true;
	cfg->memory_max = 4ull << 30;
	cfg->pids_max = 4096;
	cfg->cpu_max = 0;
	cfg->tmp_size = 1ull << 30;
	cfg->shm_size = 256ull << 20;
	cfg->uid_first = 2000000000;
	cfg->uid_last = 2000065535;
	cfg->memory_reserve = 256ull << 20;
	cfg->session_pids_pct = 50;
	cfg->ws_cache = true;
	cfg->ws_timeout = 1.0;
	cfg->ws_passthrough = true;
	cfg->ws_kernel = true;
	cfg->ws_symfollow = false;
	cfg->ws_max_fds = 0;
	cfg->log_max = 10ull << 20;
	cfg->spool_max = 4ull << 30;
	cfg->workspace_max = 0;
	config_base_env_set(cfg, "PATH",
			    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	config_base_env_set(cfg, "LANG", "C.UTF-8");
	config_base_env_set(cfg, "TERM", "dumb");
}

uint64_t config_session_pids(const struct config *cfg)
{
	uint64_t n;

	if (!cfg->session_pids_pct)
		return cfg->session_pids_max;
	n = cfg->pids_max * cfg->session_pids_pct / 100;
	return cfg->pids_max && !n ? 1 : n;
}

/* The configured env ([env], path, home, lang) within the env bounds it sets itself. */
static int check_base_env(const struct config *cfg, char *err, size_t errlen)
{
	uint64_t total = 0;

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		size_t bytes = strlen(cfg->base_env[i]) + 1;

		if (bytes > cfg->env_value_max) {
			snprintf(err, errlen,
				 "%.*s: %zu bytes, over [session] env_value_max (%llu)",
				 (int)strcspn(cfg->base_env[i], "="), cfg->base_env[i], bytes,
				 (unsigned long long)cfg->env_value_max);
			return -EFBIG;
		}
		total += bytes;
	}
	if (total > cfg->env_max) {
		snprintf(err, errlen,
			 "the configured env takes %llu bytes, over [session] env_max "
			 "(%llu)",
			 (unsigned long long)total, (unsigned long long)cfg->env_max);
		return -EFBIG;
	}
	return 0;
}

uint64_t config_session_memory(const struct config *cfg)
{
	uint64_t reserve = cfg->memory_reserve;

	if (!cfg->memory_max || !reserve)
		return 0;
	if (reserve > cfg->memory_max / 4)
		reserve = cfg->memory_max / 4;
	return cfg->memory_max - reserve;
}

int config_check(const struct config *cfg, char *err, size_t errlen)
{
	uint64_t session_max = config_session_memory(cfg);

	if (check_base_env(cfg, err, errlen) < 0)
		return -EINVAL;
	/* tmpfs pages are charged to the sandbox and cannot be reclaimed: a full /tmp must not
	 * be able to take the whole memory limit. */
	if (cfg->memory_max && cfg->tmp_size + cfg->shm_size >= cfg->memory_max) {
		snprintf(err, errlen,
			 "[sandbox] tmp_size + shm_size (%llu) must stay below memory_max (%llu)",
			 (unsigned long long)(cfg->tmp_size + cfg->shm_size),
			 (unsigned long long)cfg->memory_max);
		return -EINVAL;
	}
	/* The same within a session: what it writes there is charged to its own group. */
	if (session_max && cfg->tmp_size + cfg->shm_size >= session_max) {
		snprintf(err, errlen,
			 "[sandbox] tmp_size + shm_size (%llu) must stay below a session's memory "
			 "limit, memory_max - memory_reserve (%llu)",
			 (unsigned long long)(cfg->tmp_size + cfg->shm_size),
			 (unsigned long long)session_max);
		return -EINVAL;
	}
	return 0;
}

void config_free(struct config *cfg)
{
	free(cfg->workspace);
	free(cfg->state_dir);
	free(cfg->launcher);
	free(cfg->shell);
	free(cfg->cgroup);
	free(cfg->user);
	config_free_list(cfg->git_local_roots);
	for (size_t i = 0; i < cfg->n_base_env; i++)
		free(cfg->base_env[i]);
	free(cfg->base_env);
	memset(cfg, 0, sizeof(*cfg));
}
