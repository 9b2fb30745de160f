/* Building bwrap's argv (see bwrap.h): read-only system directories, the host's top-level
 * symlinks (/bin -> usr/bin ...) recreated, /etc as a tmpfs of the host's entries bound one by
 * one (or that tmpfs made before, etcview.h), sized tmpfs for /tmp and /dev/shm, a private /proc
 * and /dev, the workspace read-write, new namespaces, and the root remounted read-only. */
#include "bwrap.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* An entry of a host directory as it is: a link recreated, a file or directory bound. */
static void add_entry(struct argv_builder *b, const char *path)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (lstat(path, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			return;
		target[n] = '\0';
		add3(b, "--symlink", target, path);
	} else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		add3(b, "--ro-bind-try", path, path);
	}
}

/* /usr read-only; /bin, /lib... as the host has them (links into /usr or dirs). */
static void add_system_dirs(struct argv_builder *b)
{
	static const char *const names[] = {"/usr",   "/bin",	"/sbin",  "/lib",
					    "/lib32", "/lib64", "/libx32"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		add_entry(b, names[i]);
}

static int by_name(const struct dirent **a, const struct dirent **c)
{
	return strcmp((*a)->d_name, (*c)->d_name);
}

static bool is_etc_id_file(const char *name)
{
	return strcmp(name, "passwd") == 0 || strcmp(name, "group") == 0;
}

static void add_ids(struct argv_builder *b, const struct bwrap_spec *sp)
{
	if (!sp->etc_ids)
		return;
	add_num(b, "--ro-bind-data", BWRAP_FD_PASSWD);
	add(b, "/etc/passwd");
	add_num(b, "--ro-bind-data", BWRAP_FD_GROUP);
	add(b, "/etc/group");
}

/* /etc is a tmpfs of the sandbox's own, with each host entry bound on a name of that tmpfs: a
 * mount over the host's own /etc/passwd would be detached when the host renames a new passwd
 * over it (useradd), and the sandbox's identity files with it. So a host file shows as it was
 * at the start when the host replaces it by a rename, and as it is when edited in place;
 * directories show live; an entry the host adds later does not show. */
static void add_etc(struct argv_builder *b, const struct bwrap_spec *sp)
{
	struct dirent **list = NULL;
	int n;

	if (sp->etc_stage) { /* the same, made before bwrap as one tree (etcview.h) */
		add3(b, "--ro-bind", sp->etc_stage, "/etc");
		add_ids(b, sp);
		return;
	}
	n = scandir("/etc", &list, NULL, by_name);
	add_num(b, "--size", 1 << 20);
	add2(b, "--tmpfs", "/etc");
	for (int i = 0; i < n; i++) {
		const char *name = list[i]->d_name;

		if (strcmp(name, ".") && strcmp(name, "..") &&
		    !(sp->etc_ids && is_etc_id_file(name))) {
			char *path = xasprintf("/etc/%s", name);

			add_entry(b, path);
			free(path);
		}
		free(list[i]);
	}
	free(list);
	add_ids(b, sp);
	add2(b, "--remount-ro", "/etc");
}

int bwrap_etc_fd(const struct bwrap_spec *sp)
{
	struct argv_builder b = {0};
	int fd = memfd_create("sbxfs-etc-args", MFD_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	add_etc(&b, sp);
	for (size_t i = 0; i < b.n && rc == 0; i++) {
		size_t len = strlen(b.v[i]) + 1; /* with its NUL: bwrap's separator */

		if (write(fd, b.v[i], len) != (ssize_t)len)
			rc = -errno;
	}
	bwrap_argv_free(b.v);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
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
	add_num(&b, "--args", BWRAP_FD_ETC); /* the host's names stay out of ps's view */
	add2(&b, "--proc", "/proc");
	add2(&b, "--dev", "/dev");
	add_num(&b, "--size", sp->tmp_size);
	add2(&b, "--tmpfs", "/tmp");
	add_num(&b, "--size", sp->shm_size);
	add2(&b, "--tmpfs", "/dev/shm");
	add3(&b, "--bind", sp->workspace, SANDBOX_WORKSPACE);
	add3(&b, "--bind", sp->home, SANDBOX_HOME);
	add3(&b, "--ro-bind", sp->launcher, SANDBOX_LAUNCHER);
	add2(&b, "--remount-ro", "/");
	add2(&b, "--chdir", SANDBOX_WORKSPACE);
	add_num(&b, "--seccomp", BWRAP_FD_SECCOMP);
	add(&b, "--");
	add(&b, SANDBOX_LAUNCHER);
	if (sp->filter_fd > 0) {
		char arg[32];

		snprintf(arg, sizeof(arg), "--filter-fd=%d", sp->filter_fd);
		add(&b, arg);
	}
	return b.v;
}

void bwrap_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}
