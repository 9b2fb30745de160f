/* Parsing signal names and numbers. */
#include "signame.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int signal_parse(const char *name, int *sig)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"HUP", SIGHUP},   {"INT", SIGINT},	   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
		    {"USR1", SIGUSR1}, {"USR2", SIGUSR2},  {"TERM", SIGTERM}, {"ALRM", SIGALRM},
		    {"CONT", SIGCONT}, {"STOP", SIGSTOP},  {"ABRT", SIGABRT}, {"PIPE", SIGPIPE},
		    {"TSTP", SIGTSTP}, {"WINCH", SIGWINCH}};
	char *end;
	long v;

	if (!strncasecmp(name, "SIG", 3))
		name += 3;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (!strcasecmp(name, sigs[i].name)) {
			*sig = sigs[i].sig;
			return 0;
		}
	}
	v = strtol(name, &end, 10);
	if (end == name || *end || v < 1 || v >= NSIG)
		return -EINVAL;
	*sig = (int)v;
	return 0;
}
