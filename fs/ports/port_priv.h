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

/* portfs.c: the mode of a kind (0: none). */
mode_t portfs_mode(unsigned k);

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
