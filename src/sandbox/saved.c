/* What outlives the daemon (saved.h), kept in STATE_DIR/saved: the mount's root env (env), the
 * network policy (policy), the exposed ports (ports: "PORT NAME" lines), and each session's id,
 * env, cwd and timeout (sessions/ID/{env,cwd,timeout}). Each file holds what its control file
 * reads (a session's env: only the edits that take a new session's env to it), so that a start
 * writes it back through the same checks as a user's write.
 *
 * A change (changes_note, from the layer that made it) arms a short timer; the save runs on
 * the loop thread without the core lock, writes each file that differs from what is on disk
 * (a new file renamed over the old: a crash leaves one or the other), and removes the files of
 * sessions that are gone. Nothing is synced to the disk but at a clean stop: a host that loses
 * power may lose the last changes. Only the daemon writes the state dir; it reads back only
 * what it wrote there. */
#include "saved.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "expose.h"
#include "log.h"
#include "loop.h"
#include "net.h"
#include "refusals.h"
#include "rootenv.h"
#include "session.h"
#include "ticket.h"
#include "waiter.h"
#include "xmalloc.h"

#define SAVE_DELAY_MS  100
#define RESTORE_WAIT_S 10 /* for the shells of the sessions brought back to be where they were */
#define SAVED_FILE_MAX (8u << 20) /* above env_max and any policy: a bigger file is not ours */

static char *dir; /* STATE_DIR/saved */
static pthread_mutex_t save_lock = PTHREAD_MUTEX_INITIALIZER;
/* From the restore to the stop: a daemon that did not bring back the saved state (a start that
 * failed on the way) must not save over it. save_lock. */
static bool live;
static int pending;		/* a save is on its way (atomic) */
static struct loop_timer timer; /* core lock */

static char *ports_read(size_t *len)
{
	struct expose_info *v;
	size_t n = expose_list(&v), off = 0;
	char *text = xstrdup("");

	for (size_t i = 0; i < n; i++) {
		char *line = xasprintf("%u %s\n", v[i].port, v[i].name);

		text = xrealloc(text, off + strlen(line) + 1);
		strcpy(text + off, line);
		off += strlen(line);
		free(line);
	}
	expose_list_free(v, n);
	*len = off;
	return text;
}

static int ports_write(const char *text, size_t len, char *why, size_t whylen)
{
	char *copy = xstrndup(text, len), *save = NULL;
	int rc = 0;

	for (char *line = strtok_r(copy, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		char *name = strchr(line, ' ');
		struct expose_info info;
		unsigned port;

		if (!name || expose_parse_port(line, (size_t)(name - line), &port) < 0) {
			snprintf(why, whylen, "not a port line");
			rc = -EINVAL;
		} else if ((rc = expose_add(port)) < 0 && rc != -EEXIST) {
			snprintf(why, whylen, "port %u: %s", port, strerror(-rc));
		} else if ((rc = expose_get(port, 0, &info)) == 0) {
			rc = expose_set_name(port, info.serial, name + 1, strlen(name + 1), false);
			expose_info_clear(&info);
		}
	}
	free(copy);
	return rc;
}

static int rootenv_restore(const char *text, size_t len, char *why, size_t whylen)
{
	int rc = rootenv_write(text, len);

	if (rc < 0)
		snprintf(why, whylen, "%s", strerror(-rc));
	return rc;
}

/* The files of the whole mount, in the order a start brings them back: the policy before the
 * ports, so that nothing is reachable under a policy it was not. */
static const struct saved_file {
	const char *name;
	const char *path; /* as the mount shows it */
	char *(*read)(size_t *len);
	int (*write)(const char *text, size_t len, char *why, size_t whylen);
} files[] = {
    {.name = "policy",
     .path = "network/policy",
     .read = net_policy_read,
     .write = net_policy_write},
    {.name = "env", .path = "env", .read = rootenv_read, .write = rootenv_restore},
    {.name = "ports", .path = "ports", .read = ports_read, .write = ports_write},
};
#define NFILES (sizeof(files) / sizeof(files[0]))

/* What each file read at this start, before the restore: what the config made of it. */
static char *start_text[NFILES];

/* The whole of a file of ours below dir (NULL if there is none, or it is not a plain file of
 * a sane size). */
static char *read_at(int dfd, const char *name, size_t *len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= SAVED_FILE_MAX) {
		buf = xmalloc((size_t)st.st_size + 1);
		n = pread(fd, buf, (size_t)st.st_size, 0);
		if (n != st.st_size) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	close(fd);
	return buf;
}

/* Writes text as name in dfd unless it holds it already: a new file renamed over the old. */
static void write_at(int dfd, const char *name, const char *text, size_t len)
{
	char *tmp = xasprintf(".%s.new", name);
	size_t was_len = 0;
	char *was = read_at(dfd, name, &was_len);
	int fd;

	if (was && was_len == len && memcmp(was, text, len) == 0)
		goto out;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || close(fd) < 0 ||
	    renameat(dfd, tmp, dfd, name) < 0) {
		log_warn("saving %s/%s", dir, name);
		if (fd >= 0)
			unlinkat(dfd, tmp, 0);
	}
out:
	free(was);
	free(tmp);
}

static void remove_tree_at(int dfd, const char *name)
{
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	else if (sub >= 0)
		close(sub);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void save_session(int sdfd, struct session *s)
{
	static const char *const names[] = {"env", "cwd", "timeout"};
	const char *id = session_id(s);
	int fd;

	mkdirat(sdfd, id, 0700);
	fd = openat(sdfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	for (size_t i = 0; i < 3; i++) {
		size_t len;
		char *text = i == 0   ? session_env_delta(s, &len)
			     : i == 1 ? session_cwd(s, &len)
				      : xasprintf("%llu\n", (unsigned long long)session_timeout(s));

		if (i == 2)
			len = strlen(text);
		write_at(fd, names[i], text, len);
		free(text);
	}
	close(fd);
}

static bool listed(const struct session_info *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return true;
	return false;
}

static void save_sessions(int dfd)
{
	struct session_info *v = NULL;
	size_t n = session_list(&v);
	int sdfd;
	DIR *d;
	struct dirent *de;

	mkdirat(dfd, "sessions", 0700);
	sdfd = openat(dfd, "sessions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (size_t i = 0; sdfd >= 0 && i < n; i++) {
		struct session *s = session_find_serial(v[i].serial);

		if (s) {
			save_session(sdfd, s);
			session_unref(s);
		}
	}
	d = sdfd >= 0 ? fdopendir(sdfd) : NULL;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && !listed(v, n, de->d_name))
			remove_tree_at(dirfd(d), de->d_name);
	if (d)
		closedir(d);
	else if (sdfd >= 0)
		close(sdfd);
	free(v);
}

/* Everything, as it is now. save_lock held. */
static void save_all(void)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0) {
		log_warn("saving the sandbox's state in %s", dir);
		return;
	}
	for (size_t i = 0; i < NFILES; i++) {
		char *base = xasprintf("%s.config", files[i].name);
		size_t len;
		char *text = files[i].read(&len);

		write_at(dfd, files[i].name, text, len);
		write_at(dfd, base, start_text[i], strlen(start_text[i]));
		free(text);
		free(base);
	}
	save_sessions(dfd);
	close(dfd);
}

static void save_now(void *arg)
{
	(void)arg;
	__atomic_store_n(&pending, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&save_lock);
	if (live)
		save_all();
	pthread_mutex_unlock(&save_lock);
}

static void timer_fired(struct loop_timer *t)
{
	(void)t;
	loop_defer(save_now, NULL);
}

static void arm(void *arg)
{
	(void)arg;
	core_lock();
	if (!timer.armed)
		loop_timer_arm(&timer, SAVE_DELAY_MS);
	core_unlock();
}

/* changes_note's listener: any thread, any lock. */
static void note(void)
{
	if (__atomic_exchange_n(&pending, 1, __ATOMIC_SEQ_CST) == 0)
		loop_defer(arm, NULL);
}

void saved_init(const char *state_dir)
{
	dir = xasprintf("%s/saved", state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		log_warn("%s: the sandbox's state will not outlive this daemon", dir);
	timer.fn = timer_fired;
}

/* A blocking wait on a ticket, for the start alone (no request is served yet). */
struct blocking {
	struct waiter w; /* first: the wake callback gets it */
	pthread_mutex_t m;
	pthread_cond_t c;
	bool woken;
};

static void woke(struct waiter *w)
{
	struct blocking *b = (struct blocking *)w;

	pthread_mutex_lock(&b->m);
	b->woken = true;
	pthread_cond_signal(&b->c);
	pthread_mutex_unlock(&b->m);
}

/* Waits until t is done or the deadline (CLOCK_REALTIME) passed. */
static void wait_done(struct ticket *t, const struct timespec *deadline)
{
	struct blocking b = {
	    .w.wake = woke, .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER};
	int result, rc = 0;

	while (rc == 0 && ticket_wait(t, &result, &b.w) == -EAGAIN) {
		pthread_mutex_lock(&b.m);
		while (!b.woken && rc == 0)
			rc = pthread_cond_timedwait(&b.c, &b.m, deadline);
		b.woken = false;
		pthread_mutex_unlock(&b.m);
	}
	if (rc && !waiter_cancel(&b.w)) {
		/* woken meanwhile: the loop thread is done with it once woke() returned */
		pthread_mutex_lock(&b.m);
		while (!b.woken)
			pthread_cond_wait(&b.c, &b.m);
		pthread_mutex_unlock(&b.m);
	}
}

/* Brings back one session: its id, then its env, cwd and timeout, queued for its shell. The
 * ticket of its cd in *t (NULL for none). */
static void restore_session(int sdfd, const char *id, struct ticket **t)
{
	struct session *s = NULL;
	int fd, rc = 0;
	size_t len;
	char *text;

	if (!session_id_valid(id, strlen(id)) ||
	    (fd = openat(sdfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	if (strcmp(id, SESSION_DEFAULT) && (rc = session_create(id, &s, NULL)) < 0)
		log_warnx("session %s not brought back: %s", id, strerror(-rc));
	else if (!s)
		s = session_find(id);
	if (s && (text = read_at(fd, "env", &len))) {
		if ((rc = session_setenv(s, text, len)) < 0)
			refusal_note("sessions", -rc, "session %s: its saved env not brought back",
				     id);
		free(text);
	}
	if (s && (text = read_at(fd, "cwd", &len))) {
		if (session_chdir(s, text, len, t) < 0)
			*t = NULL;
		free(text);
	}
	if (s && (text = read_at(fd, "timeout", &len))) {
		session_set_timeout(s, text, len);
		free(text);
	}
	if (s) {
		session_mark_restored(s);
		session_unref(s);
	}
	close(fd);
}

/* Whether the config made what it made when name was saved (or nothing says otherwise). */
static bool config_unchanged(int dfd, const char *name, const char *now)
{
	size_t len;
	char *was = read_at(dfd, name, &len);
	bool same = !was || strcmp(was, now) == 0;

	free(was);
	return same;
}

void saved_restore(void)
{
	struct ticket **cds = NULL;
	struct timespec deadline;
	size_t len, ncds = 0;
	int dfd, sdfd;
	struct dirent *de;
	DIR *d;

	for (size_t i = 0; i < NFILES; i++)
		start_text[i] = files[i].read(&len);
	pthread_mutex_lock(&save_lock);
	live = true;
	pthread_mutex_unlock(&save_lock);
	changes_set(note);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	for (size_t i = 0; i < NFILES; i++) {
		char why[256] = "", *text, *base;
		size_t len;
		int rc;

		if (!(text = read_at(dfd, files[i].name, &len)))
			continue;
		base = xasprintf("%s.config", files[i].name);
		if (!config_unchanged(dfd, base, start_text[i])) {
			log_warnx(
			    "%s: the config's %s changed since it was saved: the config's holds",
			    dir, files[i].path);
			free(base);
			free(text);
			continue;
		}
		free(base);
		if ((rc = files[i].write(text, len, why, sizeof(why))) < 0) {
			log_warnx("%s: the saved %s not brought back: %s", dir, files[i].path, why);
			refusal_note(files[i].path, -rc, "the saved one not brought back: %s", why);
		}
		free(text);
	}
	sdfd = openat(dfd, "sessions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = sdfd >= 0 ? fdopendir(sdfd) : NULL;
	while (d && (de = readdir(d))) {
		struct ticket *t = NULL;

		if (de->d_name[0] == '.')
			continue;
		restore_session(dirfd(d), de->d_name, &t);
		if (t) {
			cds = xrealloc(cds, (ncds + 1) * sizeof(*cds));
			cds[ncds++] = t;
		}
	}
	if (d)
		closedir(d);
	else if (sdfd >= 0)
		close(sdfd);
	close(dfd);
	/* Before the mount is served, the sessions are where they were: their env reads so. */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += RESTORE_WAIT_S;
	for (size_t i = 0; i < ncds; i++) {
		wait_done(cds[i], &deadline);
		ticket_unref(cds[i]);
	}
	free(cds);
}

void saved_stop(void)
{
	int dfd;

	changes_set(NULL);
	pthread_mutex_lock(&save_lock);
	if (live) {
		save_all();
		if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			syncfs(dfd);
			close(dfd);
		}
	}
	live = false;
	pthread_mutex_unlock(&save_lock);
	core_lock();
	loop_timer_cancel(&timer);
	core_unlock();
	for (size_t i = 0; i < NFILES; i++) {
		free(start_text[i]);
		start_text[i] = NULL;
	}
	free(dir);
	dir = NULL;
}
