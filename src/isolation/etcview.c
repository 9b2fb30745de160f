/* The sandbox's /etc as one tree (etcview.h). Every path and link target is computed before the
 * fork, so that the child does nothing but system calls. */
#include "etcview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xmalloc.h"

enum kind { LINK, DIR_BIND, FILE_BIND, FILE_EMPTY };

struct entry {
	enum kind kind;
	char *host;   /* /etc/NAME */
	char *path;   /* STAGE/NAME */
	char *target; /* a link's */
};

struct etcview {
	char *stage;
	struct entry *v;
	size_t n;
};

static bool id_file(const char *name)
{
	return !strcmp(name, "passwd") || !strcmp(name, "group");
}

/* What entry name of /etc becomes; false for what is not shown (a socket, a device). */
static bool classify(struct etcview *ev, const char *name, bool own_ids, struct entry *e)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;

	e->host = xasprintf("/etc/%s", name);
	e->path = xasprintf("%s/%s", ev->stage, name);
	e->target = NULL;
	if (own_ids && id_file(name)) { /* add_empty's */
		free(e->host);
		free(e->path);
		return false;
	}
	if (lstat(e->host, &st) == 0 && S_ISLNK(st.st_mode) &&
	    (n = readlink(e->host, target, sizeof(target) - 1)) > 0) {
		target[n] = '\0';
		e->kind = LINK;
		e->target = xstrdup(target);
		return true;
	}
	if (lstat(e->host, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
		e->kind = S_ISDIR(st.st_mode) ? DIR_BIND : FILE_BIND;
		return true;
	}
	free(e->host);
	free(e->path);
	return false;
}

static void add_empty(struct etcview *ev, const char *name)
{
	for (size_t i = 0; i < ev->n; i++)
		if (ev->v[i].kind == FILE_EMPTY && !strcmp(ev->v[i].host + strlen("/etc/"), name))
			return;
	ev->v = xrealloc(ev->v, (ev->n + 1) * sizeof(*ev->v));
	ev->v[ev->n++] = (struct entry){.kind = FILE_EMPTY,
					.host = xasprintf("/etc/%s", name),
					.path = xasprintf("%s/%s", ev->stage, name)};
}

struct etcview *etcview_prepare(const char *stage, bool own_ids)
{
	struct etcview *ev;
	struct dirent *de;
	DIR *d = opendir("/etc");

	if (!d)
		return NULL;
	ev = xcalloc(1, sizeof(*ev));
	ev->stage = xstrdup(stage);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ev->v = xrealloc(ev->v, (ev->n + 1) * sizeof(*ev->v));
		if (classify(ev, de->d_name, own_ids, &ev->v[ev->n]))
			ev->n++;
	}
	closedir(d);
	/* Where the sandbox's own passwd and group go, whether the host has them or not. */
	for (int i = 0; own_ids && i < 2; i++)
		add_empty(ev, i == 0 ? "passwd" : "group");
	return ev;
}

static int make_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int make_entry(const struct entry *e)
{
	int rc;

	switch (e->kind) {
	case LINK:
		return symlink(e->target, e->path) < 0 ? -errno : 0;
	case FILE_EMPTY:
		return make_file(e->path);
	case DIR_BIND:
		rc = mkdir(e->path, 0755) < 0 ? -errno : 0;
		break;
	case FILE_BIND:
		rc = make_file(e->path);
		break;
	default:
		return -EINVAL;
	}
	if (rc < 0)
		return rc;
	/* An entry the host removed since the listing is left empty, as bwrap's -try did. */
	if (mount(e->host, e->path, NULL, MS_BIND | MS_REC, NULL) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int etcview_make(const struct etcview *ev)
{
	int rc;

	if (!ev)
		return -EINVAL;
	if (mount("tmpfs", ev->stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		return -errno;
	for (size_t i = 0; i < ev->n; i++)
		if ((rc = make_entry(&ev->v[i])) < 0)
			return rc;
	return 0;
}

void etcview_free(struct etcview *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->n; i++) {
		free(ev->v[i].host);
		free(ev->v[i].path);
		free(ev->v[i].target);
	}
	free(ev->v);
	free(ev->stage);
	free(ev);
}
