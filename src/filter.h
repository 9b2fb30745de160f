/* The seccomp filter every sandboxed process runs under, built with libseccomp and handed to
 * bwrap (--seccomp FD) as a BPF program in a memfd. */
#ifndef SBX_FILTER_H
#define SBX_FILTER_H

/* A memfd holding the BPF program, or -errno. */
int filter_bpf_fd(void);

#endif
