/* Unit tests: the loader a context's driver is executed through (src/context/context_loader.c):
 * the PT_INTERP of a program, copied whole into a sealed memfd of mode 0111; -ENOEXEC for what
 * is no dynamically linked program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "context_loader.h"

/* This test's own PT_INTERP: the loader the kernel started it with. */
static int own_interp(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_INTERP)
			snprintf(arg, PATH_MAX, "%s",
				 (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr));
	return 1; /* the first object is the program */
}

static char *slurp(int fd, size_t *len)
{
	struct stat st;
	char *buf;

	if (fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	*len = (size_t)pread(fd, buf, (size_t)st.st_size, 0);
	return buf;
}

static void test_copy(void)
{
	char interp[PATH_MAX] = "", self[PATH_MAX];
	size_t got = 0, want = 1;
	char *a, *b;
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int fd, lfd;

	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';
	dl_iterate_phdr(own_interp, interp);
	CHECK(interp[0] == '/');
	fd = context_loader_open(self);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0111 && S_ISREG(st.st_mode));
	CHECK(fcntl(fd, F_GET_SEALS) == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL));
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
	CHECK(write(fd, "x", 1) < 0 && errno == EPERM);
	lfd = open(interp, O_RDONLY);
	a = slurp(fd, &got);
	b = slurp(lfd, &want);
	CHECK(a && b && got == want && got > 0 && !memcmp(a, b, got));
	free(a);
	free(b);
	close(lfd);
	close(fd);
}

static void test_refused(void)
{
	char dir[] = "/tmp/sbxfs-ctxloader-XXXXXX", path[64];
	FILE *f;

	CHECK(context_loader_open("/nonexistent/python3") == -ENOENT);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/prog", dir);
	/* A script, an empty file, and an ELF header with nothing after it. */
	f = fopen(path, "w");
	fputs("#!/bin/sh\necho hi\n", f);
	fclose(f);
	CHECK(context_loader_open(path) == -ENOEXEC);
	f = fopen(path, "w");
	fclose(f);
	CHECK(context_loader_open(path) == -ENOEXEC);
	f = fopen(path, "w");
	fwrite("\177ELF\2\1\1", 1, 7, f);
	fclose(f);
	CHECK(context_loader_open(path) == -ENOEXEC);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_copy();
	test_refused();
	return check_done();
}
