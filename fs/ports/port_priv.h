/* What ports/'s two files share: its kinds of inodes, their modes, and portfile.c's operations
 * for the table in portfs.c. */
#ifndef SBX_PORT_PRIV_H
#define SBX_PORT_PRIV_H

#include <sys/stat.h>

#include "expose.h"
#include "ino.h"
#include "portfs.h"

/* The kinds of ports/'s inodes (xport_ino): the number is the sandbox's port, the serial the
 * exposure's (both 0 for ports/ itself and ports/expose). */
enum port_file {
	P_PORTS = TREE_TOP,
	P_EXPOSE,
	P_PORTDIR, /* ports/PORT/ */
	P_URL,
	P_ADDRESS,
	P_PORT,
	P_NAME,
	P_STATUS,
	P_MAX
};
_Static_assert(P_MAX <= TREE_KINDS, "ports/'s kinds fit the inode's kind bits");
_Static_assert(EXPOSE_SERIAL_MAX <= TREE_SERIAL_MAX, "an exposure's serial fits its inodes");

static inline fuse_ino_t xport_ino(uint64_t serial, enum port_file k, unsigned port)
{
	return tree_ino(PART_PORTS, serial, k, port, false);
}

struct portfh;
struct expose_info;

/* A kind's row (portfile.c holds them): its name, mode and line in the mount's README, and
 * what a file of it does. */
struct port_row {
	const char *name;
	mode_t mode; /* 0: no such kind */
	bool top;    /* a file of ports/ itself, not of each port */
	const char *help;
	/* The text an exposure's file reads (NULL: "", and no exposure behind it). */
	char *(*render)(const struct expose_info *x);
	/* A write it checks (and applies, or keeps for close): 0 or -errno. */
	int (*write)(struct portfh *fh, const char *buf, size_t size);
	/* What was written applies at close (name; expose applies each write at once). */
	bool at_close;
};

/* k's row; one of mode 0 for a number of no kind. */
const struct port_row *port_row(unsigned k);

/* portfs.c: text, a name made or written at path that is no port, in the errors file. */
void refuse_port(const char *path, const char *text, size_t len);

/* portfile.c: the text a file of an exposure reads (NULL if the exposure is gone; caller
 * frees), and the open files' operations. */
char *portfile_render(fuse_ino_t ino, size_t *len);
void portfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfile_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void portfile_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi);
void portfile_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfile_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void portfile_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph);

#endif
