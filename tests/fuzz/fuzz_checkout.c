/* Fuzz target: a session's checkout line (src/session/checkout.c) and where its clone lands.
 * Properties: a parsed request has no blank or option-like (leading '-') URL or branch, and its
 * canonical form (URL, then branch=, dir=, depth= as set) parses to the same request; a trailing
 * newline changes nothing; the repository name is one path component; a resolved target lies
 * inside the workspace, holds no "." or ".." components, and resolves to itself again. */
#include <errno.h>

#include "checkout.h"
#include "fuzz.h"
#include "xmalloc.h"

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_word(const char *w)
{
	FUZZ_ASSERT(w[0] && !strpbrk(w, " \t\n"));
}

static char *canonical(const struct checkout_req *req)
{
	char *s = xstrdup(req->url), *t;

	if (req->branch) {
		t = xasprintf("%s branch=%s", s, req->branch);
		free(s);
		s = t;
	}
	if (req->dir) {
		t = xasprintf("%s dir=%s", s, req->dir);
		free(s);
		s = t;
	}
	if (req->depth) {
		t = xasprintf("%s depth=%ld", s, req->depth);
		free(s);
		s = t;
	}
	return s;
}

static void check_request(const struct checkout_req *req)
{
	struct checkout_req again;
	char *canon;

	check_word(req->url);
	FUZZ_ASSERT(req->url[0] != '-');
	if (req->branch) {
		check_word(req->branch);
		FUZZ_ASSERT(req->branch[0] != '-');
	}
	if (req->dir)
		check_word(req->dir);
	FUZZ_ASSERT(req->depth >= 0);
	canon = canonical(req);
	FUZZ_ASSERT(checkout_parse(canon, strlen(canon), &again) == 0);
	FUZZ_ASSERT(same_str(again.url, req->url) && same_str(again.branch, req->branch) &&
		    same_str(again.dir, req->dir) && again.depth == req->depth);
	checkout_req_free(&again);
	free(canon);
}

static void check_component(const char *rel)
{
	char *copy = xstrdup(rel), *save, *part;

	FUZZ_ASSERT(rel[0] != '/' && !strstr(rel, "//"));
	FUZZ_ASSERT(!rel[0] || rel[strlen(rel) - 1] != '/');
	for (part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save))
		FUZZ_ASSERT(strcmp(part, ".") && strcmp(part, ".."));
	free(copy);
}

static void check_resolve(const char *ws, const char *cwd, const char *dir)
{
	char *rel = checkout_resolve(ws, cwd, dir), *abs, *again;

	if (!rel)
		return;
	check_component(rel);
	abs = xasprintf("%s/%s", strcmp(ws, "/") ? ws : "", rel);
	again = checkout_resolve(ws, "/", abs);
	FUZZ_ASSERT(again && !strcmp(again, rel));
	free(again);
	free(abs);
	free(rel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkout_req req, nl;
	char *more, *name;
	int rc = checkout_parse((const char *)data, size, &req);

	FUZZ_ASSERT(rc == 0 || rc == -EINVAL);
	more = fuzz_line(data, size);
	FUZZ_ASSERT(checkout_parse(more, size + 1, &nl) == rc);
	free(more);
	if (rc < 0)
		return 0;
	checkout_req_free(&nl);
	check_request(&req);
	name = checkout_repo_name(req.url);
	if (name) {
		FUZZ_ASSERT(name[0] && !strchr(name, '/') && strcmp(name, ".") &&
			    strcmp(name, ".."));
		check_resolve("/workspace", "/workspace/a/b", name);
	}
	if (req.dir) {
		check_resolve("/workspace", "/workspace/a/b", req.dir);
		check_resolve("/workspace", "/workspace", req.dir);
		check_resolve("/", "/", req.dir);
		check_resolve("/srv/ws", "/srv/ws/x", req.dir);
	}
	free(name);
	checkout_req_free(&req);
	return 0;
}
