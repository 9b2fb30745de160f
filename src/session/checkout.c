/* Checkout requests (see checkout.h): parsing and path resolution, kept free of processes so
 * they can be unit-tested. */
#include "checkout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

void checkout_req_free(struct checkout_req *req)
{
	free(req->url);
	free(req->branch);
	free(req->dir);
	memset(req, 0, sizeof(*req));
}

static int parse_option(struct checkout_req *req, const char *word)
{
	char *end;

	if (!strncmp(word, "branch=", 7) && word[7] && !req->branch)
		req->branch = xstrdup(word + 7);
	else if (!strncmp(word, "dir=", 4) && word[4] && !req->dir)
		req->dir = xstrdup(word + 4);
	else if (!strncmp(word, "depth=", 6) && word[6] && !req->depth) {
		req->depth = strtol(word + 6, &end, 10);
		if (*end || req->depth <= 0)
			return -EINVAL;
	} else
		return -EINVAL;
	return 0;
}

int checkout_parse(const char *line, size_t len, struct checkout_req *req)
{
	char *copy, *save, *word;
	int rc = 0;

	memset(req, 0, sizeof(*req));
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' '))
		len--;
	if (len == 0 || memchr(line, '\0', len) || memchr(line, '\n', len))
		return -EINVAL;
	copy = xstrndup(line, len);
	word = strtok_r(copy, " \t", &save);
	if (!word) { /* only blanks: no URL */
		free(copy);
		return -EINVAL;
	}
	req->url = xstrdup(word);
	while (rc == 0 && (word = strtok_r(NULL, " \t", &save)))
		rc = parse_option(req, word);
	free(copy);
	if (rc == 0 && (req->url[0] == '-' || (req->branch && req->branch[0] == '-')))
		rc = -EINVAL; /* they become sbxfs-git arguments: no options */
	if (rc < 0)
		checkout_req_free(req);
	return rc;
}

char *checkout_repo_name(const char *url)
{
	size_t len = strlen(url);
	const char *start;
	char *name;

	while (len > 0 && url[len - 1] == '/')
		len--;
	start = url + len;
	while (start > url && start[-1] != '/' && start[-1] != ':')
		start--;
	name = xstrndup(start, (size_t)(url + len - start));
	if (strlen(name) > 4 && !strcmp(name + strlen(name) - 4, ".git"))
		name[strlen(name) - 4] = '\0';
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..")) {
		free(name);
		return NULL;
	}
	return name;
}

/* Appends path's components to out, applying "." and ".."; false if ".." leaves "/". */
static int append_components(char *out, const char *path)
{
	char *copy = xstrdup(path), *save, *part;
	int ok = 1;

	for (part = strtok_r(copy, "/", &save); part && ok; part = strtok_r(NULL, "/", &save)) {
		if (!strcmp(part, "."))
			continue;
		if (!strcmp(part, "..")) {
			char *slash = strrchr(out, '/');

			if (!slash || out[0] == '\0')
				ok = 0;
			else
				*slash = '\0';
			continue;
		}
		strcat(out, "/");
		strcat(out, part);
	}
	free(copy);
	return ok;
}

char *checkout_source_in(const char *cwd, const char *url)
{
	if (!url[0] || url[0] == '/' || strchr(url, ':'))
		return NULL;
	return xasprintf("%s%s%s", cwd, cwd[strlen(cwd) - 1] == '/' ? "" : "/", url);
}

char *checkout_resolve(const char *ws, const char *cwd, const char *dir)
{
	size_t wslen = strlen(ws);
	char *out = xcalloc(1, strlen(cwd) + strlen(dir) + 3);
	char *rel = NULL;

	if (dir[0] != '/' && !append_components(out, cwd))
		goto done;
	if (!append_components(out, dir))
		goto done;
	/* Inside means ws itself or below it, component-wise. */
	if (!strcmp(ws, "/"))
		rel = xstrdup(out[0] ? out + 1 : "");
	else if (!strncmp(out, ws, wslen) && (out[wslen] == '\0' || out[wslen] == '/'))
		rel = xstrdup(out[wslen] ? out + wslen + 1 : "");
done:
	free(out);
	return rel;
}
