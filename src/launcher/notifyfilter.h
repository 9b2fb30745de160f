/* The launcher's seccomp filter: the daemon's program (--filter-fd=N, from
 * filter_notify_bpf_fd) installed on the launcher before it starts anything, so every process
 * of the sandbox has it; its calls that the program names wait for the daemon, which notes and
 * refuses them, through the listener the kernel gives back here and the launcher sends on. */
#ifndef SBX_NOTIFYFILTER_H
#define SBX_NOTIFYFILTER_H

/* Reads the program from fd (closed), installs it: the listener fd, or -errno. */
int notify_filter_install(int fd);

#endif
