/* Listening ports of a process tree (see ports.h): the socket inodes its processes hold,
 * matched against the LISTEN entries of /proc/PID/net/tcp and tcp6. */
#include "ports.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xmalloc.h"

#define TCP_LISTEN 0x0A

struct inodes {
	unsigned long *v;
	size_t n;
};

static void socket_inodes(pid_t pid, struct inodes *in)
{
	char dir[64], path[320], link[64];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "socket:[", 8))
			continue;
		in->v = xrealloc(in->v, (in->n + 1) * sizeof(*in->v));
		in->v[in->n++] = strtoul(link + 8, NULL, 10);
	}
	if (d)
		closedir(d);
}

static bool has_inode(const struct inodes *in, unsigned long ino)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->v[i] == ino)
			return true;
	return false;
}

static void add_port(unsigned **ports, size_t *n, unsigned port)
{
	for (size_t i = 0; i < *n; i++)
		if ((*ports)[i] == port)
			return;
	*ports = xrealloc(*ports, (*n + 1) * sizeof(**ports));
	(*ports)[(*n)++] = port;
}

/* Lines: "sl local_address rem_address st ... inode"; addresses are HEX:PORT. */
static void scan_table(const char *path, const struct inodes *in, unsigned **ports, size_t *n)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char local[128], remote[128];
		unsigned st, port;
		unsigned long ino;
		char *colon;

		if (sscanf(line, "%*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
			   &ino) != 4 ||
		    st != TCP_LISTEN || !has_inode(in, ino) || !(colon = strrchr(local, ':')))
			continue;
		port = (unsigned)strtoul(colon + 1, NULL, 16);
		add_port(ports, n, port);
	}
	fclose(f);
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

size_t ports_listening(const pid_t *pids, size_t npids, unsigned **ports)
{
	struct inodes in = {0};
	char path[64];
	size_t n = 0;

	*ports = NULL;
	for (size_t i = 0; i < npids; i++)
		socket_inodes(pids[i], &in);
	if (in.n && npids) {
		/* Every process of a sandbox shares one network namespace. */
		snprintf(path, sizeof(path), "/proc/%d/net/tcp", (int)pids[0]);
		scan_table(path, &in, ports, &n);
		snprintf(path, sizeof(path), "/proc/%d/net/tcp6", (int)pids[0]);
		scan_table(path, &in, ports, &n);
	}
	free(in.v);
	if (n)
		qsort(*ports, n, sizeof(**ports), cmp_unsigned);
	return n;
}
