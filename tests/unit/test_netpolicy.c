/* Unit tests: the network policy's text (src/util/netpolicy.c): each line kind, what a bad line
 * is, patterns and ports, deny over allow, wildcards below their domain only, the rendered form,
 * host names as clients give them, and the rule limit. Every line here is input from outside. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "netpolicy.h"
#include "xmalloc.h"

static struct netpolicy parse(const char *text)
{
	struct netpolicy p;
	char err[160];

	CHECK(netpolicy_parse(text, strlen(text), &p, err, sizeof(err)) == 0);
	return p;
}

static bool ok(const char *line)
{
	char err[160];

	return netpolicy_line(line, strlen(line), NULL, err, sizeof(err)) == 0;
}

static const char *decide(const struct netpolicy *p, const char *host, unsigned port)
{
	static char buf[600];
	const struct netrule *r;
	bool allow;
	char *h = xstrdup(host), *text;

	CHECK(netpolicy_host_ok(h));
	allow = netpolicy_decide(p, h, port, &r);
	text = r ? netrule_text(r) : xstrdup("none");
	snprintf(buf, sizeof(buf), "%s %s", allow ? "allow" : "deny", text);
	free(text);
	free(h);
	return buf;
}

static void test_lines(void)
{
	CHECK(ok("mode none") && ok("mode filtered") && ok("mode host"));
	CHECK(ok("") && ok("   ") && ok("# allow anything") && ok("allow a.example\r"));
	CHECK(ok("allow a.example") && ok("allow *.example") && ok("allow *") && ok("allow *:*"));
	CHECK(ok("allow a.example:8080") && ok("allow a.example:*") && ok("deny a.example:1"));
	CHECK(ok("allow a.example private") && ok("allow [2001:db8::1]:443") &&
	      ok("allow 10.0.0.1"));
	CHECK(ok("\tallow\ta.example\t"));
	CHECK(!ok("mode") && !ok("mode bridge") && !ok("mode none filtered"));
	CHECK(!ok("allow") && !ok("deny") && !ok("permit a.example") && !ok("ALLOW a.example"));
	CHECK(!ok("allow a.example:0") && !ok("allow a.example:65536") && !ok("allow a.example:"));
	CHECK(!ok("allow a.example:-1") && !ok("allow a.example:8x") &&
	      !ok("allow a.example:123456"));
	CHECK(!ok("allow *.*.example") && !ok("allow a*.example") && !ok("allow *.") &&
	      !ok("allow **"));
	CHECK(!ok("allow a..example") && !ok("allow .example") && !ok("allow a b"));
	CHECK(!ok("allow a.example..") && ok("allow a.example."));
	CHECK(!ok("deny a.example private") && !ok("allow a.example private extra"));
	CHECK(!ok("allow a.exa$mple") && !ok("allow a/b") && !ok("allow [::1") &&
	      !ok("allow [zz::1]"));
	CHECK(!ok("allow *.[::1]") && !ok("allow [::1]x"));
	CHECK(netpolicy_line("allow a\0b", 9, NULL, (char[64]){0}, 64) == -EINVAL);
	{
		char *long_host = xmalloc(400), *line;

		memset(long_host, 'a', 399);
		long_host[399] = '\0';
		line = xasprintf("allow %s", long_host);
		CHECK(!ok(line));
		free(line);
		free(long_host);
	}
}

static void test_decisions(void)
{
	struct netpolicy p = parse("mode filtered\n"
				   "allow www.example\n"
				   "allow *.wild.example\n"
				   "deny bad.wild.example\n"
				   "allow api.example:8443\n"
				   "allow any.example:*\n"
				   "allow [2001:db8::1]\n");

	CHECK(p.mode == NET_FILTERED && p.has_mode && p.n == 6);
	CHECK(!strcmp(decide(&p, "www.example", 443), "allow allow www.example"));
	CHECK(!strcmp(decide(&p, "WWW.Example.", 80), "allow allow www.example"));
	CHECK(!strcmp(decide(&p, "www.example", 8080), "deny none"));
	CHECK(!strcmp(decide(&p, "a.wild.example", 443), "allow allow *.wild.example"));
	CHECK(!strcmp(decide(&p, "x.a.wild.example", 80), "allow allow *.wild.example"));
	CHECK(!strcmp(decide(&p, "wild.example", 443), "deny none"));
	CHECK(!strcmp(decide(&p, "evilwild.example", 443), "deny none"));
	CHECK(!strcmp(decide(&p, "bad.wild.example", 443), "deny deny bad.wild.example"));
	CHECK(!strcmp(decide(&p, "api.example", 8443), "allow allow api.example:8443"));
	CHECK(!strcmp(decide(&p, "api.example", 443), "deny none"));
	CHECK(!strcmp(decide(&p, "any.example", 22), "allow allow any.example:*"));
	CHECK(!strcmp(decide(&p, "2001:0db8:0::1", 443), "allow allow [2001:db8::1]"));
	netpolicy_free(&p);
	p = parse("allow *.example\nallow reg.example private\n");
	CHECK(!strcmp(decide(&p, "reg.example", 443), "allow allow reg.example private"));
	CHECK(!strcmp(decide(&p, "a.reg.example", 443), "allow allow *.example"));
	netpolicy_free(&p);
	p = parse("allow *\nallow reg.example private\n");
	CHECK(!strcmp(decide(&p, "reg.example", 443), "allow allow reg.example private"));
	CHECK(!strcmp(decide(&p, "other.example", 443), "allow allow *"));
	netpolicy_free(&p);
	p = parse("allow *\ndeny *.internal:*\n");
	CHECK(!p.has_mode && p.mode == NET_NONE);
	CHECK(!strcmp(decide(&p, "anything.example", 80), "allow allow *"));
	CHECK(!strcmp(decide(&p, "db.internal", 443), "deny deny *.internal:*"));
	netpolicy_free(&p);
}

static void test_render_and_hosts(void)
{
	struct netpolicy p = parse("# comment\nmode filtered\n allow  A.Example:8080  private\n"
				   "deny *.x.example:*\nallow *\n");
	size_t len;
	char *text = netpolicy_render(&p, &len);
	char h1[] = "Example.ORG.", h2[] = "a..b", h3[] = "", h4[] = "a b", h5[] = "::ffff:1.2.3.4";

	CHECK(!strcmp(text, "mode filtered\nallow a.example:8080 private\ndeny *.x.example:*\n"
			    "allow *\n"));
	CHECK(len == strlen(text));
	free(text);
	netpolicy_free(&p);
	CHECK(netpolicy_host_ok(h1) && !strcmp(h1, "example.org"));
	CHECK(!netpolicy_host_ok(h2) && !netpolicy_host_ok(h3) && !netpolicy_host_ok(h4));
	CHECK(netpolicy_host_ok(h5) && !strcmp(h5, "::ffff:1.2.3.4"));
}

static void test_whole_texts(void)
{
	struct netpolicy p;
	char err[160];
	const char *bad = "mode filtered\nallow a.example\nallow *.*\n";
	size_t n = 0;
	char *many = xmalloc((size_t)(NETPOLICY_RULES_MAX + 1) * 16), *pos = many;

	CHECK(netpolicy_parse(bad, strlen(bad), &p, err, sizeof(err)) == -EINVAL);
	CHECK(p.n == 0 && !p.rules && strstr(err, "line 3") != NULL);
	for (int i = 0; i <= NETPOLICY_RULES_MAX; i++)
		pos += sprintf(pos, "allow h%d.x\n", i);
	n = (size_t)(pos - many);
	CHECK(netpolicy_parse(many, n - strlen("allow h100000.x\n"), &p, err, sizeof(err)) == 0);
	CHECK(p.n == NETPOLICY_RULES_MAX);
	netpolicy_free(&p);
	CHECK(netpolicy_parse(many, n, &p, err, sizeof(err)) == -E2BIG && p.n == 0);
	free(many);
	CHECK(!strcmp(net_mode_name(NET_HOST), "host"));
}

int main(void)
{
	test_lines();
	test_decisions();
	test_render_and_hosts();
	test_whole_texts();
	return check_done();
}
