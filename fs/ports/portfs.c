/* ports/ (see portfs.h): lookup, attributes, listings built at opendir, mkdir (expose) and
 * rmdir (unexpose). A port's directory is named by the port exactly ("3000", never "03000"),
 * and its inode numbers carry the exposure's serial: files of a port unexposed and exposed
 * again are not the new exposure's (they give ENOENT). */
#include "port_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dirsnap.h"
#include "itemdir.h"
#include "expose.h"
#include "nodeattr.h"
#include "refusals.h"
#include "xmalloc.h"

static mode_t port_mode(unsigned k)
{
	return port_row(k)->mode;
}

fuse_ino_t portfs_root_ino(void)
{
	return xport_ino(0, P_PORTS, 0);
}

static fuse_ino_t port_ino(const struct expose_info *x, enum port_file k)
{
	return xport_ino(x->serial, k, x->port);
}

/* Fills st for an inode of ports/; -ENOENT once its exposure is gone, unless held (a getattr
 * of a file the kernel holds, maybe open: fstat keeps working). */
static int port_stat(fuse_ino_t ino, struct stat *st, bool held)
{
	enum port_file k = ino_kind(ino);
	struct expose_info x;
	size_t len = 0;
	char *text;

	if (!port_mode(k))
		return -ENOENT;
	if (!ino_serial(ino)) { /* ports/ itself and expose: no exposure behind them */
		nodeattr_init(st, ino, port_mode(k), NULL);
		return 0;
	}
	if (expose_get(ino_num(ino), (uint32_t)ino_serial(ino), &x) < 0) {
		if (!held || S_ISDIR(port_mode(k)))
			return -ENOENT;
		nodeattr_init(st, ino, port_mode(k), NULL);
		return 0;
	}
	nodeattr_init(st, ino, port_mode(k), &x.created);
	expose_info_clear(&x);
	if (S_ISREG(port_mode(k)) && (text = portfile_render(ino, &len))) {
		st->st_size = (off_t)len;
		free(text);
	}
	nodeattr_blocks(st);
	return 0;
}

static const char *kind_name(unsigned k)
{
	return port_row(k)->name;
}

static bool kind_in_top(unsigned k)
{
	return port_row(k)->top;
}

/* The directory of the port a name of ports/ names (0: none). */
static fuse_ino_t find_port(fuse_ino_t top, const char *name)
{
	struct expose_info x;
	fuse_ino_t ino;
	unsigned port;

	(void)top;
	if (expose_parse_port(name, strlen(name), &port) < 0 || expose_get(port, 0, &x) < 0)
		return 0;
	ino = port_ino(&x, P_PORTDIR);
	expose_info_clear(&x);
	return ino;
}

static void list_ports(struct dirsnap *d, fuse_ino_t top)
{
	struct expose_info *v;
	size_t n = expose_list(&v);
	char name[16];

	(void)top;
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%u", v[i].port);
		dirsnap_add(d, name, port_ino(&v[i], P_PORTDIR), S_IFDIR);
	}
	expose_list_free(v, n);
}

static fuse_ino_t file_ino(fuse_ino_t dir, unsigned k)
{
	return xport_ino(ino_serial(dir), k, ino_num(dir));
}

static const struct itemdir ports;

static fuse_ino_t parent_of(fuse_ino_t dir)
{
	return itemdir_is_top(&ports, dir) ? FUSE_ROOT_ID : portfs_root_ino();
}

static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e);

static const struct dirsnap_plus port_plus = {plus_fill, NULL};

static const struct itemdir ports = {
    .top = P_PORTS,
    .item = P_PORTDIR,
    .nkinds = P_MAX,
    .name = kind_name,
    .mode = port_mode,
    .in_top = kind_in_top,
    .stat = port_stat,
    .find = find_port,
    .list = list_ports,
    .file = file_ino,
    .parent = parent_of,
    .plus = &port_plus,
};

static void plus_fill(const struct dirsnap_entry *de, struct fuse_entry_param *e)
{
	itemdir_plus_fill(&ports, de, e);
}

int portfs_root_entry(struct fuse_entry_param *e)
{
	return itemdir_entry(&ports, portfs_root_ino(), e);
}

static void portfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	itemdir_lookup(&ports, req, parent, name);
}

static void portfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	itemdir_getattr(&ports, req, ino);
}

static void portfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			   struct fuse_file_info *fi)
{
	(void)fi;
	itemdir_setattr(&ports, req, ino, attr, to_set);
}

static void portfs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	itemdir_opendir(&ports, req, ino, fi);
}

void refuse_port(const char *path, const char *text, size_t len)
{
	refusal_note(path, EINVAL,
		     "'%.*s' is no port: a number from 1 to 65535, without a sign or leading zeros",
		     (int)len, text);
}

/* mkdir ports/PORT exposes PORT: EINVAL for a name that is not a port, EEXIST, ENOSPC past
 * [network] expose_max_ports. */
static void portfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct expose_info x;
	unsigned port;
	int rc;

	(void)mode;
	if (!itemdir_is_top(&ports, parent)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strcmp(name, port_row(P_EXPOSE)->name) == 0) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	rc = expose_parse_port(name, strlen(name), &port);
	if (rc == -EINVAL) {
		char *path = xasprintf("ports/%s", name);

		refuse_port(path, name, strlen(name));
		free(path);
	}
	if (rc == 0)
		rc = expose_add(port);
	if (rc == 0)
		rc = expose_get(port, 0, &x);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	itemdir_reply_entry(&ports, req, port_ino(&x, P_PORTDIR));
	expose_info_clear(&x);
}

/* rmdir ports/PORT closes it: when it answers, the host's connections are reset and new ones
 * refused. */
static void portfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unsigned port;

	if (!itemdir_is_top(&ports, parent)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (strcmp(name, port_row(P_EXPOSE)->name) == 0) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (expose_parse_port(name, strlen(name), &port) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_err(req, -expose_remove(port));
}

void port_help(struct help *h)
{
	help_add(h, "", port_row(P_PORTS)->name, true, port_row(P_PORTS)->help);
	help_add(h, "ports/", port_row(P_EXPOSE)->name, false, port_row(P_EXPOSE)->help);
	help_add(h, "ports/", "PORT", true, port_row(P_PORTDIR)->help);
	for (int k = P_PORTDIR + 1; k < P_MAX; k++)
		help_add(h, "ports/PORT/", port_row(k)->name, false, port_row(k)->help);
}

const struct fuse_lowlevel_ops port_ops = {
    .lookup = portfs_lookup,
    .getattr = portfs_getattr,
    .setattr = portfs_setattr,
    .mkdir = portfs_mkdir,
    .rmdir = portfs_rmdir,
    .open = portfile_open,
    .read = portfile_read,
    .write = portfile_write,
    .flush = portfile_flush,
    .release = portfile_release,
    .opendir = portfs_opendir,
    .readdir = dirsnap_readdir,
    .readdirplus = dirsnap_readdirplus,
    .releasedir = dirsnap_releasedir,
    .poll = portfile_poll,
};
