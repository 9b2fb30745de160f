/* Unit tests: config keys by name (`-o key=value`), driven by the key table so that a new key is
 * covered once it is in the table, and the table checked against conf/sbxfs.ini (argv[1]) so
 * that a documented key cannot be missing from it; `-o` lists and FUSE's options. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "config_opt.h"
#include "mountopts.h"

static bool same_str(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static bool same_list(char **a, char **b)
{
	size_t i;

	for (i = 0; a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return !a[i] && !b[i];
}

/* Every setting, so that a key's effect shows whatever field it sets. */
static bool same_config(const struct config *a, const struct config *b)
{
	return same_str(a->workspace, b->workspace) && same_str(a->state_dir, b->state_dir) &&
	       same_str(a->launcher, b->launcher) && a->log_level == b->log_level &&
	       same_str(a->cgroup, b->cgroup) && a->log_max == b->log_max &&
	       a->journal_max == b->journal_max &&
	       same_str(a->shell, b->shell) && a->timeout_ms == b->timeout_ms &&
	       a->kill_grace_ms == b->kill_grace_ms && a->history == b->history &&
	       a->output_cap == b->output_cap && a->git_timeout_ms == b->git_timeout_ms &&
	       a->git_allow_private == b->git_allow_private &&
	       same_list(a->git_local_roots, b->git_local_roots) &&
	       a->git_object_max == b->git_object_max && a->git_file_max == b->git_file_max &&
	       a->spool_max == b->spool_max && same_list(a->base_env, b->base_env) &&
	       a->env_value_max == b->env_value_max && a->env_max == b->env_max &&
	       a->term_ring == b->term_ring && a->term_wait_ms == b->term_wait_ms &&
	       a->terms_max == b->terms_max && a->term_cells_max == b->term_cells_max &&
	       a->isolate == b->isolate && same_str(a->user, b->user) &&
	       a->net_mode == b->net_mode && a->idmap == b->idmap &&
	       a->memory_max == b->memory_max && a->pids_max == b->pids_max &&
	       a->cpu_max == b->cpu_max && a->tmp_size == b->tmp_size &&
	       a->shm_size == b->shm_size && a->uid_first == b->uid_first &&
	       a->uid_last == b->uid_last && a->workspace_max == b->workspace_max &&
	       a->home_max == b->home_max && a->memory_reserve == b->memory_reserve &&
	       a->sleep_after == b->sleep_after &&
	       a->session_pids_max == b->session_pids_max &&
	       a->session_pids_pct == b->session_pids_pct && a->ws_cache == b->ws_cache &&
	       a->ws_timeout == b->ws_timeout && a->ws_passthrough == b->ws_passthrough &&
	       a->ws_kernel == b->ws_kernel && a->ws_symfollow == b->ws_symfollow &&
	       a->ws_max_fds == b->ws_max_fds && a->workspace_xfs == b->workspace_xfs &&
	       same_str(a->expose_address, b->expose_address) &&
	       a->expose_public == b->expose_public && a->expose_max_ports == b->expose_max_ports &&
	       a->expose_max_connections == b->expose_max_connections &&
	       same_str(a->net_allow, b->net_allow) && same_str(a->net_deny, b->net_deny) &&
	       a->net_allow_private == b->net_allow_private &&
	       a->net_conns_max == b->net_conns_max && same_str(a->snap_dir, b->snap_dir) &&
	       a->snap_max == b->snap_max && a->snap_space_max == b->snap_space_max &&
	       a->snap_zstd == b->snap_zstd && a->snap_import_files == b->snap_import_files &&
	       a->snap_files_max == b->snap_files_max;
}

static char *ini_path(const char *section, const char *key, const char *value)
{
	static char path[] = "/tmp/sbxfs-test-confopt-XXXXXX";
	char *text = NULL;
	int fd, len;

	strcpy(path, "/tmp/sbxfs-test-confopt-XXXXXX");
	len = asprintf(&text, "[%s]\n%s = %s\n", section, key, value);
	fd = mkstemp(path);
	if (len < 0 || fd < 0 || write(fd, text, (size_t)len) != len)
		abort();
	close(fd);
	free(text);
	return path;
}

/* Each key: its example, as -o KEY=, -o SECTION.KEY= and in the file, sets the same thing,
 * unlike the default; its bad value is refused with the key named. */
static void test_every_key(void)
{
	for (const struct config_key *k = config_keys; k->key; k++) {
		struct config def, bare, qual, file;
		char err[512] = "", *name = NULL, *path;

		config_defaults(&def);
		config_defaults(&bare);
		config_defaults(&qual);
		config_defaults(&file);
		if (asprintf(&name, "%s.%s", k->section, k->key) < 0)
			abort();
		CHECK(config_set_opt(&bare, k->key, k->example, err, sizeof(err)) == 0);
		CHECK(config_set_opt(&qual, name, k->example, err, sizeof(err)) == 0);
		path = ini_path(k->section, k->key, k->example);
		CHECK(config_load(&file, path, err, sizeof(err)) == 0);
		unlink(path);
		if (!same_config(&bare, &qual) || !same_config(&bare, &file) ||
		    same_config(&bare, &def))
			fprintf(stderr, "key %s: example %s\n", name, k->example);
		CHECK(same_config(&bare, &qual));
		CHECK(same_config(&bare, &file));
		CHECK(!same_config(&bare, &def));
		if (k->bad) {
			err[0] = '\0';
			CHECK(config_set_opt(&bare, k->key, k->bad, err, sizeof(err)) == -EINVAL);
			CHECK(strstr(err, k->key) != NULL);
		}
		free(name);
		config_free(&def);
		config_free(&bare);
		config_free(&qual);
		config_free(&file);
	}
}

static bool in_table(const char *section, const char *key)
{
	for (const struct config_key *k = config_keys; k->key; k++)
		if (!strcmp(k->section, section) && !strcmp(k->key, key))
			return true;
	return false;
}

/* Every key conf/sbxfs.ini documents is in the table, and the table has no other. */
static void test_table_matches_ini(const char *ini)
{
	FILE *f = fopen(ini, "r");
	char line[512], section[64] = "", key[64];
	size_t n = 0, in_ini = 0;

	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "[%63[a-z]]", section) == 1 || strcmp(section, "env") == 0)
			continue;
		if (sscanf(line, "%63[a-z_] =", key) == 1 && strchr(line, '=')) {
			in_ini++;
			if (!in_table(section, key))
				fprintf(stderr, "[%s] %s is not in config_keys\n", section, key);
			CHECK(in_table(section, key));
		}
	}
	fclose(f);
	for (const struct config_key *k = config_keys; k->key; k++)
		n++;
	CHECK(n == in_ini);
}

static void test_names(void)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	CHECK(config_set_opt(&cfg, "no_such_key", "1", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "no_such_key") != NULL);
	CHECK(config_set_opt(&cfg, "session.network", "host", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "network") != NULL);
	CHECK(config_set_opt(&cfg, "nosection.key", "1", err, sizeof(err)) == -EINVAL);
	CHECK(config_set_opt(&cfg, "env.CI", "true", err, sizeof(err)) == 0);
	CHECK(!strcmp(cfg.base_env[cfg.n_base_env - 1], "CI=true"));
	CHECK(config_set_opt(&cfg, "env.1BAD", "x", err, sizeof(err)) == -EINVAL);
	config_free(&cfg);
}

/* No two sections share a key today; if two do, the bare name must be refused. */
static void test_clashes_need_a_section(void)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	for (const struct config_key *k = config_keys; k->key; k++) {
		size_t owners = 0;

		for (const struct config_key *o = config_keys; o->key; o++)
			owners += !strcmp(o->key, k->key);
		CHECK((config_set_opt(&cfg, k->key, k->example, err, sizeof(err)) == 0) ==
		      (owners == 1));
	}
	config_free(&cfg);
}

static void test_split(void)
{
	char **l = config_opt_split("a=1,,b=x\\,y,c\\\\,");

	CHECK(l[0] && !strcmp(l[0], "a=1"));
	CHECK(l[1] && !strcmp(l[1], "b=x,y"));
	CHECK(l[2] && !strcmp(l[2], "c\\"));
	CHECK(l[3] == NULL);
	config_opt_free(l);
	l = config_opt_split("");
	CHECK(l[0] == NULL);
	config_opt_free(l);
}

static void test_mountopts(void)
{
	struct mountopts mo = {0};
	struct config cfg;
	char err[512];

	CHECK(mountopts_add(&mo,
			    "rw,allow_other,nosuid,dev,suid,defaults,nofail,_netdev,noauto,"
			    "x-systemd.automount,comment=x,fsname=my\\,ws,syslog",
			    err, sizeof(err)) == 0);
	CHECK(mountopts_add(&mo, "network=host,config=/etc/x.ini,memory_max=2G", err,
			    sizeof(err)) == 0);
	CHECK(mo.fuse && !strcmp(mo.fuse, "rw,allow_other,nosuid,dev,suid,fsname=my\\,ws"));
	CHECK(mo.syslog);
	CHECK(mo.config && !strcmp(mo.config, "/etc/x.ini"));
	CHECK(mo.n_settings == 2);
	config_defaults(&cfg);
	CHECK(mountopts_apply(&mo, &cfg, err, sizeof(err)) == 0);
	CHECK(cfg.net_mode == NET_HOST && cfg.memory_max == 2ull << 30);
	config_free(&cfg);
	CHECK(mountopts_add(&mo, "ro", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "ro") != NULL);
	CHECK(mountopts_add(&mo, "frobnicate", err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "frobnicate") != NULL);
	mountopts_free(&mo);
	CHECK(mountopts_add(&mo, "pids_max=64,bogus=1", err, sizeof(err)) == 0);
	config_defaults(&cfg);
	CHECK(mountopts_apply(&mo, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "bogus") != NULL);
	config_free(&cfg);
	mountopts_free(&mo);
}

int main(int argc, char **argv)
{
	test_every_key();
	test_names();
	test_clashes_need_a_section();
	test_split();
	test_mountopts();
	if (argc > 1)
		test_table_matches_ini(argv[1]);
	else
		CHECK(!"the path of conf/sbxfs.ini is an argument");
	return check_done();
}
