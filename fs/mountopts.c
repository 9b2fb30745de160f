/* The command line's `-o` lists, as sshfs and mount(8) give them: FUSE's mount options go to
 * libfuse, those mount(8) and fstab keep for themselves are dropped, sbxfs's own (syslog,
 * config=PATH) are noted, and the rest are config keys (see src/core/config_opt.c). */
#include "mountopts.h"

#include <errno.h>
#include <fuse_opt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_opt.h"
#include "log.h"
#include "xmalloc.h"

/* Mount flags and FUSE mount options libfuse takes; "ro" is not one: sbxfs is driven by
 * writes to its control files. */
static const char *const fuse_flags[] = {
    "allow_other",
    "auto_unmount",
    "default_permissions",
    "rw",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "exec",
    "noexec",
    "sync",
    "async",
    "dirsync",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "lazytime",
    "nolazytime",
    NULL,
};
static const char *const fuse_valued[] = {
    "fsname", "max_read", "context", "fscontext", "defcontext", "rootcontext", NULL,
};
/* fstab's and mount(8)'s own, which mount.fuse3 passes on (or some versions do). */
static const char *const mount_only[] = {
    "defaults", "auto", "noauto", "user", "users", "nouser", "nofail", "_netdev", NULL,
};

static bool in_list(const char *const *list, const char *name, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && !strncmp(*list, name, len))
			return true;
	return false;
}

static void add_setting(struct mountopts *mo, const char *item)
{
	mo->settings = xrealloc(mo->settings, (mo->n_settings + 2) * sizeof(char *));
	mo->settings[mo->n_settings++] = xstrdup(item);
	mo->settings[mo->n_settings] = NULL;
}

static int add_item(struct mountopts *mo, const char *item, char *err, size_t errlen)
{
	const char *eq = strchr(item, '=');
	size_t nlen = eq ? (size_t)(eq - item) : strlen(item);

	if (!strncmp(item, "x-", 2) || !strncmp(item, "comment=", 8))
		return 0;
	if (!eq && in_list(mount_only, item, nlen))
		return 0;
	if ((!eq && in_list(fuse_flags, item, nlen)) || (eq && in_list(fuse_valued, item, nlen))) {
		if (fuse_opt_add_opt_escaped(&mo->fuse, item) < 0)
			fatalx("out of memory");
		return 0;
	}
	if (!strcmp(item, "syslog")) {
		mo->syslog = true;
		return 0;
	}
	if (!strcmp(item, "ro")) {
		snprintf(err, errlen, "-o ro: sbxfs is driven by writes to its control files");
		return -EINVAL;
	}
	if (eq && nlen == 6 && !strncmp(item, "config", 6)) {
		free(mo->config);
		mo->config = xstrdup(eq + 1);
		return 0;
	}
	if (!eq) {
		snprintf(err, errlen, "unknown option '%s' (a config key takes a value: %s=VALUE)",
			 item, item);
		return -EINVAL;
	}
	add_setting(mo, item);
	return 0;
}

int mountopts_add(struct mountopts *mo, const char *opts, char *err, size_t errlen)
{
	char **items = config_opt_split(opts);
	int rc = 0;

	for (size_t i = 0; items[i] && rc == 0; i++)
		rc = add_item(mo, items[i], err, errlen);
	config_opt_free(items);
	return rc;
}

int mountopts_apply(const struct mountopts *mo, struct config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < mo->n_settings; i++) {
		const char *item = mo->settings[i], *eq = strchr(item, '=');
		char *name = xstrndup(item, (size_t)(eq - item));
		int rc = config_set_opt(cfg, name, eq + 1, err, errlen);

		free(name);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void mountopts_free(struct mountopts *mo)
{
	free(mo->fuse);
	free(mo->config);
	config_opt_free(mo->settings);
	memset(mo, 0, sizeof(*mo));
}
