/* The snapshots' table (see snapshot.h): names, references, the directory each is kept in and
 * its meta file, loading them at start, deleting, the space budget, and the status text. */
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "names.h"
#include "loop.h"
#include "escape.h"
#include "journal.h"
#include "snapshot_priv.h"
#include "xmalloc.h"
#include "zstream.h"

#define META_NAME "meta"
#define TREE_NAME "tree"

pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
const struct config *snap_cfg;
int snap_dir_fd = -1;
char *snap_workspace;
uid_t snap_owner_uid;
gid_t snap_owner_gid;

static TAILQ_HEAD(, snapshot) table = TAILQ_HEAD_INITIALIZER(table);
static uint32_t next_serial = 1;
static unsigned next_clone = 1;

uint64_t snap_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool snapshot_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > SNAPSHOT_NAME_MAX || name[0] == '.' || !strcmp(name, "clone") ||
	    !strcmp(name, "ctl") || !strcmp(name, "import"))
		return false;
	return name_chars_valid(name, len);
}

void snap_tmp_name(const struct snapshot *s, char *buf, size_t len)
{
	snprintf(buf, len, ".new-%" PRIu32, s->serial);
}

static struct snapshot *find_locked(const char *name)
{
	struct snapshot *s;

	TAILQ_FOREACH(s, &table, link)
	if (!strcmp(s->name, name))
		return s;
	return NULL;
}

void snapshot_ref(struct snapshot *s)
{
	pthread_mutex_lock(&snap_lock);
	s->refs++;
	pthread_mutex_unlock(&snap_lock);
}

static void free_snapshot(struct snapshot *s)
{
	if (s->tree >= 0)
		close(s->tree);
	free(s);
}

void snapshot_unref(struct snapshot *s)
{
	bool last;

	pthread_mutex_lock(&snap_lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&snap_lock);
	if (last)
		free_snapshot(s);
}

struct snapshot *snapshot_find(const char *name)
{
	struct snapshot *s;

	pthread_mutex_lock(&snap_lock);
	if ((s = find_locked(name)))
		s->refs++;
	pthread_mutex_unlock(&snap_lock);
	return s;
}

struct snapshot *snapshot_find_serial(uint32_t serial)
{
	struct snapshot *s;

	pthread_mutex_lock(&snap_lock);
	TAILQ_FOREACH(s, &table, link)
	if (s->serial == serial) {
		s->refs++;
		break;
	}
	pthread_mutex_unlock(&snap_lock);
	return s;
}

uint32_t snapshot_serial(const struct snapshot *s)
{
	return s->serial;
}

bool snapshot_importing(const struct snapshot *s)
{
	bool yes;

	pthread_mutex_lock(&snap_lock);
	yes = s->state == SS_IMPORTING;
	pthread_mutex_unlock(&snap_lock);
	return yes;
}

struct timespec snapshot_time(const struct snapshot *s)
{
	return s->meta.time.tv_sec ? s->meta.time : s->started;
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const struct snapshot_info *)a)->name,
		      ((const struct snapshot_info *)b)->name);
}

size_t snapshot_list(struct snapshot_info **v)
{
	struct snapshot *s;
	size_t n = 0;

	pthread_mutex_lock(&snap_lock);
	TAILQ_FOREACH(s, &table, link)
	n++;
	*v = xcalloc(n + 1, sizeof(**v));
	n = 0;
	TAILQ_FOREACH(s, &table, link)
	{
		memcpy((*v)[n].name, s->name, sizeof(s->name));
		(*v)[n].importing = s->state == SS_IMPORTING;
		(*v)[n++].serial = s->serial;
	}
	pthread_mutex_unlock(&snap_lock);
	qsort(*v, n, sizeof(**v), cmp_info);
	return n;
}

struct snapshot *snap_add_locked(const char *name, enum snap_state state)
{
	struct snapshot *s = xcalloc(1, sizeof(*s));

	snprintf(s->name, sizeof(s->name), "%s", name);
	s->serial = next_serial++;
	s->refs = 1;
	s->state = state;
	s->tree = -1;
	clock_gettime(CLOCK_REALTIME, &s->started);
	TAILQ_INSERT_TAIL(&table, s, link);
	return s;
}

static unsigned count_locked(void)
{
	struct snapshot *s;
	unsigned n = 0;

	TAILQ_FOREACH(s, &table, link)
	n++;
	return n;
}

int snap_may_add_locked(const char *name)
{
	if (!snapshot_name_valid(name))
		return -EINVAL;
	if (find_locked(name))
		return -EEXIST;
	if (count_locked() >= snap_cfg->snap_max || next_serial > SNAPSHOT_SERIAL_MAX)
		return -ENOSPC;
	return 0;
}

/* What the snapshots hold, and the ones being made so far: entries, or bytes of copies. */
static uint64_t used_locked(bool entries)
{
	struct snapshot *s;
	uint64_t n = 0;

	TAILQ_FOREACH(s, &table, link)
	{
		if (s->state == SS_READY || s->state == SS_RESTORING)
			n += entries ? s->meta.files : s->meta.space;
		else if (s->progress)
			n += __atomic_load_n(entries ? &s->progress->files : &s->progress->copied,
					     __ATOMIC_RELAXED);
	}
	return n;
}

uint64_t snap_space_used_locked(void)
{
	return used_locked(false);
}

uint64_t snap_files_used_locked(void)
{
	return used_locked(true);
}

static int take_locked(const char *name, const char *root, struct ticket **done)
{
	int rc = snap_may_add_locked(name);
	struct snapshot *s;

	if (rc < 0)
		return rc;
	s = snap_add_locked(name, SS_TAKING);
	s->phase = "queued";
	s->done = ticket_new();
	*done = s->done;
	ticket_ref(*done);
	snap_work_queue(JOB_TAKE, s, root);
	return 0;
}

int snapshot_take(const char *name, struct ticket **done)
{
	return snapshot_take_dir(name, "", done);
}

int snapshot_take_dir(const char *name, const char *root, struct ticket **done)
{
	int rc;

	if (strlen(root) > SNAP_ROOT_MAX || strstr(root, "//") || root[0] == '/')
		return -EINVAL;
	pthread_mutex_lock(&snap_lock);
	rc = take_locked(name, root, done);
	pthread_mutex_unlock(&snap_lock);
	return rc;
}

int snapshot_clone(char *name, struct ticket **done)
{
	int rc;

	pthread_mutex_lock(&snap_lock);
	do {
		snprintf(name, SNAPSHOT_NAME_MAX + 1, "snap%u", next_clone++);
	} while (find_locked(name));
	rc = take_locked(name, "", done);
	pthread_mutex_unlock(&snap_lock);
	return rc;
}

void snap_journal(const char *kind, const char *name, int rc)
{
	struct jrec r;

	jrec_begin(&r, kind, NULL);
	jrec_str(&r, "name", name);
	if (rc < 0)
		jrec_str(&r, "error", strerrorname_np(-rc) ? strerrorname_np(-rc) : "?");
	jrec_commit(&r);
}

void snap_ticket_done(struct ticket **t, int rc)
{
	if (!*t)
		return;
	core_lock();
	ticket_done(*t, rc);
	core_unlock();
	ticket_unref(*t);
	*t = NULL;
}

void snap_drop_locked(struct snapshot *s, int rc)
{
	char tmp[32];

	if (!s->removed) {
		TAILQ_REMOVE(&table, s, link);
		s->removed = true;
		snap_ticket_done(&s->done, rc);
		snap_tmp_name(s, tmp, sizeof(tmp));
		snap_work_queue(JOB_DELETE, NULL, tmp);
		if (--s->refs == 0) /* the table's: a job or a reader holds another */
			free_snapshot(s);
	}
}

int snapshot_remove(const char *name)
{
	struct snapshot *s;
	char gone[48];
	int rc = 0;

	pthread_mutex_lock(&snap_lock);
	s = find_locked(name);
	if (!s)
		rc = -ENOENT;
	else if (s->state != SS_READY || s->pins)
		rc = -EBUSY;
	if (rc == 0) {
		/* Renamed first, so that the name can be taken again at once. */
		snprintf(gone, sizeof(gone), ".gone-%" PRIu32, s->serial);
		if (renameat(snap_dir_fd, s->name, snap_dir_fd, gone) < 0)
			rc = -errno;
	}
	if (rc == 0) {
		TAILQ_REMOVE(&table, s, link);
		s->removed = true;
		snap_work_queue(JOB_DELETE, NULL, gone);
	}
	pthread_mutex_unlock(&snap_lock);
	if (rc == 0) {
		snap_journal("snapshot.remove", name, 0);
		snapshot_unref(s);
	}
	return rc;
}

void snapshot_cancel(struct snapshot *s)
{
	pthread_mutex_lock(&snap_lock);
	if ((s->state == SS_TAKING) && !s->removed) {
		snap_work_cancel_take(s);
		snap_drop_locked(s, -ECANCELED);
	}
	pthread_mutex_unlock(&snap_lock);
}

int snapshot_tree(struct snapshot *s)
{
	int fd;

	pthread_mutex_lock(&snap_lock);
	fd = s->tree >= 0 ? s->tree : -EAGAIN;
	pthread_mutex_unlock(&snap_lock);
	return fd;
}

int snapshot_pin(struct snapshot *s)
{
	int fd;

	pthread_mutex_lock(&snap_lock);
	if (s->removed)
		fd = -ENOENT;
	else if (s->tree < 0)
		fd = -EAGAIN;
	else if ((fd = openat(s->tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		fd = -errno;
	else
		s->pins++;
	pthread_mutex_unlock(&snap_lock);
	return fd;
}

void snapshot_unpin(struct snapshot *s, int fd)
{
	close(fd);
	pthread_mutex_lock(&snap_lock);
	s->pins--;
	pthread_mutex_unlock(&snap_lock);
}

int snap_meta_write(int dir, const struct snap_meta *m)
{
	/* The root in the shown form (escape.h): any byte but NUL, on one line. */
	char *root = esc_encode(m->root, strlen(m->root), &(size_t){0});
	char *text = xasprintf(
	    "version 1\ntime %lld.%09ld\ntook_ms %" PRIu64 "\nfrozen_ms %" PRIu64 "\nfiles %" PRIu64
	    "\nbytes %" PRIu64 "\nspace %" PRIu64 "\nworkspace %" PRIu64 ":%" PRIu64
	    "\nfrozen %d\nreflinked %d\nroot %s\n",
	    (long long)m->time.tv_sec, m->time.tv_nsec, m->took_ms, m->frozen_ms, m->files,
	    m->bytes, m->space, m->ws_dev, m->ws_ino, m->frozen, m->reflinked, root);
	int fd = openat(dir, META_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc = 0;
	size_t len = strlen(text);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(text);
	free(root);
	return rc;
}

/* The root line of a meta file (none in one before it: the whole workspace). */
static int read_root(const char *buf, struct snap_meta *m)
{
	const char *line = strstr(buf, "\nroot ");
	size_t len, n;
	char *root;

	if (!line)
		return 0;
	line += 6;
	len = strcspn(line, "\n");
	if (esc_decode(line, len, &root, &n) < 0)
		return -EINVAL;
	if (n > SNAP_ROOT_MAX) {
		free(root);
		return -EINVAL;
	}
	memcpy(m->root, root, n + 1);
	free(root);
	return 0;
}

int snap_meta_read(int dir, struct snap_meta *m)
{
	int fd = openat(dir, META_NAME, O_RDONLY | O_CLOEXEC), frozen = 0, refl = 0, n;
	char buf[1024 + 4 * SNAP_ROOT_MAX];
	long long sec;
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EINVAL;
	buf[len] = '\0';
	*m = (struct snap_meta){0};
	n = sscanf(buf,
		   "version 1\ntime %lld.%ld\ntook_ms %" SCNu64 "\nfrozen_ms %" SCNu64
		   "\nfiles %" SCNu64 "\nbytes %" SCNu64 "\nspace %" SCNu64 "\nworkspace %" SCNu64
		   ":%" SCNu64 "\nfrozen %d\nreflinked %d",
		   &sec, &m->time.tv_nsec, &m->took_ms, &m->frozen_ms, &m->files, &m->bytes,
		   &m->space, &m->ws_dev, &m->ws_ino, &frozen, &refl);
	m->time.tv_sec = (time_t)sec;
	m->frozen = frozen;
	m->reflinked = refl;
	return n == 11 ? read_root(buf, m) : -EINVAL;
}

int snap_publish(struct snapshot *s, const char *tmp)
{
	int dir, tree, rc = 0;

	/* Under the lock: a cancel that dropped it meanwhile must not find it published. */
	pthread_mutex_lock(&snap_lock);
	if (s->removed)
		rc = -ECANCELED;
	else if (renameat2(snap_dir_fd, tmp, snap_dir_fd, s->name, RENAME_NOREPLACE) < 0)
		rc = -errno;
	pthread_mutex_unlock(&snap_lock);
	if (rc < 0)
		return rc;
	dir = openat(snap_dir_fd, s->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	tree =
	    dir >= 0 ? openat(dir, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (tree < 0)
		rc = -errno;
	if (dir >= 0)
		close(dir);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&snap_lock);
	s->tree = tree;
	s->state = SS_READY;
	s->progress = NULL;
	s->phase = NULL;
	pthread_mutex_unlock(&snap_lock);
	return 0;
}

/* A snapshot a daemon before this one made: its name, its meta, its tree. */
static void load_one(const char *name)
{
	int dir = openat(snap_dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct snapshot *s;
	struct snap_meta m;
	int tree;

	if (dir < 0)
		return;
	tree = openat(dir, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0 || snap_meta_read(dir, &m) < 0 || snap_may_add_locked(name) < 0) {
		log_warnx("snapshots: %s is no snapshot of this version, or too many: left as it "
			  "is",
			  name);
		if (tree >= 0)
			close(tree);
		close(dir);
		return;
	}
	close(dir);
	s = snap_add_locked(name, SS_READY);
	s->tree = tree;
	s->meta = m;
}

/* What is in dir: snapshots, and what work cut short left (removed on the worker). */
static void load_all(void)
{
	int fd = openat(snap_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	pthread_mutex_lock(&snap_lock);
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_name[0] == '.')
			snap_work_queue(JOB_DELETE, NULL, de->d_name);
		else
			load_one(de->d_name);
	}
	pthread_mutex_unlock(&snap_lock);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
}

static int mkdir_p(const char *path)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p && rc == 0; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			rc = -errno;
		*p = '/';
	}
	if (rc == 0 && mkdir(copy, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	free(copy);
	return rc;
}

/* Whether one of the two directories is in the other (a snapshot would hold itself, or a
 * restore overwrite the snapshots). */
static bool nested(const char *a, const char *b)
{
	char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
	bool yes = false;

	if (ra && rb) {
		size_t la = strlen(ra), lb = strlen(rb), n = la < lb ? la : lb;

		yes = !strncmp(ra, rb, n) && (ra[n] == '/' || rb[n] == '/' || la == lb);
	}
	free(ra);
	free(rb);
	return yes;
}

int snapshots_init(const struct config *cfg, const char *dir, const char *workspace,
		   uid_t owner_uid, gid_t owner_gid, char *err, size_t errlen)
{
	int rc;

	snap_cfg = cfg;
	snap_owner_uid = owner_uid;
	snap_owner_gid = owner_gid;
	if (cfg->snap_zstd && !snap_zstd_built()) {
		snprintf(err, errlen,
			 "[snapshots] compress = zstd, but this sbxfs was built "
			 "without libzstd");
		return -EINVAL;
	}
	if ((rc = mkdir_p(dir)) < 0 ||
	    (snap_dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = rc < 0 ? rc : -errno;
		snprintf(err, errlen, "snapshots dir %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (nested(dir, workspace)) {
		snprintf(err, errlen, "[snapshots] dir %s and the workspace %s are in one another",
			 dir, workspace);
		return -EINVAL;
	}
	snap_workspace = xstrdup(workspace);
	if ((rc = snap_work_start()) < 0) {
		snprintf(err, errlen, "snapshots worker: %s", strerror(-rc));
		return rc;
	}
	load_all();
	return 0;
}

void snapshots_shutdown(void)
{
	struct snapshot *s;

	snap_work_stop();
	pthread_mutex_lock(&snap_lock);
	while ((s = TAILQ_FIRST(&table))) {
		TAILQ_REMOVE(&table, s, link);
		s->removed = true;
		snap_ticket_done(&s->done, -ECANCELED);
		if (--s->refs == 0)
			free_snapshot(s);
	}
	pthread_mutex_unlock(&snap_lock);
	if (snap_dir_fd >= 0)
		close(snap_dir_fd);
	snap_dir_fd = -1;
	free(snap_workspace);
	snap_workspace = NULL;
}

const char *snapshot_name(const struct snapshot *s)
{
	return s->name;
}
