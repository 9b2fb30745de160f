/* Below libfuse: what libfuse 3.14 does not know, done in hooks on the FUSE device's reads and
 * writes (fuse_session_custom_io): FUSE passthrough (the INIT flag, backing file registration,
 * the open replies' backing ids), killpriv v2 (the INIT flag and the kill requests libfuse
 * drops), O_TMPFILE (relabelled as a create); and the mount's readahead, raised once INIT is
 * done. */
#include "ws_priv.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

/* ---- below libfuse: passthrough and killpriv ----
 * libfuse 3.14 predates FUSE passthrough (protocol 7.40, FOPEN_PASSTHROUGH), so it is
 * negotiated below libfuse, in the device hooks of ws_dev_attach_session: the INIT reply gains
 * FUSE_PASSTHROUGH (which the kernel only grants with CAP_SYS_ADMIN), and an open reply gains
 * FOPEN_PASSTHROUGH with the id the backing fd was registered under (FUSE_DEV_IOC_BACKING_OPEN).
 * The kernel then does reads, writes, splice and mmap of that open file on the backing file
 * itself: one page cache shared with the sandbox's direct access, and no round trip.
 *
 * The INIT reply also asks for FUSE_HANDLE_KILLPRIV_V2 (protocol 7.33): without it the kernel
 * asks for security.capability (GETXATTR) before every write() to see whether it must be
 * removed, since FUSE inodes never get S_NOSEC otherwise. With it the filesystem kills suid and
 * sgid itself when the request says so (FATTR_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID,
 * FUSE_WRITE_KILL_SUIDGID, which libfuse 3.14 drops: the device hook notes them for the
 * handler, see tls_kill_suidgid), and the backing filesystem removes security.capability on
 * write, truncate and chown as usual. */

#define WS_FUSE_SETATTR		   4
#define WS_FUSE_OPEN		   14
#define WS_FUSE_WRITE		   16
#define WS_FUSE_INIT		   26
#define WS_FUSE_CREATE		   35
#define WS_FUSE_BMAP		   37
#define WS_FUSE_TMPFILE		   51
#define WS_FUSE_HANDLE_KILLPRIV_V2 (1u << 28)
#define WS_FUSE_INIT_EXT	   (1u << 30)
#define WS_FATTR_KILL_SUIDGID	   (1u << 11)	     /* fuse_setattr_in.valid */
#define WS_FUSE_OPEN_KILL_SUIDGID  (1u << 0)	     /* fuse_open_in, fuse_create_in .open_flags */
#define WS_FUSE_WRITE_KILL_SUIDGID (1u << 2)	     /* fuse_write_in.write_flags */
#define WS_FUSE_PASSTHROUGH2	   (1u << (37 - 32)) /* in flags2 */
#define WS_FOPEN_KEEP_CACHE	   (1u << 1)
#define WS_FOPEN_PASSTHROUGH	   (1u << 7)

struct ws_in_header { /* struct fuse_in_header of <linux/fuse.h> */
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid;
	uint32_t gid;
	uint32_t pid;
	uint32_t padding;
};

struct ws_init_in { /* fuse_init_in, 7.36+ */
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint32_t flags2;
};

struct ws_init_out { /* fuse_init_out, 7.40 */
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;
	uint32_t unused[6];
};

struct ws_open_out { /* fuse_open_out, 7.40 */
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

struct ws_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};

_Static_assert(sizeof(struct ws_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct ws_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct ws_open_out) == 16, "fuse_open_out");

#define WS_FUSE_DEV_IOC_BACKING_OPEN  _IOW(229, 1, struct ws_backing_map)
#define WS_FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)
/* The backing file's filesystem must be below this depth: a local filesystem is at 0. */
#define WS_MAX_STACK_DEPTH 1

static struct {
	struct fuse_session *se;
	atomic_bool killpriv2; /* the kernel's INIT offered FUSE_HANDLE_KILLPRIV_V2 */
	atomic_bool offered;   /* the kernel's INIT offered passthrough */
	atomic_bool wanted;    /* our INIT reply asked for it */
	atomic_bool active;    /* granted, as far as we know: cleared when the kernel refuses */
} pt;

/* Set around one reply on this thread: the INIT reply to patch, the backing id of an open. */
static __thread bool tls_patch_init;
static __thread int tls_reply_backing_id;
/* The request this thread read last asks to kill suid/sgid (killpriv v2). */
static __thread bool tls_kill_suidgid;

bool ws_dev_pt_active(void)
{
	return atomic_load_explicit(&pt.active, memory_order_relaxed);
}

/* Registers fd with the kernel; the id (> 0), or 0 when it cannot be (then no new backing
 * files are registered if the kernel has no passthrough for us). */
static int backing_open(int fd)
{
	static atomic_bool warned;
	struct ws_backing_map map = {.fd = fd};
	int id = ioctl(fuse_session_fd(pt.se), WS_FUSE_DEV_IOC_BACKING_OPEN, &map);

	if (id > 0)
		return id;
	if (errno == EOPNOTSUPP || errno == EPERM || errno == ENOTTY || errno == EINVAL) {
		if (atomic_exchange(&pt.active, false))
			log_info("workspace: no kernel passthrough (%s); file data goes through "
				 "the daemon",
				 strerror(errno));
	} else if (!atomic_exchange(&warned, true)) {
		log_warn("workspace: FUSE_DEV_IOC_BACKING_OPEN");
	}
	return 0;
}

static void backing_close(int id)
{
	uint32_t u = (uint32_t)id;

	if (ioctl(fuse_session_fd(pt.se), WS_FUSE_DEV_IOC_BACKING_CLOSE, &u) == -1)
		log_warn("workspace: FUSE_DEV_IOC_BACKING_CLOSE %d", id);
}

static pthread_mutex_t pt_lock = PTHREAD_MUTEX_INITIALIZER;

bool ws_dev_pt_wanted(void)
{
	return atomic_load_explicit(&pt.wanted, memory_order_relaxed);
}

void ws_dev_patch_init(bool passthrough)
{
	tls_patch_init = true;
	if (passthrough && atomic_load(&pt.offered))
		atomic_store(&pt.wanted, true);
}

void ws_dev_reply_backing(int id)
{
	tls_reply_backing_id = id;
}

bool ws_dev_take_kill_suidgid(void)
{
	bool kill = tls_kill_suidgid;

	tls_kill_suidgid = false;
	return kill;
}

/* The passthrough backing id for an open of in (flags: the open's), counting one more user
 * of it; 0 if none can be registered. The kernel wants every open of an inode that has a
 * backing file to be a passthrough open of that same file, so it is shared; *rw says whether
 * it serves writes (else writes of this open must go through the daemon). The backing file has
 * only an access mode: O_APPEND, O_SYNC and the like of each open reach the backing write as
 * that write's own flags. */
int ws_dev_backing_get(struct ws_inode *in, int flags, bool *rw)
{
	bool write = (flags & O_ACCMODE) != O_RDONLY;
	char p[32];
	int id = 0, fd, ifd;

	pthread_mutex_lock(&pt_lock);
	if (in->backing_refs > 0) {
		in->backing_refs++;
		id = in->backing_id;
	} else if (ws_dev_pt_active() && (ifd = ws_budget_use(in)) >= 0) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", ifd);
		ws_budget_fd_opening();
		fd = open(p, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		ws_budget_unuse(in);
		id = fd == -1 ? 0 : backing_open(fd);
		if (id > 0) {
			in->backing_id = id;
			in->backing_fd = fd;
			in->backing_refs = 1;
			in->backing_rw = write;
		} else {
			if (fd != -1)
				close(fd);
			ws_budget_fd_closed();
		}
	}
	*rw = in->backing_rw;
	pthread_mutex_unlock(&pt_lock);
	return id;
}

void ws_dev_backing_put(struct ws_inode *in)
{
	pthread_mutex_lock(&pt_lock);
	if (--in->backing_refs == 0) {
		backing_close(in->backing_id);
		close(in->backing_fd);
		ws_budget_fd_closed();
		in->backing_id = 0;
		in->backing_fd = -1;
	}
	pthread_mutex_unlock(&pt_lock);
}

/* ---- readahead ----
 * The kernel offers FUSE 128 KiB of readahead and clamps the mount's bdi to what INIT answers,
 * so the bdi is raised to 1 MiB (one max_pages request) through sysfs once INIT is done. Only
 * root may; others keep 128 KiB. */

#define WS_READAHEAD_KB 1024

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
} init_state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};

void ws_dev_init_done(void)
{
	pthread_mutex_lock(&init_state.lock);
	init_state.done = true;
	pthread_cond_broadcast(&init_state.cond);
	pthread_mutex_unlock(&init_state.lock);
}

/* "MAJ:MIN" of the mount at path, from mountinfo (without touching the mount itself). */
static bool mount_devnum(const char *path, char *out, size_t outlen)
{
	char *line = NULL, dev[64], point[PATH_MAX + 1];
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint ...; the last match is the top mount */
		if (sscanf(line, "%*s %*s %63s %*s %4096s", dev, point) == 2 &&
		    strcmp(point, path) == 0) {
			snprintf(out, outlen, "%s", dev);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

static void *tune_thread(void *arg)
{
	char *mnt = arg, dev[64], path[128];
	struct timespec settle = {0, 20 * 1000 * 1000};
	FILE *f;

	if (mount_devnum(mnt, dev, sizeof(dev))) {
		pthread_mutex_lock(&init_state.lock);
		while (!init_state.done)
			pthread_cond_wait(&init_state.cond, &init_state.lock);
		pthread_mutex_unlock(&init_state.lock);
		nanosleep(&settle, NULL); /* INIT's reply goes out after ws_init_conn returns */
		snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
		f = fopen(path, "we");
		if (f) {
			fprintf(f, "%d\n", WS_READAHEAD_KB);
			if (fclose(f) != 0)
				log_debug("workspace: %s: %s", path, strerror(errno));
		}
	}
	free(mnt);
	return NULL;
}

void ws_dev_tune_mount(const char *mountpoint)
{
	char *abs;
	pthread_t t;

	if (!ws_cred_root() || mountpoint[0] != '/')
		return;
	abs = xstrdup(mountpoint);
	if (pthread_create(&t, NULL, tune_thread, abs) != 0) {
		free(abs);
		return;
	}
	pthread_detach(t);
}

/* ---- device hooks ----
 * Reads: the kernel sends O_TMPFILE opens as FUSE_TMPFILE, which libfuse 3.14 answers with
 * ENOSYS (and the kernel then refuses O_TMPFILE for good). The request is laid out as a CREATE
 * whose name is "/", and expects a CREATE's reply, so it is relabelled as one; the INIT request
 * tells whether passthrough is on offer. Writes: the INIT and open replies of passthrough (see
 * above). Splice from the device is given up for this (it only saved a copy of write data). */

/* The u32 at off in the request's first argument, 0 if the request is shorter. */
static uint32_t in_u32(const struct ws_in_header *h, ssize_t n, size_t off)
{
	uint32_t v;

	if ((size_t)n < sizeof(*h) + off + sizeof(v))
		return 0;
	memcpy(&v, (const char *)(h + 1) + off, sizeof(v));
	return v;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct ws_in_header *h = buf;

	(void)userdata;
	tls_kill_suidgid = false;
	if (n < (ssize_t)sizeof(*h))
		return n;
	switch (h->opcode) {
	case WS_FUSE_SETATTR:
		tls_kill_suidgid = in_u32(h, n, 0) & WS_FATTR_KILL_SUIDGID;
		break;
	case WS_FUSE_OPEN:
		tls_kill_suidgid = in_u32(h, n, 4) & WS_FUSE_OPEN_KILL_SUIDGID;
		break;
	case WS_FUSE_CREATE:
		tls_kill_suidgid = in_u32(h, n, 12) & WS_FUSE_OPEN_KILL_SUIDGID;
		break;
	case WS_FUSE_WRITE:
		tls_kill_suidgid = in_u32(h, n, 20) & WS_FUSE_WRITE_KILL_SUIDGID;
		break;
	}
	if (h->opcode == WS_FUSE_TMPFILE) {
		h->opcode = WS_FUSE_CREATE;
	} else if (h->opcode == WS_FUSE_INIT &&
		   n >= (ssize_t)(sizeof(*h) + sizeof(struct ws_init_in))) {
		const struct ws_init_in *in = (const void *)(h + 1);

		if (in->major == 7 && in->minor >= 33 && (in->flags & WS_FUSE_HANDLE_KILLPRIV_V2))
			atomic_store(&pt.killpriv2, true);
		if (in->major == 7 && in->minor >= 40 && (in->flags & WS_FUSE_INIT_EXT) &&
		    (in->flags2 & WS_FUSE_PASSTHROUGH2))
			atomic_store(&pt.offered, true);
	}
	return n;
}

static void patch_reply(struct iovec *iov, int count)
{
	if (count < 2)
		return;
	if (tls_patch_init && iov[1].iov_len >= offsetof(struct ws_init_out, unused)) {
		struct ws_init_out *out = iov[1].iov_base;

		tls_patch_init = false;
		if (atomic_load(&pt.killpriv2))
			out->flags |= WS_FUSE_HANDLE_KILLPRIV_V2;
		if (atomic_load(&pt.wanted)) {
			out->flags |= WS_FUSE_INIT_EXT;
			out->flags2 |= WS_FUSE_PASSTHROUGH2;
			out->max_stack_depth = WS_MAX_STACK_DEPTH;
			atomic_store(&pt.active, true);
		}
	} else if (tls_reply_backing_id > 0 &&
		   iov[count - 1].iov_len >= sizeof(struct ws_open_out)) {
		/* an open reply ends with fuse_open_out (after fuse_entry_out for a create) */
		struct ws_open_out *out = (void *)((char *)iov[count - 1].iov_base +
						   iov[count - 1].iov_len - sizeof(*out));

		out->open_flags = (out->open_flags & ~WS_FOPEN_KEEP_CACHE) | WS_FOPEN_PASSTHROUGH;
		out->backing_id = tls_reply_backing_id;
		tls_reply_backing_id = 0;
	}
}

/* Set once the session has stopped serving: replies then go nowhere (see ws_dev_detach_session). */
static atomic_bool draining;

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	size_t len = 0;

	(void)userdata;
	if (atomic_load(&draining)) {
		for (int i = 0; i < count; i++)
			len += iov[i].iov_len;
		return (ssize_t)len;
	}
	patch_reply(iov, count);
	return writev(fd, iov, count);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			      unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

int ws_dev_attach_session(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
	    .writev = io_writev,
	    .read = io_read,
	    .splice_send = io_splice_send,
	};

	pt.se = se;
	ws_inval_start(se);
	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}

/* libfuse 3.14 keeps an INTERRUPT whose request was already answered in a list, to be freed
 * when a later request comes in (each request frees one); fuse_session_destroy forgets that
 * list. An interrupt racing the answer to the last requests (a reader killed at unmount) would
 * leak with its channel. So, below libfuse: feed the stopped session harmless requests (BMAP,
 * which it answers ENOSYS itself), one per interrupt it may still hold, answered into the
 * void. Interrupts come one per signalled waiter: a few at most. */
#define STALE_INTERRUPTS_MAX 64

void ws_dev_detach_session(struct fuse_session *se)
{
	struct {
		struct ws_in_header h;
		uint64_t block;
		uint32_t blocksize, padding;
	} bmap = {.h = {.len = sizeof(bmap), .opcode = WS_FUSE_BMAP, .nodeid = 1}};
	struct fuse_buf buf = {.size = sizeof(bmap), .mem = &bmap};

	atomic_store(&draining, true);
	for (int i = 0; i < STALE_INTERRUPTS_MAX; i++)
		fuse_session_process_buf(se, &buf);
}
