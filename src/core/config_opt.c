/* Config keys by name for `-o key=value`: the table of keys (section, a valid and an invalid
 * example for the tests), resolving a bare key to its section, and splitting option lists. */
#include "config_opt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

/* A key added to src/core/config.c and conf/sbxfs.ini goes here too: test_config_opt checks the
 * table against conf/sbxfs.ini and sets each key by its example. */
const struct config_key config_keys[] = {
    {"sbxfs", "workspace", "/srv/ws", NULL},
    {"sbxfs", "state_dir", "/srv/state", NULL},
    {"sbxfs", "launcher", "/usr/libexec/sbxfs-launcher", NULL},
    {"sbxfs", "log_level", "debug", "loud"},
    {"sbxfs", "cgroup", "none", "v3"},
    {"sbxfs", "log_max", "1M", "1X"},
    {"sbxfs", "journal_max", "1M", "1Q"},
    {"session", "shell", "/bin/sh", NULL},
    {"session", "path", "/bin:/usr/bin", NULL},
    {"session", "home", "/root", NULL},
    {"session", "lang", "C", NULL},
    {"session", "timeout_ms", "1000", "-1"},
    {"session", "kill_grace_ms", "100", "3600001"},
    {"session", "history", "5", "0"},
    {"session", "output_cap", "4096", "0"},
    {"session", "git_timeout_ms", "1000", "0"},
    {"session", "git_allow_private", "yes", "maybe"},
    {"session", "git_local_roots", "/srv/a:/srv/b", "relative"},
    {"session", "git_object_max", "1G", "2T"},
    {"session", "git_file_max", "max", "8X"},
    {"session", "env_value_max", "4K", "1"},
    {"session", "env_max", "64K", "1"},
    {"session", "spool_max", "1G", "lots"},
    {"session", "term_ring", "64K", "0"},
    {"session", "term_wait_ms", "100", "0"},
    {"session", "terms_max", "8", "0"},
    {"session", "term_cells_max", "1M", "0"},
    {"sandbox", "isolation", "none", "chroot"},
    {"sandbox", "user", "nobody", NULL},
    {"sandbox", "uid_range", "100000-100999", "0-10"},
    {"sandbox", "network", "filtered", "bridge"},
    {"sandbox", "idmap", "none", "group"},
    {"sandbox", "memory_max", "2G", "-2G"},
    {"sandbox", "pids_max", "64", "0"},
    {"sandbox", "cpu_max", "1.5", "nan"},
    {"sandbox", "tmp_size", "64M", "64Q"},
    {"sandbox", "shm_size", "16M", "16Q"},
    {"sandbox", "workspace_max", "1G", "1GB"},
    {"sandbox", "workspace_fs", "xfs", "btrfs"},
    {"sandbox", "home_max", "256M", "512K"},
    {"sandbox", "memory_reserve", "64M", "64Q"},
    {"sandbox", "session_pids_max", "10%", "101%"},
    {"sandbox", "sleep_after", "300", "1h"},
    {"network", "expose_address", "::1", "localhost"},
    {"network", "expose_public", "yes", "maybe"},
    {"network", "expose_max_ports", "4", "1025"},
    {"network", "expose_max_connections", "16", "0"},
    {"workspace", "mount", "fuse", "bind"},
    {"workspace", "host_symlinks", "follow", "maybe"},
    {"workspace", "cache", "no", "maybe"},
    {"workspace", "cache_timeout", "2.5", "-1"},
    {"workspace", "passthrough", "no", "maybe"},
    {"workspace", "max_fds", "100", "x"},
    {"network", "allow", "registry.example private, *.example.org:8080", "*.*"},
    {"network", "deny", "ads.example.org:*", "ads.example.org private"},
    {"network", "allow_private", "yes", "maybe"},
    {"network", "connections_max", "16", "0"},
    {"snapshots", "dir", "/srv/snapshots", "relative"},
    {"snapshots", "max", "1000", "0"},
    {"snapshots", "space_max", "1G", "1GB"},
    {"snapshots", "compress", "zstd", "gzip"},
    {"snapshots", "import_files_max", "1000", "0"},
    {"snapshots", "files_max", "5000", "0"},
    {NULL, NULL, NULL, NULL},
};

/* The section of a bare key: NULL if no section has it, "" if more than one does. */
static const char *section_of(const char *key)
{
	const char *found = NULL;

	for (const struct config_key *k = config_keys; k->key; k++) {
		if (strcmp(k->key, key))
			continue;
		if (found)
			return "";
		found = k->section;
	}
	return found;
}

int config_set_opt(struct config *cfg, const char *name, const char *value, char *err,
		   size_t errlen)
{
	const char *dot = strchr(name, '.'), *section;
	char *sec;
	int rc;

	if (dot) {
		sec = xstrndup(name, (size_t)(dot - name));
		rc = config_set(cfg, sec, dot + 1, value, err, errlen);
		free(sec);
		return rc;
	}
	section = section_of(name);
	if (!section) {
		snprintf(err, errlen, "unknown option '%s'", name);
		return -EINVAL;
	}
	if (!section[0]) {
		snprintf(err, errlen, "'%s' is a key of more than one section: name it SECTION.%s",
			 name, name);
		return -EINVAL;
	}
	return config_set(cfg, section, name, value, err, errlen);
}

char **config_opt_split(const char *opts)
{
	char **list = xcalloc(1, sizeof(char *));
	char *item = xmalloc(strlen(opts) + 1);
	size_t n = 0, len = 0;

	for (const char *p = opts;; p++) {
		if (*p == '\\' && (p[1] == ',' || p[1] == '\\')) {
			item[len++] = *++p;
			continue;
		}
		if (*p && *p != ',') {
			item[len++] = *p;
			continue;
		}
		if (len) {
			list = xrealloc(list, (n + 2) * sizeof(char *));
			list[n++] = xstrndup(item, len);
			list[n] = NULL;
			len = 0;
		}
		if (!*p)
			break;
	}
	free(item);
	return list;
}

void config_opt_free(char **list)
{
	for (size_t i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}
