/* The dynamic loader a context's driver runs through (see context_loader.h): the interpreter's
 * PT_INTERP read from its ELF headers, and that loader copied into a sealed memfd of mode 0111. */
#include "context_loader.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdres.h"

/* Linux 6.3's flag, newer than these headers: an executable memfd, said so (without it, a
 * kernel that has the flag logs a warning, or refuses to execute it if vm.memfd_noexec asks). */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* Far more than a loader's program headers or size: the bounds of what is read of a file. */
#define PHDRS_MAX  256
#define LOADER_MAX (64u << 20)

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -ENOEXEC;
}

/* The absolute path in the PT_INTERP of the ELF at fd, into path. */
static int elf_interp(int fd, char path[PATH_MAX])
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph;
	int rc;

	if ((rc = read_at(fd, &eh, sizeof(eh), 0)) < 0)
		return rc;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != (__ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32) ||
	    eh.e_phentsize != sizeof(ph) || eh.e_phnum > PHDRS_MAX)
		return -ENOEXEC;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if ((rc = read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph)))) < 0)
			return rc;
		if (ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz < 2 || ph.p_filesz > PATH_MAX)
			return -ENOEXEC;
		if ((rc = read_at(fd, path, ph.p_filesz, (off_t)ph.p_offset)) < 0)
			return rc;
		if (path[0] != '/' || strnlen(path, ph.p_filesz) != ph.p_filesz - 1)
			return -ENOEXEC;
		return 0;
	}
	return -ENOEXEC; /* static, or not a program */
}

/* A memfd holding what fd holds, executable and not readable by anyone but root, and sealed:
 * nothing can change what it runs, not even through the descriptor the driver inherits. */
static int sealed_copy(int fd)
{
	struct stat st;
	int mfd;
	off_t off = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size > LOADER_MAX)
		return -ENOEXEC;
	mfd = memfd_create("sbxfs-loader", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (mfd < 0 && errno == EINVAL) /* before Linux 6.3, every memfd is executable */
		mfd = memfd_create("sbxfs-loader", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, fd, &off, (size_t)(st.st_size - off));

		if (n <= 0) {
			int err = n < 0 ? errno : ENOEXEC;

			close(mfd);
			return -err;
		}
	}
	if (fchmod(mfd, 0111) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		int err = errno;

		close(mfd);
		return -err;
	}
	return mfd;
}

int context_loader_open(const char *path)
{
	char interp[PATH_MAX];
	int fd, rc;

	if ((fd = fdres_open(path, O_RDONLY, 0)) < 0)
		return fd;
	rc = elf_interp(fd, interp);
	close(fd);
	if (rc < 0)
		return rc;
	if ((fd = fdres_open(interp, O_RDONLY, 0)) < 0)
		return fd;
	rc = sealed_copy(fd);
	close(fd);
	return rc;
}
