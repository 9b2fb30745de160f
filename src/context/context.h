/* Code interpreter contexts: named, sandbox-wide interpreters (Python, JavaScript, TypeScript)
 * that run cells one at a time, in order, each with its output and displayed values. A context's
 * driver runs inside the sandbox through the launcher, in a cgroup of its own. Every function
 * takes the core lock itself. */
#ifndef SBX_CONTEXT_H
#define SBX_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cell.h"
#include "config.h"

#define CONTEXT_NAME_MAX 64
/* Contexts at once: a mkdir or clone past it is ENOSPC. */
#define CONTEXT_MAX 16
/* Cells waiting behind the running one: a write of code past it is EAGAIN. */
#define CONTEXT_QUEUE_MAX 16
/* Serials of contexts made, and cells of one context: their inode numbers carry them. Past
 * them, a new one is ENOSPC. */
#define CONTEXT_SERIAL_MAX ((1u << 19) - 1)
#define CONTEXT_CELLS_MAX  ((1u << 22) - 1)
/* Bytes of displayed values a context's history keeps in memory: past it the oldest cells
 * leave the history early. */
#define CONTEXT_RESULTS_MAX (64u << 20)
/* Bytes of one cell's code. */
#define CONTEXT_CODE_MAX (1u << 20)

struct context;

struct context_info {
	char name[CONTEXT_NAME_MAX + 1];
	uint32_t serial;
};

enum context_attr { CA_LANGUAGE, CA_CWD, CA_ENV, CA_TIMEOUT };

/* Drivers are looked for next to self_exe, then in libexec. */
void contexts_set_exe(const char *self_exe);
struct identity;

/* workspace: the workspace as the sandbox sees it (the default cwd and HOME); id: the sandbox's
 * user, who owns the driver's pipes (it reopens them through /proc), NULL for the daemon's. */
void contexts_init(const struct config *cfg, const char *spool_dir, const char *workspace,
		   const struct identity *id);
void contexts_shutdown(void);

/* -EINVAL for a bad name, -EEXIST, -ENOSPC past CONTEXT_MAX. */
int context_create(const char *name);
/* Its name, fixed for its life. */
const char *context_name(const struct context *c);
/* A new context with a fresh name, written to name (CONTEXT_NAME_MAX + 1 bytes). */
int context_clone(char *name);
/* Kills its driver (queued and running cells end "killed") and forgets it; -ENOENT. */
int context_remove(const char *name);
struct context *context_find(const char *name);
struct context *context_find_serial(uint32_t serial);
void context_unref(struct context *c);
/* Sorted by creation; caller frees *v. */
size_t context_list(struct context_info **v);
uint32_t context_serial(const struct context *c);
struct timespec context_ctime(const struct context *c);

/* The file's text, with a newline; caller frees. */
char *context_attr(struct context *c, enum context_attr a, size_t *len);
/* Checks (c NULL: the text only) or sets an attribute. language, cwd and env: -EBUSY once a
 * cell was submitted; language: -EINVAL unknown, -ENOENT its driver or runtime is missing;
 * cwd: -EINVAL not absolute; env: -EINVAL bad line, -EFBIG past the env bounds; timeout:
 * -EINVAL not a number of ms. */
int context_set_attr(struct context *c, enum context_attr a, const char *buf, size_t len);

/* What context_set_attr would answer, touching nothing. */
int context_check_attr(struct context *c, enum context_attr a, const char *buf, size_t len);

/* Queues a cell; its number to *n. -EINVAL for a NUL byte, -EILSEQ for code that is not
 * UTF-8, -EFBIG over CONTEXT_CODE_MAX, -EAGAIN with CONTEXT_QUEUE_MAX cells waiting, -ENOENT
 * once removed, -ENOSPC if its output spools cannot be made. */
int context_submit(struct context *c, const char *code, size_t len, unsigned *n);
/* "interrupt", "kill", "restart", "timeout MS": -EINVAL; interrupt and kill: -ESRCH with
 * nothing running. c NULL: whether it would take the line (0 or -EINVAL), touching nothing. */
int context_ctl(struct context *c, const char *line, size_t len);
/* "key value" lines; caller frees. */
char *context_status(struct context *c, size_t *len);
/* Cell n (0: the latest), referenced; NULL if not kept. */
struct cell *context_cell(struct context *c, unsigned n);
/* Numbers of the cells kept, oldest first; caller frees. */
size_t context_cells(struct context *c, unsigned **ns);

#endif
