/* Unit tests: which URLs are local sources, and the roots check on real paths (gitlocal.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gitlocal.h"

static bool path_is(const char *url, const char *want)
{
	char *p = gitlocal_path(url);
	bool ok = want ? p && !strcmp(p, want) : !p;

	free(p);
	return ok;
}

static void local_urls(void)
{
	CHECK(path_is("/srv/git/a.git", "/srv/git/a.git"));
	CHECK(path_is("rel/a", "rel/a"));
	CHECK(path_is("file:///srv/a%20b.git", "/srv/a b.git"));
	CHECK(path_is("file://localhost/srv/a", "/srv/a"));
	CHECK(path_is("file:///x%2", "/x%2"));
	CHECK(path_is("file://otherhost/srv/a", NULL));
	CHECK(path_is("https://example.com/a.git", NULL));
	CHECK(path_is("git@example.com:a.git", NULL));
	CHECK(path_is("/odd:path", NULL)); /* libgit2 takes it for ssh */
}

static bool rebased_is(const char *url, const char *want)
{
	char *r = gitlocal_rebase(url, "/workspace", "/run/sbxfs-1/workspace");
	bool ok = !strcmp(r, want);

	free(r);
	return ok;
}

static void rebase(void)
{
	CHECK(rebased_is("/workspace/a", "/run/sbxfs-1/workspace/a"));
	CHECK(rebased_is("/workspace", "/run/sbxfs-1/workspace"));
	CHECK(rebased_is("file:///workspace/a%2520b", "file:///run/sbxfs-1/workspace/a%2520b"));
	CHECK(rebased_is("file://localhost/workspace/x", "file:///run/sbxfs-1/workspace/x"));
	CHECK(rebased_is("/workspacex/a", "/workspacex/a"));
	CHECK(rebased_is("/srv/a", "/srv/a"));
	CHECK(rebased_is("rel/workspace/a", "rel/workspace/a"));
	CHECK(rebased_is("https://h/workspace/a", "https://h/workspace/a"));
}

static void roots(void)
{
	char base[] = "/tmp/sbxfs-test-gitlocal-XXXXXX", p[512], q[512];
	char *list[3] = {NULL, NULL, NULL};

	if (!mkdtemp(base))
		abort();
	snprintf(p, sizeof(p), "%s/root", base);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/root/repo", base);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/other", base);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/root/out", base); /* a symlink inside, leading out */
	snprintf(q, sizeof(q), "%s/other", base);
	CHECK(symlink(q, p) == 0);
	snprintf(p, sizeof(p), "%s/rootlink", base); /* a symlink outside, leading in */
	snprintf(q, sizeof(q), "%s/root", base);
	CHECK(symlink(q, p) == 0);

	snprintf(p, sizeof(p), "%s/root", base);
	list[0] = p;
	snprintf(q, sizeof(q), "%s/root/repo", base);
	CHECK(gitlocal_check(q, list) == 0);
	CHECK(gitlocal_check(p, list) == 0);
	snprintf(q, sizeof(q), "%s/root/missing/deeper", base);
	CHECK(gitlocal_check(q, list) == 0);
	snprintf(q, sizeof(q), "%s/rootlink/repo", base);
	CHECK(gitlocal_check(q, list) == 0);
	snprintf(q, sizeof(q), "%s/root/out", base);
	CHECK(gitlocal_check(q, list) == -EACCES);
	snprintf(q, sizeof(q), "%s/root/../other", base);
	CHECK(gitlocal_check(q, list) == -EACCES);
	snprintf(q, sizeof(q), "%s/rootx", base); /* a prefix of the name is not below it */
	CHECK(gitlocal_check(q, list) == -EACCES);
	CHECK(gitlocal_check("/etc", list) == -EACCES);
	CHECK(gitlocal_check("/nonexistent/x", list) == -EACCES);
	list[0] = NULL;
	snprintf(q, sizeof(q), "%s/root/repo", base);
	CHECK(gitlocal_check(q, list) == -EACCES);

	snprintf(q, sizeof(q), "rm -rf '%s'", base);
	CHECK(system(q) == 0);
}

int main(void)
{
	local_urls();
	rebase();
	roots();
	return check_done();
}
