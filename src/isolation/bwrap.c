/* Building bwrap's argv (see bwrap.h): read-only system directories, the host's top-level
 * symlinks (/bin -> usr/bin ...) recreated, sized tmpfs for /tmp and /dev/shm, a private /proc
 * and /dev, the workspace read-write, new namespaces, and the root remounted read-only. */
#include "bwrap.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xmalloc.h"

struct argv_builder {
	char **v;
	size_t n;
};

static void add(struct argv_builder *b, const char *arg)
{
	b->v = xrealloc(b->v, (b->n + 2) * sizeof(char *));
	b->v[b->n++] = xstrdup(arg);
	b->v[b->n] = NULL;
}

static void add2(struct argv_builder *b, const char *a, const char *c)
{
	add(b, a);
	add(b, c);
}

static void add3(struct argv_builder *b, const char *a, const char *c, const char *d)
{
	add(b, a);
	add(b, c);
	add(b, d);
}

static void add_num(struct argv_builder *b, const char *opt, unsigned long long v)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", v);
	add2(b, opt, num);
}

/* /usr and /etc read-only; /bin, /lib... as the host has them (links into /usr or dirs). */
static void add_system_dirs(struct argv_builder *b)
{
	static const char *const names[] = {"/usr", "/etc", "/bin", "/sbin", "/lib",
					    "/lib32", "/lib64", "/libx32"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (lstat(names[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(names[i], target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			add3(b, "--symlink", target, names[i]);
		} else if (S_ISDIR(st.st_mode)) {
			add3(b, "--ro-bind", names[i], names[i]);
		}
	}
}

static void add_namespaces(struct argv_builder *b, const struct bwrap_spec *sp)
{
	add(b, "--unshare-user");
	add_num(b, "--uid", sp->uid);
	add_num(b, "--gid", sp->gid);
	add(b, "--disable-userns");
	add(b, "--unshare-pid");
	add(b, "--unshare-ipc");
	add(b, "--unshare-uts");
	add(b, "--unshare-cgroup-try");
	if (!sp->keep_net)
		add(b, "--unshare-net");
	add2(b, "--hostname", "sbxfs");
}

char **bwrap_argv(const struct bwrap_spec *sp)
{
	struct argv_builder b = {0};

	add(&b, sp->bwrap);
	add_namespaces(&b, sp);
	add(&b, "--die-with-parent");
	add(&b, "--new-session");
	add_system_dirs(&b);
	if (sp->etc_ids) {
		add_num(&b, "--ro-bind-data", BWRAP_FD_PASSWD);
		add(&b, "/etc/passwd");
		add_num(&b, "--ro-bind-data", BWRAP_FD_GROUP);
		add(&b, "/etc/group");
	}
	add2(&b, "--proc", "/proc");
	add2(&b, "--dev", "/dev");
	add_num(&b, "--size", sp->tmp_size);
	add2(&b, "--tmpfs", "/tmp");
	add_num(&b, "--size", sp->shm_size);
	add2(&b, "--tmpfs", "/dev/shm");
	add3(&b, "--bind", sp->workspace, SANDBOX_WORKSPACE);
	add3(&b, "--ro-bind", sp->launcher, SANDBOX_LAUNCHER);
	add2(&b, "--remount-ro", "/");
	add2(&b, "--chdir", SANDBOX_WORKSPACE);
	add_num(&b, "--seccomp", BWRAP_FD_SECCOMP);
	add(&b, "--");
	add(&b, SANDBOX_LAUNCHER);
	return b.v;
}

void bwrap_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}
