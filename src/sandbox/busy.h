/* Whether anything runs in the sandbox besides what waits for work: a restore refuses (or
 * stops) what runs, and an idle sandbox may sleep (idle.h). */
#ifndef SBX_BUSY_H
#define SBX_BUSY_H

#include <stdbool.h>

/* Whether anything runs in the sandbox but the sessions' idle shells and the contexts' idle
 * interpreters: a command, a background process, a terminal's program, a cell. With stop, all
 * of it is killed (as `killall KILL` would, for each kind). */
bool sandbox_busy(bool stop);

#endif
