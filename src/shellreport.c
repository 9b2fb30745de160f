/* Parsing the session driver's reports (see shell.h): what the shell in the sandbox writes back
 * on fd 4, kept apart from the pipes and the loop so it can be fuzzed. */
#include "shell.h"

#include <stdlib.h>
#include <string.h>

size_t shell_report_parse(const char *buf, size_t len, struct shell_report *rep)
{
	const char *fields[3], *eq;
	size_t pos = 0, nf = 0;

	envlist_init(&rep->env);
	while (pos < len) {
		const char *f = buf + pos;
		const char *z = memchr(f, '\0', len - pos);

		if (!z)
			break;
		pos = (size_t)(z - buf) + 1;
		if (nf < 3) {
			fields[nf++] = f;
			continue;
		}
		if (z == f) {
			rep->seq = fields[0];
			rep->status = atoi(fields[1]);
			rep->cwd = fields[2];
			return pos;
		}
		eq = strchr(f, '=');
		/* bash exports valid names only: anything else was written by someone else, and a
		 * name with a newline would forge a line of the env file */
		if (eq && env_name_valid(f, (size_t)(eq - f)))
			envlist_put(&rep->env, f);
	}
	envlist_free(&rep->env);
	return 0;
}
