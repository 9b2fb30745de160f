/* The workspace image: making it (mkfs.ext4), growing it (resize2fs), its loop device, its
 * mount over the workspace directory and a stale one of a daemon that died. */
#include "wsimage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "xmalloc.h"

#define IMAGE_NAME "workspace.img"

extern char **environ;

static char *mounted_on; /* the workspace directory the image is mounted over, or NULL */

/* Runs a tool (mkfs.ext4, e2fsck, resize2fs) to its end, its stdout discarded, its stderr the
 * daemon's: its exit status, or -errno. */
static int run_tool(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	int status, rc;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -rc;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A new image must not hide files: the workspace directory holds nothing yet. */
static int dir_is_empty(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	int rc = 1;

	if (!d)
		return -errno;
	while (rc == 1 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = 0;
	closedir(d);
	return rc;
}

/* A sparse file of size bytes with an empty ext4 on it (no blocks kept for root: the sandbox
 * may fill it all); removed again if that fails. */
static int make_image(const char *img, uint64_t size, char *err, size_t errlen)
{
	char *argv[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", (char *)img, NULL};
	int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && (rc = run_tool(argv)) != 0) {
		snprintf(err, errlen, "%s: mkfs.ext4 failed (%d)", img, rc);
		rc = -EIO;
	} else if (rc < 0) {
		snprintf(err, errlen, "%s: %s", img, strerror(-rc));
	}
	if (rc < 0 && fd >= 0)
		unlink(img);
	return rc;
}

/* Binds the image to a free loop device that detaches itself once unmounted: its open fd. */
static int loop_attach(const char *img, char *dev, size_t devlen)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), file, loop = -1, rc = -EBUSY;
	struct loop_config lc = {.info.lo_flags = LO_FLAGS_AUTOCLEAR};

	if (ctl < 0)
		return -errno;
	file = open(img, O_RDWR | O_CLOEXEC);
	if (file < 0) {
		rc = -errno;
		close(ctl);
		return rc;
	}
	lc.fd = (unsigned)file;
	/* Another process may take the free device between the two calls: take the next. */
	for (int tries = 0; tries < 8 && rc == -EBUSY; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (n < 0) {
			rc = -errno;
			break;
		}
		snprintf(dev, devlen, "/dev/loop%d", n);
		loop = open(dev, O_RDWR | O_CLOEXEC);
		if (loop < 0) {
			rc = -errno;
			break;
		}
		rc = ioctl(loop, LOOP_CONFIGURE, &lc) < 0 ? -errno : 0;
		if (rc < 0) {
			close(loop);
			loop = -1;
		}
	}
	close(file);
	close(ctl);
	return rc < 0 ? rc : loop;
}

/* Whether the loop device behind source ("/dev/loopN") is backed by the image. */
static bool loop_backs(const char *source, const char *img)
{
	char path[64], backing[4096];
	ssize_t n;
	int fd, num;

	if (sscanf(source, "/dev/loop%d", &num) != 1)
		return false;
	snprintf(path, sizeof(path), "/sys/block/loop%d/loop/backing_file", num);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, backing, sizeof(backing) - 1);
	close(fd);
	if (n <= 0)
		return false;
	backing[n] = '\0';
	backing[strcspn(backing, "\n")] = '\0';
	return strcmp(backing, img) == 0;
}

/* A daemon that died with its watchdog left the image mounted over the workspace: detach it,
 * so this start mounts it afresh rather than on top. The state dir's lock says it is ours. */
static void detach_stale(const char *ws, const char *img)
{
	char *line = NULL, point[4096], source[4096];
	size_t cap = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool stale = false;

	while (f && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    sscanf(sep, " - %*s %4095s", source) == 1 && strcmp(point, ws) == 0)
			stale = loop_backs(source, img);
	}
	free(line);
	if (f)
		fclose(f);
	if (stale && umount2(ws, MNT_DETACH) == 0)
		log_warnx("%s: detached the workspace image a daemon that died left mounted", ws);
}

/* Grows the image while nothing has it: checked first (resize2fs wants a clean filesystem),
 * given back its size if resize2fs fails. (Growing it mounted needs CAP_SYS_RESOURCE.) */
static int grow(const char *img, off_t from, uint64_t size, char *err, size_t errlen)
{
	char *fsck[] = {"e2fsck", "-f", "-p", (char *)img, NULL};
	char *resize[] = {"resize2fs", (char *)img, NULL};
	const char *failed = NULL;
	int rc = run_tool(fsck);

	if (rc != 0 && rc != 1) /* 1: errors it corrected */
		failed = "e2fsck";
	else if (truncate(img, (off_t)size) < 0)
		failed = "truncate";
	else if ((rc = run_tool(resize)) != 0)
		failed = "resize2fs";
	if (!failed) {
		log_info("%s: grown to %llu bytes", img, (unsigned long long)size);
		return 0;
	}
	if (truncate(img, from) < 0)
		log_warn("%s: giving it back its size", img);
	snprintf(err, errlen, "%s: growing it to workspace_max: %s failed (%d)", img, failed, rc);
	return -EIO;
}

/* The loop device that has the image ("/dev/loopN" in dev), or false. */
static bool loop_of(const char *img, char *dev, size_t devlen)
{
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	bool found = false;

	while (d && !found && (de = readdir(d))) {
		snprintf(dev, devlen, "/dev/%s", de->d_name);
		found = loop_backs(dev, img);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether no loop device has the image, after waiting a moment: the device of the daemon before
 * detaches itself a little after its last unmount. */
static bool released(const char *img)
{
	char dev[300];

	for (int i = 0; i < 25; i++) {
		if (!loop_of(img, dev, sizeof(dev)))
			return true;
		usleep(40000);
	}
	return false;
}

/* A loop device still has the image: a daemon that died left it mounted in its sandbox's
 * namespaces. Held open, so that it stays, it is mounted again: the kernel shares the one
 * filesystem (a second loop device would make two, and corrupt it). Its fd, or -errno. */
static int loop_reuse(const char *img, char *dev, size_t devlen)
{
	int fd;

	if (!loop_of(img, dev, devlen))
		return -ENOENT;
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!loop_backs(dev, img)) {
		close(fd);
		return -ENOENT;
	}
	log_warnx("%s: still on %s (a daemon that died?): mounting that again", img, dev);
	return fd;
}

/* The image there is (grown to max if smaller), or a new one; *tidy when mkfs or e2fsck made
 * a lost+found. */
static int find_or_make(const char *ws, const char *img, uint64_t max, bool *tidy, char *err,
			size_t errlen)
{
	struct stat st;
	int rc;

	*tidy = false;
	if (stat(img, &st) == 0) {
		if ((uint64_t)st.st_size > max) {
			snprintf(err, errlen,
				 "%s is %llu bytes, more than [sandbox] workspace_max "
				 "(%llu): it is never shrunk; raise workspace_max, or remove the "
				 "image (and the files in it) to start anew",
				 img, (unsigned long long)st.st_size, (unsigned long long)max);
			return -EINVAL;
		}
		*tidy = (uint64_t)st.st_size < max;
		if (*tidy && !released(img)) {
			log_warnx("%s: in use by a loop device: not grown to workspace_max now",
				  img);
			*tidy = false;
		} else if (*tidy && (rc = grow(img, st.st_size, max, err, errlen)) < 0) {
			return rc;
		}
		if (dir_is_empty(ws) == 0)
			log_warnx("workspace %s: its own files are hidden while the image %s is "
				  "mounted over it",
				  ws, img);
		return 0;
	}
	if (errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", img, strerror(-rc));
		return rc;
	}
	if ((rc = dir_is_empty(ws)) < 0) {
		snprintf(err, errlen, "workspace %s: %s", ws, strerror(-rc));
		return rc;
	}
	if (rc == 0) {
		snprintf(err, errlen,
			 "workspace %s is not empty, and [sandbox] workspace_max makes a new, "
			 "empty image over it: move its files away (into workspace/ once mounted), "
			 "or point workspace at an empty directory",
			 ws);
		return -ENOTEMPTY;
	}
	*tidy = true;
	return make_image(img, max, err, errlen);
}

/* Mounts the image on ws through a loop device: the one it is still on, else a new one. A
 * device on its way out (its last unmount just now) may fail the mount: then again. */
static int mount_image(const char *img, const char *ws, char *dev, size_t devlen)
{
	int rc = -ENOENT;

	for (int tries = 0; tries < 10 && rc < 0; tries++) {
		int loop = loop_reuse(img, dev, devlen);

		if (loop == -ENOENT)
			loop = loop_attach(img, dev, devlen);
		if (loop < 0)
			return loop;
		/* discard: what the sandbox deletes is given back to the host's disk. */
		rc = mount(dev, ws, "ext4", MS_NOSUID | MS_NODEV, "discard") < 0 ? -errno : 0;
		close(loop);
		if (rc < 0)
			usleep(50000);
	}
	return rc;
}

int wsimage_attach(const char *workspace, const char *state_dir, uint64_t max, char *err,
		   size_t errlen)
{
	char *ws, *state, *img = NULL, dev[64];
	bool tidy;
	int rc;

	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "[sandbox] workspace_max needs root: the bounded workspace is "
			 "a loop-mounted image (set workspace_max = max, or run as root)");
		return -EPERM;
	}
	ws = realpath(workspace, NULL);
	state = realpath(state_dir, NULL);
	if (!ws || !state) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", ws ? state_dir : workspace, strerror(-rc));
		goto out;
	}
	img = xasprintf("%s/%s", state, IMAGE_NAME); /* as the loop device shows its file */
	detach_stale(ws, img);
	if ((rc = find_or_make(ws, img, max, &tidy, err, errlen)) < 0)
		goto out;
	if ((rc = mount_image(img, ws, dev, sizeof(dev))) < 0) {
		snprintf(err, errlen, "mounting %s on %s: %s", img, ws, strerror(-rc));
		goto out;
	}
	mounted_on = ws;
	ws = NULL;
	if (tidy) { /* the workspace has no lost+found of its own (e2fsck makes one as needed) */
		char *lost = xasprintf("%s/lost+found", mounted_on);

		rmdir(lost);
		free(lost);
	}
	log_info("workspace %s: the image %s (%llu bytes) on %s", mounted_on, img,
		 (unsigned long long)max, dev);
out:
	free(ws);
	free(state);
	free(img);
	return rc;
}

void wsimage_detach(void)
{
	if (!mounted_on)
		return;
	if (umount2(mounted_on, MNT_DETACH) < 0)
		log_warn("unmounting the workspace image from %s", mounted_on);
	free(mounted_on);
	mounted_on = NULL;
}
