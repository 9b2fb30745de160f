/* The fleet's sandboxes (fleet.h): their table, their files, and what the FUSE side asks of
 * them. A sandbox ID is STATE_DIR/sandboxes/ID: workspace/, state/ (its daemon's state dir)
 * and sbxfs.ini (its config, a copy of the fleet's sandbox_config); its daemon is
 * daemons.c's. */
#include "fleet_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "names.h"
#include "xmalloc.h"

struct fleet_config fleet_cfg;
pthread_mutex_t fleet_lock = PTHREAD_MUTEX_INITIALIZER;
struct box_list fleet_boxes = TAILQ_HEAD_INITIALIZER(fleet_boxes);
unsigned fleet_nboxes;
static uint64_t last_serial;
static char refusal[512]; /* the last create refused, and why */

void fleet_refused(const char *id, const char *what, const char *why)
{
	pthread_mutex_lock(&fleet_lock);
	snprintf(refusal, sizeof(refusal), "%s %s: %s", id, what, why);
	pthread_mutex_unlock(&fleet_lock);
	log_warnx("sandbox %s: %s: %s", id, what, why);
}

bool fleet_id_valid(const char *id, size_t len)
{
	if (len == 0 || len > FLEET_ID_MAX || id[0] == '.')
		return false;
	return name_chars_valid(id, len);
}

const char *fleet_state_name(enum fleet_state st)
{
	static const char *const names[] = {
	    [FLEET_STARTING] = "starting",
	    [FLEET_RUNNING] = "running",
	    [FLEET_STOPPING] = "stopping",
	    [FLEET_FAILED] = "failed",
	    [FLEET_SLEEPING] = "sleeping",
	    [FLEET_WAKING] = "waking",
	};

	return names[st];
}

/* lock held */
static struct box *find(const char *id)
{
	struct box *b;

	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (!strcmp(b->info.id, id))
		return b;
	return NULL;
}

/* lock held */
static struct box *add_box(const char *id)
{
	struct box *b = xcalloc(1, sizeof(*b));

	snprintf(b->info.id, sizeof(b->info.id), "%s", id);
	b->info.serial = ++last_serial;
	b->pidfd = -1;
	TAILQ_INSERT_TAIL(&fleet_boxes, b, link);
	fleet_nboxes++;
	return b;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* Its files: workspace/, state/ and the config it starts with. */
static int make_files(const char *id)
{
	char *dir = box_path(id, ""), *ws = box_path(id, "workspace"), *st = box_path(id, "state"),
	     *ini = box_path(id, "sbxfs.ini"), *text = NULL;
	size_t len = 0;
	int rc = 0;

	if (fleet_cfg.sandbox_config[0]) {
		FILE *f = fopen(fleet_cfg.sandbox_config, "re");

		if (!f || getdelim(&text, &len, '\0', f) < 0)
			rc = -errno;
		if (f)
			fclose(f);
	}
	if (rc == 0 && mkdir(dir, 0700) < 0)
		rc = -errno;
	else if (rc == 0 && (mkdir(ws, 0755) < 0 || mkdir(st, 0700) < 0))
		rc = -errno;
	else if (rc == 0)
		rc = write_file(ini, text ? text : "");
	free(text);
	free(dir);
	free(ws);
	free(st);
	free(ini);
	return rc;
}

int fleet_create(const char *id, char *why, size_t whylen)
{
	uint64_t memory, disk;
	struct box *b;
	int rc;

	if (!fleet_id_valid(id, strlen(id)))
		return -EINVAL;
	if ((rc = bounds_cost(fleet_cfg.sandbox_config, &memory, &disk, why, whylen)) < 0) {
		pthread_mutex_lock(&fleet_lock);
		snprintf(refusal, sizeof(refusal), "%s not created: %s", id, why);
		pthread_mutex_unlock(&fleet_lock);
		return rc;
	}
	pthread_mutex_lock(&fleet_lock);
	if (find(id)) {
		pthread_mutex_unlock(&fleet_lock);
		return -EEXIST;
	}
	if (!bounds_fit(memory, disk, true, why, whylen)) {
		snprintf(refusal, sizeof(refusal), "%s not created: %s", id, why);
		pthread_mutex_unlock(&fleet_lock);
		return -ENOSPC;
	}
	if ((rc = make_files(id)) < 0) {
		snprintf(why, whylen, "its files in %s/sandboxes: %s", fleet_cfg.state_dir,
			 strerror(-rc));
		pthread_mutex_unlock(&fleet_lock);
		return rc == -EEXIST ? -EIO : rc; /* not in the table, yet its files are there */
	}
	b = add_box(id);
	b->memory = memory;
	b->disk = disk;
	box_start(b);
	pthread_mutex_unlock(&fleet_lock);
	log_info("sandbox %s created", id);
	return 0;
}

int fleet_clone(char *id, size_t idlen, char *why, size_t whylen)
{
	static unsigned counter;
	int rc;

	do {
		pthread_mutex_lock(&fleet_lock);
		snprintf(id, idlen, "s%u", ++counter);
		pthread_mutex_unlock(&fleet_lock);
	} while ((rc = fleet_create(id, why, whylen)) == -EEXIST || rc == -EIO);
	return rc;
}

int fleet_destroy(const char *id, void (*done)(void *arg, int result), void *arg)
{
	struct box *b;

	pthread_mutex_lock(&fleet_lock);
	b = find(id);
	if (!b || b->info.state == FLEET_STOPPING) {
		pthread_mutex_unlock(&fleet_lock);
		return b ? -EBUSY : -ENOENT;
	}
	b->done = done;
	b->done_arg = arg;
	if (b->info.state == FLEET_STARTING) { /* its start's thread goes on with the destroy */
		b->destroy_wanted = true;
	} else {
		b->info.state = FLEET_STOPPING;
		box_destroy(b);
	}
	pthread_mutex_unlock(&fleet_lock);
	return 0;
}

/* A sleeping sandbox's daemon starts, its config read again (it may have changed), unless
 * that is past a bound. lock held. */
static int wake(struct box *b)
{
	char *ini = box_path(b->info.id, "sbxfs.ini"), why[256];
	int rc = bounds_cost(ini, &b->memory, &b->disk, why, sizeof(why));

	free(ini);
	if (rc == 0 && !bounds_fit(b->memory, b->disk, false, why, sizeof(why)))
		rc = -ENOSPC;
	if (rc < 0) {
		snprintf(refusal, sizeof(refusal), "%s not woken: %s", b->info.id, why);
		log_warnx("sandbox %s: not woken: %s", b->info.id, why);
		return rc;
	}
	log_info("sandbox %s: waking", b->info.id);
	box_start(b);
	b->info.state = FLEET_WAKING;
	return 0;
}

int fleet_wake(uint64_t serial)
{
	struct box *b;
	int rc = 0;

	pthread_mutex_lock(&fleet_lock);
	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (b->info.serial == serial) {
		if (b->info.state == FLEET_SLEEPING)
			rc = wake(b);
		if (rc == 0)
			rc = b->info.state == FLEET_STARTING || b->info.state == FLEET_WAKING;
		break;
	}
	pthread_mutex_unlock(&fleet_lock);
	return rc;
}

/* The path of the keep_alive file of the sandbox of serial, or NULL (-ENOENT). */
static char *keep_alive_path(uint64_t serial)
{
	struct fleet_info info;

	return fleet_get_serial(serial, &info) == 0 ? box_path(info.id, "state/keep_alive") : NULL;
}

int fleet_keep_alive(uint64_t serial)
{
	char *path = keep_alive_path(serial);
	int rc;

	if (!path)
		return -ENOENT;
	rc = access(path, F_OK) == 0 ? 1 : errno == ENOENT ? 0 : -errno;
	free(path);
	return rc;
}

int fleet_set_keep_alive(uint64_t serial, bool on)
{
	char *path = keep_alive_path(serial);
	int rc = 0, fd;

	if (!path)
		return -ENOENT;
	if (on && (fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0)
		close(fd);
	else if (on || (unlink(path) < 0 && errno != ENOENT))
		rc = -errno;
	free(path);
	return rc;
}

static int get(bool (*match)(const struct box *, const void *), const void *key,
	       struct fleet_info *out)
{
	struct box *b;
	int rc = -ENOENT;

	pthread_mutex_lock(&fleet_lock);
	TAILQ_FOREACH(b, &fleet_boxes, link)
	if (match(b, key)) {
		*out = b->info;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&fleet_lock);
	return rc;
}

static bool by_id(const struct box *b, const void *key)
{
	return !strcmp(b->info.id, key);
}

static bool by_serial(const struct box *b, const void *key)
{
	return b->info.serial == *(const uint64_t *)key;
}

int fleet_get(const char *id, struct fleet_info *out)
{
	return get(by_id, id, out);
}

int fleet_get_serial(uint64_t serial, struct fleet_info *out)
{
	return get(by_serial, &serial, out);
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fleet_info *)a)->id, ((const struct fleet_info *)b)->id);
}

size_t fleet_list(struct fleet_info **v)
{
	struct box *b;
	size_t n = 0;

	pthread_mutex_lock(&fleet_lock);
	*v = xcalloc(fleet_nboxes + 1, sizeof(**v));
	TAILQ_FOREACH(b, &fleet_boxes, link)
	(*v)[n++] = b->info;
	pthread_mutex_unlock(&fleet_lock);
	qsort(*v, n, sizeof(**v), info_cmp);
	return n;
}

char *fleet_status(size_t *len)
{
	unsigned by_state[FLEET_NSTATES] = {0};
	struct box *b;
	char *text, *bounds;

	pthread_mutex_lock(&fleet_lock);
	TAILQ_FOREACH(b, &fleet_boxes, link)
	by_state[b->info.state]++;
	bounds = bounds_status();
	text = xasprintf("sandboxes %u\nmax %u\n%srunning %u\nstarting %u\nstopping %u\n"
			 "failed %u\nsleeping %u\nwaking %u\nrefused %s\n",
			 fleet_nboxes, fleet_cfg.max, bounds, by_state[FLEET_RUNNING],
			 by_state[FLEET_STARTING], by_state[FLEET_STOPPING], by_state[FLEET_FAILED],
			 by_state[FLEET_SLEEPING], by_state[FLEET_WAKING],
			 refusal[0] ? refusal : "-");
	free(bounds);
	pthread_mutex_unlock(&fleet_lock);
	*len = strlen(text);
	return text;
}

/* Calls fn with the id of each sandbox there is. */
static void scan(void (*fn)(const char *id))
{
	char *dir = xasprintf("%s/sandboxes", fleet_cfg.state_dir);
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (fleet_id_valid(de->d_name, strlen(de->d_name)) && de->d_type == DT_DIR)
			fn(de->d_name);
	if (d)
		closedir(d);
	free(dir);
}

/* A sandbox found at the start: one that slept stays asleep until its next use. */
static void start_found(const char *id)
{
	char *slept = box_path(id, "state/slept"), *ini = box_path(id, "sbxfs.ini"), why[256];
	struct box *b;

	pthread_mutex_lock(&fleet_lock);
	b = add_box(id);
	/* One that does not load fails at its start, with the reason. */
	bounds_cost(ini, &b->memory, &b->disk, why, sizeof(why));
	if (access(slept, F_OK) == 0)
		b->info.state = FLEET_SLEEPING;
	else
		box_start(b);
	pthread_mutex_unlock(&fleet_lock);
	free(slept);
	free(ini);
}

void fleet_start(void)
{
	scan(start_found);
}

int fleet_init(const struct fleet_config *c, void (*changed)(uint64_t serial), char *err,
	       size_t errlen)
{
	char *dir;
	int rc;

	fleet_cfg = *c;
	dir = xasprintf("%s/sandboxes", fleet_cfg.state_dir);
	if ((mkdir(fleet_cfg.state_dir, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		free(dir);
		return -errno;
	}
	free(dir);
	if ((rc = daemons_init(changed, err, errlen)) < 0)
		return rc;
	scan(daemon_stop_stale);
	return 0;
}

void fleet_shutdown(void)
{
	daemons_shutdown();
}
