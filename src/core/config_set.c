/* Setting config keys by name: the value parsers, each section's keys, and config_set, which
 * the ini loader and -o overrides both go through; unknown keys are errors so typos surface. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_priv.h"
#include "envlist.h"
#include "netpolicy.h"
#include "xmalloc.h"

static void set_str(char **dst, const char *value)
{
	free(*dst);
	*dst = xstrdup(value);
}

static void base_env_unset(struct config *cfg, const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < cfg->n_base_env; i++) {
		if (strncmp(cfg->base_env[i], name, nlen) == 0 && cfg->base_env[i][nlen] == '=') {
			free(cfg->base_env[i]);
			memmove(&cfg->base_env[i], &cfg->base_env[i + 1],
				(cfg->n_base_env - i) * sizeof(char *));
			cfg->n_base_env--;
			return;
		}
	}
}

static int parse_bool(const char *value, bool *out)
{
	if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcmp(value, "1")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(value, "no") || !strcasecmp(value, "false") || !strcmp(value, "0")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_seconds(const char *value, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(value, &end);
	if (errno || end == value || *end || !(d >= 0 && d <= 86400)) /* NaN too */
		return -EINVAL;
	*out = d;
	return 0;
}

static int parse_u64(const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

void config_free_list(char **list)
{
	for (size_t i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}

/* "/a:/b" into a NULL-terminated list; every entry an absolute path, "" for none. */
static int parse_roots(const char *value, char ***out)
{
	char *copy = xstrdup(value), *p = copy, *part;
	char **list = xcalloc(1, sizeof(char *));
	size_t n = 0;
	int rc = 0;

	while (value[0] && rc == 0 && (part = strsep(&p, ":"))) {
		if (part[0] != '/') {
			rc = -EINVAL;
			break;
		}
		list = xrealloc(list, (n + 2) * sizeof(char *));
		list[n++] = xstrdup(part);
		list[n] = NULL;
	}
	free(copy);
	if (rc < 0) {
		config_free_list(list);
		return rc;
	}
	config_free_list(*out);
	*out = list;
	return 0;
}

/* An empty value is the default for the user sbxfs runs as (see config_default_dir). */
static void set_dir(char **dst, const char *value, const char *name)
{
	char *dir = value[0] ? xstrdup(value) : config_default_dir(name);

	free(*dst);
	*dst = dir;
}

static int set_main(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "workspace"))
		set_dir(&cfg->workspace, value, "workspace");
	else if (!strcmp(key, "state_dir"))
		set_dir(&cfg->state_dir, value, "state");
	else if (!strcmp(key, "launcher"))
		set_str(&cfg->launcher, value);
	else if (!strcmp(key, "log_level"))
		return log_level_parse(value, &cfg->log_level);
	else if (!strcmp(key, "cgroup")) {
		if (strcmp(value, "auto") && strcmp(value, "v1") && strcmp(value, "v2") &&
		    strcmp(value, "none"))
			return -EINVAL;
		set_str(&cfg->cgroup, value);
	} else if (!strcmp(key, "log_max"))
		return config_parse_size(value, &cfg->log_max);
	else if (!strcmp(key, "journal_max"))
		return config_parse_size(value, &cfg->journal_max);
	else
		return -ENOENT;
	return 0;
}

/* A size as config_parse_size reads it, within [min, max] ("max" is no size here). */
static int parse_size_in(const char *value, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (config_parse_size(value, &v) < 0 || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A tmpfs size, or "auto": derived from memory_max (config_tmp_size). */
static int parse_tmpfs_size(const char *value, uint64_t *out)
{
	uint64_t v;

	if (!strcmp(value, "auto")) {
		*out = CONFIG_SIZE_AUTO;
		return 0;
	}
	if (config_parse_size(value, &v) < 0 || v == CONFIG_SIZE_AUTO)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A size as config_parse_size reads it ("max": 0, no bound), min to 1T: what is derived from
 * it (a checkout's memory, a multiple of git_object_max) cannot overflow. */
static int parse_bound_in(const char *value, uint64_t min, uint64_t *out)
{
	return strcmp(value, "max") ? parse_size_in(value, min, 1ull << 40, out)
				    : config_parse_size(value, out);
}

static int parse_bound(const char *value, uint64_t *out)
{
	return parse_bound_in(value, 1, out);
}

static int set_session(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "shell"))
		set_str(&cfg->shell, value);
	else if (!strcmp(key, "path"))
		config_base_env_set(cfg, "PATH", value);
	else if (!strcmp(key, "home") && !value[0])
		base_env_unset(cfg, "HOME"); /* the sandbox user's home (home.c) */
	else if (!strcmp(key, "home"))
		config_base_env_set(cfg, "HOME", value);
	else if (!strcmp(key, "lang"))
		config_base_env_set(cfg, "LANG", value);
	else if (!strcmp(key, "timeout_ms"))
		return parse_u64(value, 0, UINT32_MAX, &cfg->timeout_ms);
	else if (!strcmp(key, "kill_grace_ms"))
		return parse_u64(value, 0, 3600000, &cfg->kill_grace_ms);
	else if (!strcmp(key, "history")) {
		uint64_t v;

		if (parse_u64(value, 1, 100000, &v) < 0)
			return -EINVAL;
		cfg->history = (unsigned)v;
	} else if (!strcmp(key, "output_cap"))
		return parse_u64(value, 1, UINT64_MAX >> 2, &cfg->output_cap);
	else if (!strcmp(key, "git_timeout_ms"))
		return parse_u64(value, 1, UINT32_MAX, &cfg->git_timeout_ms);
	else if (!strcmp(key, "git_allow_private"))
		return parse_bool(value, &cfg->git_allow_private);
	else if (!strcmp(key, "git_local_roots"))
		return parse_roots(value, &cfg->git_local_roots);
	else if (!strcmp(key, "git_object_max"))
		return parse_bound(value, &cfg->git_object_max);
	else if (!strcmp(key, "git_file_max"))
		return parse_bound(value, &cfg->git_file_max);
	else if (!strcmp(key, "env_value_max"))
		return parse_size_in(value, 2, ENV_STRING_LIMIT, &cfg->env_value_max);
	else if (!strcmp(key, "env_max"))
		return parse_size_in(value, 2, UINT32_MAX, &cfg->env_max);
	else if (!strcmp(key, "spool_max"))
		return config_parse_size(value, &cfg->spool_max);
	else if (!strcmp(key, "term_ring"))
		return parse_size_in(value, 1, 1ull << 30, &cfg->term_ring);
	else if (!strcmp(key, "term_wait_ms"))
		return parse_u64(value, 1, UINT32_MAX, &cfg->term_wait_ms);
	else if (!strcmp(key, "terms_max"))
		return parse_u64(value, 1, 1u << 16, &cfg->terms_max);
	else if (!strcmp(key, "term_cells_max"))
		return parse_size_in(value, 1, 1ull << 32, &cfg->term_cells_max);
	else
		return -ENOENT;
	return 0;
}

int config_parse_size(const char *value, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!strcmp(value, "max")) {
		*out = 0;
		return 0;
	}
	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || value[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'K':
	case 'k':
		shift = 10;
		end++;
		break;
	case 'M':
	case 'm':
		shift = 20;
		end++;
		break;
	case 'G':
	case 'g':
		shift = 30;
		end++;
		break;
	case 'T':
	case 't':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int set_choice(const char *value, const char *yes, const char *no, bool *out)
{
	if (!strcmp(value, yes))
		*out = true;
	else if (!strcmp(value, no))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int set_idmap(const char *value, enum idmap *out)
{
	if (!strcmp(value, "handover"))
		*out = IDMAP_HANDOVER;
	else if (!strcmp(value, "user"))
		*out = IDMAP_USER;
	else if (!strcmp(value, "none"))
		*out = IDMAP_NONE;
	else
		return -EINVAL;
	return 0;
}

/* "FIRST-LAST", inclusive: above root, and never (uid_t)-1, which is no id. */
static int parse_id_range(const char *value, uint32_t *first, uint32_t *last)
{
	const char *dash = strchr(value, '-');
	char *head;
	uint64_t a, b;
	int rc;

	if (!dash)
		return -EINVAL;
	head = xstrndup(value, (size_t)(dash - value));
	rc = parse_u64(head, 1, UINT32_MAX - 1, &a);
	free(head);
	if (rc < 0 || parse_u64(dash + 1, a, UINT32_MAX - 1, &b) < 0)
		return -EINVAL;
	*first = (uint32_t)a;
	*last = (uint32_t)b;
	return 0;
}

/* A number, max (or 0) for none, or a percentage of pids_max ("50%"). A bad value changes
 * nothing. */
static int set_session_pids(struct config *cfg, const char *value)
{
	size_t len = strlen(value);
	uint64_t n = 0, pct = 0;
	int rc = 0;

	if (len > 0 && value[len - 1] == '%') {
		char *num = xstrndup(value, len - 1);

		rc = parse_u64(num, 1, 100, &pct);
		free(num);
	} else if (strcmp(value, "max")) {
		rc = parse_u64(value, 0, 1u << 22, &n);
	}
	if (rc < 0)
		return rc;
	cfg->session_pids_max = n;
	cfg->session_pids_pct = (unsigned)pct;
	return 0;
}

static int set_sandbox(struct config *cfg, const char *key, const char *value)
{
	char *end;

	if (!strcmp(key, "isolation"))
		return set_choice(value, "bwrap", "none", &cfg->isolate);
	if (!strcmp(key, "network"))
		return net_mode_parse(value, strlen(value), &cfg->net_mode);
	if (!strcmp(key, "idmap"))
		return set_idmap(value, &cfg->idmap);
	if (!strcmp(key, "user")) {
		set_str(&cfg->user, value);
		return 0;
	}
	if (!strcmp(key, "memory_max"))
		return config_parse_size(value, &cfg->memory_max);
	if (!strcmp(key, "pids_max"))
		return !strcmp(value, "max") ? (cfg->pids_max = 0, 0)
					     : parse_u64(value, 1, 1u << 22, &cfg->pids_max);
	if (!strcmp(key, "cpu_max")) {
		if (!strcmp(value, "max")) {
			cfg->cpu_max = 0;
			return 0;
		}
		cfg->cpu_max = strtod(value, &end);
		/* written so that NaN fails too */
		return (*end || end == value || !(cfg->cpu_max > 0 && cfg->cpu_max <= 4096))
			   ? -EINVAL
			   : 0;
	}
	if (!strcmp(key, "tmp_size"))
		return parse_tmpfs_size(value, &cfg->tmp_size);
	if (!strcmp(key, "shm_size"))
		return parse_tmpfs_size(value, &cfg->shm_size);
	if (!strcmp(key, "uid_range"))
		return parse_id_range(value, &cfg->uid_first, &cfg->uid_last);
	if (!strcmp(key, "workspace_max"))
		return config_parse_size(value, &cfg->workspace_max);
	if (!strcmp(key, "home_max"))
		return !strcmp(value, "auto") ? (cfg->home_max = CONFIG_SIZE_AUTO, 0)
					      : parse_bound_in(value, 1ull << 20, &cfg->home_max);
	if (!strcmp(key, "workspace_fs"))
		return set_choice(value, "xfs", "ext4", &cfg->workspace_xfs);
	if (!strcmp(key, "memory_reserve"))
		return config_parse_size(value, &cfg->memory_reserve);
	if (!strcmp(key, "session_pids_max"))
		return set_session_pids(cfg, value);
	if (!strcmp(key, "sleep_after"))
		return parse_u64(value, 0, 30 * 86400, &cfg->sleep_after);
	return -ENOENT;
}

static int set_workspace(struct config *cfg, const char *key, const char *value)
{
	if (!strcmp(key, "cache"))
		return parse_bool(value, &cfg->ws_cache);
	if (!strcmp(key, "cache_timeout"))
		return parse_seconds(value, &cfg->ws_timeout);
	if (!strcmp(key, "passthrough"))
		return parse_bool(value, &cfg->ws_passthrough);
	if (!strcmp(key, "mount"))
		return set_choice(value, "kernel", "fuse", &cfg->ws_kernel);
	if (!strcmp(key, "host_symlinks"))
		return set_choice(value, "follow", "nofollow", &cfg->ws_symfollow);
	if (!strcmp(key, "max_fds"))
		return parse_u64(value, 0, 1u << 30, &cfg->ws_max_fds);
	return -ENOENT;
}

/* A list of rules' arguments, each checked as its policy line would be. */
static int set_rules(char **dst, const char *verb, const char *value)
{
	char *copy = xstrdup(value), *p = copy, *item, why[128];
	int rc = 0;

	while (rc == 0 && (item = strsep(&p, ","))) {
		char *line;

		item += strspn(item, " \t");
		if (!item[0])
			continue;
		line = xasprintf("%s %s", verb, item);
		rc = netpolicy_line(line, strlen(line), NULL, why, sizeof(why));
		free(line);
	}
	free(copy);
	if (rc == 0)
		set_str(dst, value);
	return rc;
}

/* [network]: the policy's start (allow, deny, allow_private, connections_max) and exposed
 * ports (expose_*). */
static int set_network(struct config *cfg, const char *key, const char *value)
{
	uint64_t n;
	bool loopback;
	int rc;

	if (!strcmp(key, "allow"))
		return set_rules(&cfg->net_allow, "allow", value);
	if (!strcmp(key, "deny"))
		return set_rules(&cfg->net_deny, "deny", value);
	if (!strcmp(key, "allow_private"))
		return parse_bool(value, &cfg->net_allow_private);
	if (!strcmp(key, "connections_max"))
		return parse_u64(value, 1, 4096, &cfg->net_conns_max);
	if (!strcmp(key, "expose_address")) {
		if (config_expose_addr(value, NULL, NULL, &loopback) < 0)
			return -EINVAL;
		set_str(&cfg->expose_address, value);
		return 0;
	}
	if (!strcmp(key, "expose_public"))
		return parse_bool(value, &cfg->expose_public);
	if (!strcmp(key, "expose_max_ports")) {
		rc = parse_u64(value, 0, EXPOSE_PORTS_LIMIT, &n);
		cfg->expose_max_ports = rc < 0 ? cfg->expose_max_ports : (unsigned)n;
		return rc;
	}
	if (!strcmp(key, "expose_max_connections")) {
		rc = parse_u64(value, 1, EXPOSE_CONNECTIONS_LIMIT, &n);
		cfg->expose_max_connections = rc < 0 ? cfg->expose_max_connections : (unsigned)n;
		return rc;
	}
	return -ENOENT;
}

static int set_snapshots(struct config *cfg, const char *key, const char *value)
{
	uint64_t v;

	if (!strcmp(key, "dir")) {
		if (value[0] && value[0] != '/')
			return -EINVAL;
		set_str(&cfg->snap_dir, value);
		return 0;
	}
	if (!strcmp(key, "max")) {
		if (parse_u64(value, 1, 1u << 20, &v) < 0)
			return -EINVAL;
		cfg->snap_max = (unsigned)v;
		return 0;
	}
	if (!strcmp(key, "space_max"))
		return config_parse_size(value, &cfg->snap_space_max);
	if (!strcmp(key, "compress"))
		return set_choice(value, "zstd", "none", &cfg->snap_zstd);
	if (!strcmp(key, "import_files_max"))
		return parse_u64(value, 1, 1u << 30, &cfg->snap_import_files);
	if (!strcmp(key, "files_max")) {
		if (!strcmp(value, "max")) {
			cfg->snap_files_max = 0;
			return 0;
		}
		return parse_u64(value, 1, UINT32_MAX, &cfg->snap_files_max);
	}
	return -ENOENT;
}

int config_set(struct config *cfg, const char *section, const char *key, const char *value,
	       char *err, size_t errlen)
{
	int rc;

	if (!strcmp(section, "sbxfs"))
		rc = set_main(cfg, key, value);
	else if (!strcmp(section, "session"))
		rc = set_session(cfg, key, value);
	else if (!strcmp(section, "workspace"))
		rc = set_workspace(cfg, key, value);
	else if (!strcmp(section, "sandbox"))
		rc = set_sandbox(cfg, key, value);
	else if (!strcmp(section, "network"))
		rc = set_network(cfg, key, value);
	else if (!strcmp(section, "snapshots"))
		rc = set_snapshots(cfg, key, value);
	else if (!strcmp(section, "env")) {
		rc = env_name_valid(key, strlen(key)) ? 0 : -EINVAL;
		if (rc == 0)
			config_base_env_set(cfg, key, value);
	} else {
		snprintf(err, errlen, "unknown section [%s]", section);
		return -EINVAL;
	}
	if (rc == -ENOENT)
		snprintf(err, errlen, "unknown key '%s' in [%s]", key, section);
	else if (rc < 0)
		snprintf(err, errlen, "bad value '%s' for %s in [%s]", value, key, section);
	return rc < 0 ? -EINVAL : 0;
}
