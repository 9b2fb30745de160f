/* The control plane's reserve of descriptors (see fdres.h). Giving back one descriptor and
 * retrying, rather than counting, keeps it correct when other threads open and close files
 * meanwhile: a slot another thread takes first only costs one more round. */
#include "fdres.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int null_fd = -1; /* what the reserve is made of */
static int held[FDRES_COUNT];
static unsigned nheld;
static bool drawn; /* the reserve was drawn on since it was last full (logged) */
static bool empty; /* it was found empty since it last held anything (logged) */

/* Lock held. */
static void refill_locked(void)
{
	while (null_fd >= 0 && nheld < FDRES_COUNT) {
		int fd = fcntl(null_fd, F_DUPFD_CLOEXEC, 0);

		if (fd < 0)
			break;
		held[nheld++] = fd;
	}
	if (nheld == FDRES_COUNT)
		drawn = false;
	if (nheld > 0)
		empty = false;
}

void fdres_init(void)
{
	pthread_mutex_lock(&lock);
	if (null_fd < 0)
		null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0)
		log_warn("descriptor reserve: /dev/null");
	refill_locked();
	pthread_mutex_unlock(&lock);
}

void fdres_shutdown(void)
{
	pthread_mutex_lock(&lock);
	while (nheld > 0)
		close(held[--nheld]);
	if (null_fd >= 0)
		close(null_fd);
	null_fd = -1;
	pthread_mutex_unlock(&lock);
}

unsigned fdres_held(void)
{
	unsigned n;

	pthread_mutex_lock(&lock);
	n = nheld;
	pthread_mutex_unlock(&lock);
	return n;
}

static void top_up(void)
{
	pthread_mutex_lock(&lock);
	refill_locked();
	pthread_mutex_unlock(&lock);
}

/* After err: whether one reserve descriptor was given back, so a retry may succeed. Leaves
 * errno as it was. */
static bool give_back(int err)
{
	bool ok;

	if (err != EMFILE && err != ENFILE)
		return false;
	pthread_mutex_lock(&lock);
	ok = nheld > 0;
	if (ok)
		close(held[--nheld]);
	if (ok && !drawn) {
		log_warnx("descriptors: %s; drawing on the control plane's reserve", strerror(err));
		drawn = true;
	} else if (!ok && !empty) {
		log_warnx("descriptors: %s; the control plane's reserve is used up", strerror(err));
		empty = true;
	}
	pthread_mutex_unlock(&lock);
	errno = err;
	return ok;
}

int fdres_open(const char *path, int flags, mode_t mode)
{
	int fd;

	top_up();
	while ((fd = open(path, flags | O_CLOEXEC, mode)) < 0 && give_back(errno))
		;
	return fd < 0 ? -errno : fd;
}

int fdres_pipe(int p[2])
{
	int rc;

	top_up();
	while ((rc = pipe2(p, O_CLOEXEC)) < 0 && give_back(errno))
		;
	return rc < 0 ? -errno : 0;
}

int fdres_socketpair(int domain, int type, int sv[2])
{
	int rc;

	top_up();
	while ((rc = socketpair(domain, type | SOCK_CLOEXEC, 0, sv)) < 0 && give_back(errno))
		;
	return rc < 0 ? -errno : 0;
}
