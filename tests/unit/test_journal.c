/* Unit tests: the journal's store keeps a million events under its bound, its numbers and
 * offsets go on across a reopen, a line a crash cut short is cut off, and a string that is
 * not UTF-8 is written as its base64. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "journal.h"

static char dir[64];

static uint64_t on_disk(int *files)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t total = 0;
	struct stat st;
	char path[512];

	*files = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			stat(path, &st);
			total += (uint64_t)st.st_size;
			(*files)++;
		}
	closedir(d);
	return total;
}

/* The last line's text before end. */
static void last_line(char *out, size_t len)
{
	uint64_t end = journal_end(), off = end > 4096 ? end - 4096 : 0;
	char buf[4097], *nl;
	size_t n;

	journal_read(&off, buf, 4096, &n);
	buf[n] = '\0';
	buf[n - 1] = '\0';
	nl = strrchr(buf, '\n');
	nl = nl ? nl + 1 : buf;
	if (strlen(nl) < len)
		memcpy(out, nl, strlen(nl) + 1);
	else
		out[0] = '\0';
}

/* A command's end as the daemon writes it: about the size of a real one. */
static void event(long i)
{
	struct jrec r;

	jrec_begin(&r, "cmd.end", "default");
	jrec_int(&r, "run", i);
	jrec_str(&r, "cwd", "/workspace/app");
	jrec_int(&r, "exit", 0);
	jrec_str(&r, "reason", "exit");
	jrec_int(&r, "duration_ms", 12);
	jrec_commit(&r);
}

static void test_a_million_events_under_the_bound(void)
{
	char err[256], line[512];
	uint64_t bound = 64ull << 20;
	int files;

	CHECK(journal_open(dir, bound, err, sizeof(err)) == 0);
	for (long i = 0; i < 1000000; i++)
		event(i);
	CHECK(on_disk(&files) <= bound && files <= 8);
	last_line(line, sizeof(line));
	CHECK(strstr(line, "\"seq\":1000000,") && strstr(line, "\"run\":999999,"));
	printf("# 1,000,000 events: %llu bytes on disk in %d files, %llu written in all\n",
	       (unsigned long long)on_disk(&files), files, (unsigned long long)journal_end());
	journal_close();
}

static void test_it_goes_on_after_a_reopen_and_a_cut_line(void)
{
	char err[256], line[512], path[512], name[256];
	uint64_t end;
	struct dirent *e;
	DIR *d;
	int fd;

	CHECK(journal_open(dir, 64ull << 20, err, sizeof(err)) == 0);
	end = journal_end();
	journal_close();
	/* a crash in the middle of a line */
	d = opendir(dir);
	name[0] = '\0';
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strcmp(e->d_name, name) > 0)
			memcpy(name, e->d_name, strlen(e->d_name) + 1);
	closedir(d);
	snprintf(path, sizeof(path), "%s/%.200s", dir, name);
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(write(fd, "{\"v\":1,\"seq\":1000001,\"ti", 24) == 24);
	close(fd);
	CHECK(journal_open(dir, 64ull << 20, err, sizeof(err)) == 0);
	CHECK(journal_end() == end);
	event(7);
	last_line(line, sizeof(line));
	CHECK(strstr(line, "{\"v\":1,\"seq\":1000001,") == line);
	journal_close();
}

static void test_bytes_that_are_not_text(void)
{
	char err[256], line[512];
	struct jrec r;

	CHECK(journal_open(dir, 64ull << 20, err, sizeof(err)) == 0);
	jrec_begin(&r, "t", NULL);
	jrec_strn(&r, "a", "x\n\"\xff", 4);
	jrec_str(&r, "b", "line\nbreak \"q\" \xe2\x80\xa8");
	jrec_commit(&r);
	last_line(line, sizeof(line));
	CHECK(strstr(line, "\"a\":{\"base64\":\"eAoi/w==\"}") != NULL);
	CHECK(strstr(line, "\"b\":\"line\\nbreak \\\"q\\\" \\u2028\"") != NULL);
	CHECK(!strchr(line, '\n'));
	journal_close();
}

static void test_off_drops_events(void)
{
	struct jrec r;

	jrec_begin(&r, "t", NULL);
	jrec_commit(&r); /* not open: nothing, no crash */
	CHECK(journal_end() == 0);
}

int main(void)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/tmp/sbxfs-test-journal-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_off_drops_events();
	test_a_million_events_under_the_bound();
	test_it_goes_on_after_a_reopen_and_a_cut_line();
	test_bytes_that_are_not_text();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return check_done();
}
