/* The per-instance sandbox uid (see uidpool.h). Claims are serialized by a lock on the
 * registry, and each claim is a file made with O_EXCL, so instances started at once never get
 * the same uid. A registry entry is stale, and its uid free again, once its state dir no
 * longer records that uid and its workspace is gone (files there may still carry the uid). */
#include "uidpool.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

#define RECORD "uid" /* in the state dir: "UID\n" */

enum holder { FREE, MINE, STALE, TAKEN };

/* Reads a small file whole, NUL-terminated. Bytes read or -errno. */
static ssize_t read_small(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return n;
}

static int write_file(int dirfd, const char *name, const char *text, int flags)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, 0600);
	size_t len = strlen(text);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

/* The uid state_dir records, or -errno (-ENOENT: none yet). */
static long recorded_uid(const char *state_dir)
{
	char buf[32], *end;
	unsigned long v;
	int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ssize_t n;

	if (dfd < 0)
		return -errno;
	n = read_small(dfd, RECORD, buf, sizeof(buf));
	close(dfd);
	if (n < 0)
		return n;
	errno = 0;
	v = strtoul(buf, &end, 10);
	if (errno || end == buf || strcmp(end, "\n") || v == 0 || v >= UINT32_MAX)
		return -EINVAL;
	return (long)v;
}

static int record_uid(const char *state_dir, uint32_t uid)
{
	char text[32];
	int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (dfd < 0)
		return -errno;
	snprintf(text, sizeof(text), "%u\n", uid);
	rc = write_file(dfd, RECORD ".new", text, O_TRUNC);
	if (rc == 0 && renameat(dfd, RECORD ".new", dfd, RECORD) < 0)
		rc = -errno;
	close(dfd);
	return rc;
}

/* Who holds uid in the registry, from its entry "STATE\nWORKSPACE\n". */
static enum holder holder_of(int regfd, uint32_t uid, const char *mine)
{
	char name[16], buf[2 * PATH_MAX + 4], *ws, *end;
	struct stat st;
	ssize_t n;

	snprintf(name, sizeof(name), "%u", uid);
	n = read_small(regfd, name, buf, sizeof(buf));
	if (n == -ENOENT)
		return FREE;
	ws = n > 0 ? strchr(buf, '\n') : NULL;
	end = ws ? strchr(ws + 1, '\n') : NULL;
	if (!end)
		return TAKEN; /* unreadable or not ours to judge: never reclaimed */
	*ws++ = '\0';
	*end = '\0';
	if (!strcmp(buf, mine))
		return MINE;
	if (recorded_uid(buf) == (long)uid || lstat(ws, &st) == 0)
		return TAKEN;
	return STALE;
}

static int claim_entry(int regfd, uint32_t uid, enum holder h, const char *entry)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", uid);
	if (h != FREE && unlinkat(regfd, name, 0) < 0)
		return -errno;
	return write_file(regfd, name, entry, O_EXCL);
}

/* A uid that is nobody's on this host: no live claim (looked at first: a file read, where the
 * passwd and group lookups may ask a user database), no passwd or group entry. */
static bool usable(int regfd, uint32_t uid, const char *mine, enum holder *h)
{
	*h = holder_of(regfd, uid, mine);
	return *h != TAKEN && !getpwuid(uid) && !getgrgid(uid);
}

/* Where the last claim left off ("next": the uid after it), so that a host with many claims
 * does not go over them all for each new one; first if there is none. */
static uint32_t next_hint(int regfd, uint32_t first, uint32_t last)
{
	char buf[32], *end;
	unsigned long v;

	if (read_small(regfd, "next", buf, sizeof(buf)) <= 0)
		return first;
	v = strtoul(buf, &end, 10);
	return *end == '\n' && v >= first && v <= last ? (uint32_t)v : first;
}

/* Not synced: a hint lost to a crash costs a longer scan, never a wrong claim. */
static void set_hint(int regfd, uint32_t uid, uint32_t first, uint32_t last)
{
	int fd = openat(regfd, "next.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
			0600);
	char text[32];
	int len = snprintf(text, sizeof(text), "%u\n", uid >= last ? first : uid + 1);

	if (fd < 0)
		return;
	if (write(fd, text, (size_t)len) == len)
		renameat(regfd, "next.new", regfd, "next");
	close(fd);
}

static int pick(int regfd, uint32_t first, uint32_t last, long recorded, const char *mine,
		const char *entry, uint32_t *out)
{
	enum holder h;

	if (recorded > 0) {
		h = holder_of(regfd, (uint32_t)recorded, mine);
		if (h == TAKEN)
			return -EEXIST;
		*out = (uint32_t)recorded;
		return claim_entry(regfd, *out, h, entry);
	}
	/* From the hint to last, then around from first. */
	for (uint64_t i = 0, hint = next_hint(regfd, first, last); i <= (uint64_t)last - first;
	     i++) {
		uint64_t uid = first + (hint - first + i) % ((uint64_t)last - first + 1);

		if (!usable(regfd, (uint32_t)uid, mine, &h))
			continue;
		*out = (uint32_t)uid;
		set_hint(regfd, *out, first, last);
		return claim_entry(regfd, *out, h, entry);
	}
	return -ENOSPC;
}

static int open_registry(int *lockfd)
{
	int regfd;

	if (mkdir("/var/lib/sbxfs", 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mkdir(UIDPOOL_REGISTRY, 0700) < 0 && errno != EEXIST)
		return -errno;
	regfd = open(UIDPOOL_REGISTRY, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (regfd < 0)
		return -errno;
	*lockfd = openat(regfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*lockfd < 0 || flock(*lockfd, LOCK_EX) < 0) {
		int rc = -errno;

		if (*lockfd >= 0)
			close(*lockfd);
		close(regfd);
		return rc;
	}
	return regfd;
}

static int claim_locked(int regfd, uint32_t first, uint32_t last, const char *state, const char *ws,
			uint32_t *uid, char *err, size_t errlen)
{
	long recorded = recorded_uid(state);
	char *entry = xasprintf("%s\n%s\n", state, ws);
	int rc;

	if (recorded == -ENOENT || (recorded > 0 && (recorded < first || recorded > last))) {
		if (recorded > 0)
			log_warnx("uid %ld of %s is outside uid_range: taking a new one", recorded,
				  state);
		recorded = 0;
	}
	rc = recorded < 0 ? (int)recorded : pick(regfd, first, last, recorded, state, entry, uid);
	free(entry);
	if (rc == -EEXIST)
		snprintf(err, errlen,
			 "uid %ld recorded in %s/" RECORD " is held by another state "
			 "dir (see " UIDPOOL_REGISTRY "/%ld); remove the record to get a new uid",
			 recorded, state, recorded);
	else if (rc == -ENOSPC)
		snprintf(err, errlen, "no free uid left in uid_range %u-%u", first, last);
	else if (rc < 0)
		snprintf(err, errlen, "claiming a sandbox uid for %s: %s", state, strerror(-rc));
	if (rc == 0 && (rc = record_uid(state, *uid)) < 0)
		snprintf(err, errlen, "%s/" RECORD ": %s", state, strerror(-rc));
	return rc;
}

int uidpool_claim(uint32_t first, uint32_t last, const char *state_dir, const char *workspace,
		  struct identity *id, char *err, size_t errlen)
{
	char state[PATH_MAX], ws[PATH_MAX];
	int regfd, lockfd = -1, rc;
	uint32_t uid = 0;

	if (!realpath(state_dir, state) || !realpath(workspace, ws)) {
		rc = -errno;
		snprintf(err, errlen, "claiming a sandbox uid: %s", strerror(-rc));
		return rc;
	}
	if (strchr(state, '\n') || strchr(ws, '\n')) {
		snprintf(err, errlen, "a state dir or workspace path with a newline gets no uid");
		return -EINVAL;
	}
	if ((regfd = open_registry(&lockfd)) < 0) {
		snprintf(err, errlen, "%s: %s", UIDPOOL_REGISTRY, strerror(-regfd));
		return regfd;
	}
	rc = claim_locked(regfd, first, last, state, ws, &uid, err, errlen);
	close(lockfd);
	close(regfd);
	if (rc == 0)
		*id = (struct identity){.uid = uid, .gid = uid};
	return rc;
}
