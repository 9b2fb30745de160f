/* Signal names as ctl and signal files take them, as users write them ("TERM", "SIGTERM",
 * "term" or "15"). */
#ifndef SBX_SIGNAME_H
#define SBX_SIGNAME_H

int signal_parse(const char *name, int *sig);

#endif
