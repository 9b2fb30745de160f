/* The bounded directories' images (the workspace's, the sandbox user's home's): making one
 * (mkfs.ext4 or mkfs.xfs), growing it (resize2fs, xfs_growfs), its loop device, its mount over
 * its directory and a stale one of a daemon that died. An XFS workspace image holds the
 * workspace and the snapshots side by side (workspace/ and snapshots/ at its root, mounted on
 * STATE_DIR/image), so that snapshots are reflinks of the workspace's files: only workspace/ is
 * bound over the workspace directory. */
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

#define IMAGE_MOUNT "image" /* where an XFS image is mounted, in the state dir */
/* mkfs.xfs refuses smaller filesystems. */
#define XFS_MIN (300ull << 20)

extern char **environ;

/* A directory bounded by an image. */
struct image {
	const char *file; /* in the state dir */
	const char *what; /* for messages */
	const char *key;  /* its [sandbox] setting */
	char *mounted_on; /* the directory the image is mounted over, or NULL */
	char *image_root; /* an XFS image's own mount point, or NULL */
	char *snap_dir;	  /* its snapshots/ */
};

enum { IMG_WS, IMG_HOME };
static struct image images[] = {
    [IMG_WS] = {.file = "workspace.img", .what = "workspace", .key = "workspace_max"},
    [IMG_HOME] = {.file = "home.img", .what = "home", .key = "home_max"},
};

static bool is_xfs(const char *fstype)
{
	return strcmp(fstype, "xfs") == 0;
}

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

/* A sparse file of size bytes with an empty filesystem on it (ext4: no blocks kept for root,
 * the sandbox may fill it all; xfs: with reflinks); removed again if that fails. */
static int make_image(const char *img, uint64_t size, const char *fstype, char *err, size_t errlen)
{
	char *ext4[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", (char *)img, NULL};
	char *xfs[] = {"mkfs.xfs", "-q", "-f", "-K", "-m", "reflink=1", (char *)img, NULL};
	char **argv = is_xfs(fstype) ? xfs : ext4;
	int fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && (rc = run_tool(argv)) != 0) {
		snprintf(err, errlen, "%s: %s failed (%d)%s", img, argv[0], rc,
			 rc == 127 ? ": is it installed (xfsprogs, e2fsprogs)?" : "");
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

/* A daemon that died with its watchdog left the image mounted over the workspace (or at the
 * image's own mount point): detach it, so this start mounts it afresh rather than on top. The
 * state dir's lock says it is ours. */
static void detach_stale(const struct image *im, const char *ws, const char *img)
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
		log_warnx("%s: detached the %s image a daemon that died left mounted", ws,
			  im->what);
}

/* Grows an ext4 image while nothing has it: checked first (resize2fs wants a clean filesystem),
 * given back its size if resize2fs fails. (Growing it mounted needs CAP_SYS_RESOURCE.) An XFS
 * image only grows mounted: its file is made larger here, and xfs_growfs takes the space once
 * it is mounted (grow_xfs). */
static int grow(const struct image *im, const char *img, off_t from, uint64_t size,
		const char *fstype, char *err, size_t errlen)
{
	char *fsck[] = {"e2fsck", "-f", "-p", (char *)img, NULL};
	char *resize[] = {"resize2fs", (char *)img, NULL};
	const char *failed = NULL;
	int rc;

	if (is_xfs(fstype))
		return truncate(img, (off_t)size) < 0 ? -errno : 0;
	rc = run_tool(fsck);
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
	snprintf(err, errlen, "%s: growing it to %s: %s failed (%d)", img, im->key, failed, rc);
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

/* The filesystem on an image, from its superblock's magic: "xfs", "ext4" or NULL. */
static const char *image_fstype(const char *img)
{
	unsigned char head[0x440];
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, head, sizeof(head), 0) : -1;

	if (fd >= 0)
		close(fd);
	if (n >= 4 && memcmp(head, "XFSB", 4) == 0)
		return "xfs";
	if (n == (ssize_t)sizeof(head) && head[0x438] == 0x53 && head[0x439] == 0xef)
		return "ext4";
	return NULL;
}

/* The image there is (grown to max if smaller: *grown), or a new one; *tidy when mkfs or
 * e2fsck made a lost+found. */
static int find_or_make(const struct image *im, const char *ws, const char *img, uint64_t max,
			const char *fstype, bool *tidy, bool *grown, char *err, size_t errlen)
{
	const char *was;
	struct stat st;
	int rc;

	*tidy = *grown = false;
	if (is_xfs(fstype) && max < XFS_MIN) {
		snprintf(err, errlen,
			 "[sandbox] workspace_fs = xfs needs a workspace_max of 300M "
			 "at least (mkfs.xfs makes no smaller filesystem)");
		return -EINVAL;
	}
	if (stat(img, &st) == 0) {
		if ((uint64_t)st.st_size > max) {
			snprintf(err, errlen,
				 "%s is %llu bytes, more than [sandbox] %s (%llu): it is never "
				 "shrunk; raise %s, or remove the image (and the files in it) to "
				 "start anew",
				 img, (unsigned long long)st.st_size, im->key,
				 (unsigned long long)max, im->key);
			return -EINVAL;
		}
		was = image_fstype(img);
		if (!was || strcmp(was, fstype)) {
			snprintf(
			    err, errlen,
			    "%s holds %s, and sbxfs would mount it as %s ([sandbox] "
			    "workspace_fs for the workspace): set it back, or remove the image "
			    "(and the files in it) to start anew",
			    img, was ? was : "no filesystem sbxfs knows", fstype);
			return -EINVAL;
		}
		*tidy = (uint64_t)st.st_size < max && !is_xfs(fstype);
		if ((uint64_t)st.st_size < max && !released(img)) {
			log_warnx("%s: in use by a loop device: not grown to %s now", img, im->key);
			*tidy = false;
		} else if ((uint64_t)st.st_size < max) {
			if ((rc = grow(im, img, st.st_size, max, fstype, err, errlen)) < 0)
				return rc;
			*grown = true;
		}
		if (dir_is_empty(ws) == 0)
			log_warnx("%s %s: its own files are hidden while the image %s is "
				  "mounted over it",
				  im->what, ws, img);
		return 0;
	}
	if (errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", img, strerror(-rc));
		return rc;
	}
	if ((rc = dir_is_empty(ws)) < 0) {
		snprintf(err, errlen, "%s %s: %s", im->what, ws, strerror(-rc));
		return rc;
	}
	if (rc == 0) {
		snprintf(err, errlen,
			 "%s %s is not empty, and [sandbox] %s makes a new, empty image over "
			 "it: move its files away (into it once mounted), or start from an "
			 "empty directory",
			 im->what, ws, im->key);
		return -ENOTEMPTY;
	}
	*tidy = !is_xfs(fstype);
	return make_image(img, max, fstype, err, errlen);
}

/* Mounts the image on point through a loop device: the one it is still on, else a new one. A
 * device on its way out (its last unmount just now) may fail the mount: then again. */
static int mount_image(const char *img, const char *point, const char *fstype, char *dev,
		       size_t devlen)
{
	int rc = -ENOENT;

	for (int tries = 0; tries < 10 && rc < 0; tries++) {
		int loop = loop_reuse(img, dev, devlen);

		if (loop == -ENOENT)
			loop = loop_attach(img, dev, devlen);
		if (loop < 0)
			return loop;
		/* discard: what the sandbox deletes is given back to the host's disk. */
		rc = mount(dev, point, fstype, MS_NOSUID | MS_NODEV, "discard") < 0 ? -errno : 0;
		close(loop);
		if (rc < 0)
			usleep(50000);
	}
	return rc;
}

/* An XFS image, mounted on its own point: its workspace/ bound (nosuid, nodev) over ws, its
 * snapshots/ kept for the snapshots; the filesystem grown to its file's size if that grew. */
static int bind_xfs(struct image *im, const char *root, const char *ws, bool grown, char *err,
		    size_t errlen)
{
	char *argv[] = {"xfs_growfs", "-d", (char *)root, NULL};
	char *inner = xasprintf("%s/workspace", root);
	int rc = 0;

	im->snap_dir = xasprintf("%s/snapshots", root);
	if (grown && run_tool(argv) != 0)
		log_warnx("%s: xfs_growfs failed: the workspace keeps its size", root);
	if ((mkdir(inner, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(im->snap_dir, 0700) < 0 && errno != EEXIST) ||
	    mount(inner, ws, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, ws, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, NULL) < 0) {
		rc = -errno;
		snprintf(err, errlen, "binding %s on %s: %s", inner, ws, strerror(-rc));
	}
	free(inner);
	return rc;
}

/* Undoes what the attach did: the workspace's mount (lazily: the host's workspace/ mount may
 * hold it a moment longer), then an XFS image's own; the loop device goes with the last
 * reference. */
static void undo_mounts(struct image *im)
{
	if (im->mounted_on && umount2(im->mounted_on, MNT_DETACH) < 0 && errno != EINVAL)
		log_warn("unmounting the %s image from %s", im->what, im->mounted_on);
	if (im->image_root && umount2(im->image_root, MNT_DETACH) < 0 && errno != EINVAL)
		log_warn("unmounting the %s image from %s", im->what, im->image_root);
	free(im->mounted_on);
	free(im->image_root);
	free(im->snap_dir);
	im->mounted_on = im->image_root = im->snap_dir = NULL;
}

static int attach(struct image *im, const char *dir, const char *state_dir, uint64_t max,
		  const char *fstype, char *err, size_t errlen)
{
	char *ws, *state, *img = NULL, dev[64];
	bool tidy, grown;
	int rc;

	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "[sandbox] %s needs root: the bounded %s is a loop-mounted image (set "
			 "%s = max, or run as root)",
			 im->key, im->what, im->key);
		return -EPERM;
	}
	ws = realpath(dir, NULL);
	state = realpath(state_dir, NULL);
	if (!ws || !state) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", ws ? state_dir : dir, strerror(-rc));
		goto out;
	}
	img = xasprintf("%s/%s", state, im->file); /* as the loop device shows its file */
	if (is_xfs(fstype)) {
		im->image_root = xasprintf("%s/%s", state, IMAGE_MOUNT);
		detach_stale(im, im->image_root, img);
		if (mkdir(im->image_root, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", im->image_root, strerror(-rc));
			goto out;
		}
	}
	detach_stale(im, ws, img);
	if ((rc = find_or_make(im, ws, img, max, fstype, &tidy, &grown, err, errlen)) < 0)
		goto out;
	if ((rc = mount_image(img, im->image_root ? im->image_root : ws, fstype, dev,
			      sizeof(dev))) < 0) {
		snprintf(err, errlen, "mounting %s on %s: %s", img,
			 im->image_root ? im->image_root : ws, strerror(-rc));
		goto out;
	}
	if (im->image_root && (rc = bind_xfs(im, im->image_root, ws, grown, err, errlen)) < 0)
		goto out;
	im->mounted_on = ws;
	ws = NULL;
	if (tidy) { /* the directory has no lost+found of its own (e2fsck makes one as needed) */
		char *lost = xasprintf("%s/lost+found", im->mounted_on);

		rmdir(lost);
		free(lost);
	}
	log_info("%s %s: the %s image %s (%llu bytes) on %s", im->what, im->mounted_on, fstype, img,
		 (unsigned long long)max, dev);
out:
	if (rc < 0)
		undo_mounts(im);
	free(ws);
	free(state);
	free(img);
	return rc;
}

int wsimage_attach(const char *workspace, const char *state_dir, uint64_t max, const char *fstype,
		   char *err, size_t errlen)
{
	return attach(&images[IMG_WS], workspace, state_dir, max, fstype, err, errlen);
}

int wsimage_attach_home(const char *home, const char *state_dir, uint64_t max, char *err,
			size_t errlen)
{
	return attach(&images[IMG_HOME], home, state_dir, max, "ext4", err, errlen);
}

const char *wsimage_snapshot_dir(void)
{
	return images[IMG_WS].snap_dir;
}

void wsimage_detach(void)
{
	undo_mounts(&images[IMG_HOME]);
	undo_mounts(&images[IMG_WS]);
}
