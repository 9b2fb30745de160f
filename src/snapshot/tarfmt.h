/* The tar format both ends share: POSIX ustar headers (512-byte blocks), the pax extended
 * headers that carry what ustar cannot (long names, sizes past 8 GiB, nanoseconds, extended
 * attributes), and GNU's long-name entries, which GNU tar writes by default. */
#ifndef SBX_TARFMT_H
#define SBX_TARFMT_H

#define TAR_BLOCK 512

struct tar_header {
	char name[100];
	char mode[8];
	char uid[8];
	char gid[8];
	char size[12];
	char mtime[12];
	char chksum[8];
	char typeflag;
	char linkname[100];
	char magic[6];
	char version[2];
	char uname[32];
	char gname[32];
	char devmajor[8];
	char devminor[8];
	char prefix[155];
	char pad[12];
};

_Static_assert(sizeof(struct tar_header) == TAR_BLOCK, "a tar header is one block");

#define TAR_REG		 '0'
#define TAR_AREG	 '\0' /* pre-POSIX regular file */
#define TAR_LINK	 '1'
#define TAR_SYMLINK	 '2'
#define TAR_DIR		 '5'
#define TAR_CONTIG	 '7' /* a regular file, for all we care */
#define TAR_PAX		 'x'
#define TAR_PAX_GLOB	 'g'
#define TAR_GNU_LONGNAME 'L'
#define TAR_GNU_LONGLINK 'K'

/* The pax record of an extended attribute: "SCHILY.xattr.NAME=VALUE", as GNU tar and
 * star write them. */
#define TAR_XATTR_KEY "SCHILY.xattr."

#endif
