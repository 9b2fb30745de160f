/* ports/ (see portfs.h): lookup, attributes, listings built at opendir, mkdir (expose) and
 * rmdir (unexpose). A port's directory is named by the port exactly ("3000", never "03000"),
 * and its inode numbers carry the exposure's serial: files of a port unexposed and exposed
 * again are not the new exposure's (they give ENOENT). */
#include "portfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "expose.h"
#include "nodeattr.h"

/* A port's files never change names: the kernel may keep them. Its directory comes and goes
 * with mkdir and rmdir in other processes: its name is kept 0. */
#define FILE_TIMEOUT 3600.0

static const struct {
	const char *name;
	mode_t mode;
} kinds[K_MAX] = {
    [K_XPORTS] = {"ports", S_IFDIR | 0755},	[K_XEXPOSE] = {"expose", S_IFREG | 0200},
    [K_XPORTDIR] = {"", S_IFDIR | 0755},	[K_XURL] = {"url", S_IFREG | 0444},
    [K_XADDRESS] = {"address", S_IFREG | 0444}, [K_XPORT] = {"port", S_IFREG | 0444},
    [K_XNAME] = {"name", S_IFREG | 0644},	[K_XSTATUS] = {"status", S_IFREG | 0444},
};

mode_t portfs_mode(enum ctl_kind k)
{
	return (unsigned)k < K_MAX ? kinds[k].mode : 0;
}

fuse_ino_t portfs_root_ino(void)
{
	return ctl_ino(0, K_XPORTS, 0);
}

static fuse_ino_t port_ino(const struct expose_info *x, enum ctl_kind k)
{
	return ctl_ino(x->serial, k, x->port);
}

/* Fills st for an inode of ports/; -ENOENT once its exposure is gone, unless held (a getattr
 * of a file the kernel holds, maybe open: fstat keeps working). */
static int port_stat(fuse_ino_t ino, struct stat *st, bool held)
{
	enum ctl_kind k = ino_kind(ino);
	struct expose_info x;
	size_t len = 0;
	char *text;

	if (!portfs_mode(k))
		return -ENOENT;
	if (k == K_XPORTS || k == K_XEXPOSE) {
		nodeattr_init(st, ino, portfs_mode(k), NULL);
		return 0;
	}
	if (expose_get(ino_num(ino), (uint32_t)ino_serial(ino), &x) < 0) {
		if (!held || k == K_XPORTDIR)
			return -ENOENT;
		nodeattr_init(st, ino, portfs_mode(k), NULL);
		return 0;
	}
	nodeattr_init(st, ino, portfs_mode(k), &x.created);
	expose_info_clear(&x);
	if (S_ISREG(portfs_mode(k)) && (text = portfile_render(ino, &len))) {
		st->st_size = (off_t)len;
		free(text);
	}
	nodeattr_blocks(st);
	return 0;
}

static int entry_of(fuse_ino_t ino, struct fuse_entry_param *e)
{
	int rc = port_stat(ino, &e->attr, false);

	if (rc < 0)
		return rc;
	e->ino = ino;
	e->entry_timeout = ino_kind(ino) == K_XPORTDIR ? 0 : FILE_TIMEOUT;
	return 0;
}

int portfs_root_entry(struct fuse_entry_param *e)
{
	return entry_of(portfs_root_ino(), e);
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = {0};
	int rc = entry_of(ino, &e);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

/* The exposure a name of ports/ names: 0, -ENOENT. */
static int find_port(const char *name, struct expose_info *x)
{
	unsigned port;

	if (expose_parse_port(name, strlen(name), &port) < 0)
		return -ENOENT;
	return expose_get(port, 0, x);
}

static void lookup_port(fuse_req_t req, const char *name)
{
	struct expose_info x;

	if (strcmp(name, kinds[K_XEXPOSE].name) == 0) {
		reply_entry(req, ctl_ino(0, K_XEXPOSE, 0));
		return;
	}
	if (find_port(name, &x) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_entry(req, port_ino(&x, K_XPORTDIR));
	expose_info_clear(&x);
}

static void lookup_file(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	for (int k = K_XURL; k <= K_XSTATUS; k++)
		if (strcmp(name, kinds[k].name) == 0) {
			reply_entry(req, ctl_ino(ino_serial(parent), k, ino_num(parent)));
			return;
		}
	fuse_reply_err(req, ENOENT);
}

void portfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (ino_kind(parent) == K_XPORTS)
		lookup_port(req, name);
	else if (ino_kind(parent) == K_XPORTDIR)
		lookup_file(req, parent, name);
	else
		fuse_reply_err(req, ENOTDIR);
}

void portfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = port_stat(ino, &st, true);

	(void)fi;
	nodeattr_reply(req, rc, &st);
}

void portfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi)
{
	if (!nodeattr_settable(portfs_mode(ino_kind(ino)), attr, to_set)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	portfs_getattr(req, ino, fi);
}

/* mkdir ports/PORT exposes PORT: EINVAL for a name that is not a port, EEXIST, ENOSPC past
 * [network] expose_max_ports. */
void portfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct expose_info x;
	unsigned port;
	int rc;

	if (ino_kind(parent) != K_XPORTS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strcmp(name, kinds[K_XEXPOSE].name) == 0) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	rc = expose_parse_port(name, strlen(name), &port);
	if (rc == 0)
		rc = expose_add(port);
	if (rc == 0)
		rc = expose_get(port, 0, &x);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	reply_entry(req, port_ino(&x, K_XPORTDIR));
	expose_info_clear(&x);
}

/* rmdir ports/PORT closes it: when it answers, the host's connections are reset and new ones
 * refused. */
void portfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unsigned port;

	if (ino_kind(parent) != K_XPORTS) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strcmp(name, kinds[K_XEXPOSE].name) == 0) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (expose_parse_port(name, strlen(name), &port) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_err(req, -expose_remove(port));
}

static void list_ports(struct dirsnap *d)
{
	struct expose_info *v;
	size_t n = expose_list(&v);
	char name[16];

	dirsnap_add(d, kinds[K_XEXPOSE].name, ctl_ino(0, K_XEXPOSE, 0), S_IFREG);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%u", v[i].port);
		dirsnap_add(d, name, port_ino(&v[i], K_XPORTDIR), S_IFDIR);
	}
	expose_list_free(v, n);
}

static void list_files(struct dirsnap *d, fuse_ino_t ino)
{
	for (int k = K_XURL; k <= K_XSTATUS; k++)
		dirsnap_add(d, kinds[k].name, ctl_ino(ino_serial(ino), k, ino_num(ino)), S_IFREG);
}

void portfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d;
	struct stat st;

	if (port_stat(ino, &st, false) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (ino_kind(ino) == K_XPORTS) {
		d = dirsnap_new(ino, FUSE_ROOT_ID);
		list_ports(d);
	} else {
		d = dirsnap_new(ino, portfs_root_ino());
		list_files(d, ino);
	}
	dirsnap_open(req, d, fi);
}

/* Readdirplus entries count a lookup, with the timeouts a lookup gives. */
static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	struct fuse_entry_param filled = {0};

	if (entry_of(de->ino, &filled) == 0)
		*e = filled;
}

void portfs_readdir(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi, bool plus)
{
	static const struct dirsnap_plus port_plus = {plus_fill, NULL};

	dirsnap_read(req, fi, size, off, plus ? &port_plus : NULL);
}
