/* The dynamic loader a context's driver is executed through, so that the driver is never
 * dumpable: a process of the sandbox's user may then not ptrace it, read or write its memory,
 * nor open its descriptors through /proc, from its very first instruction on.
 *
 * A process is made not dumpable at exec when the file executed is one its user cannot read
 * (the kernel's would_dump), and stays so across everything it does short of another exec.
 * The interpreter of a driver (python3, node) is readable, and made undumpable only after its
 * exec, by itself, another process of the same user could take hold of it in between. So the
 * daemon executes instead the interpreter's dynamic loader, from a sealed copy that the sandbox
 * may execute but not read, and has it run the interpreter: "/proc/self/fd/N INTERPRETER ARGS". */
#ifndef SBX_CONTEXT_LOADER_H
#define SBX_CONTEXT_LOADER_H

/* A descriptor of such a copy of the loader that the ELF executable at path names (its
 * PT_INTERP), or -errno (-ENOEXEC: path is not a dynamically linked ELF of this machine). */
int context_loader_open(const char *path);

#endif
