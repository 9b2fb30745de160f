/* Refused system calls (sysnotify.h) in the journal: a "syscall.refused" event each, with the
 * call, the process and its session, at most REFUSED_PER_S a second; past that they are
 * counted, and a "syscall.refused.more" event says how many once the second is over. */
#ifndef SBX_REFUSED_CALLS_H
#define SBX_REFUSED_CALLS_H

#define REFUSED_PER_S 100

void refused_calls_init(void);
/* Core lock held. */
void refused_calls_stop(void);

#endif
