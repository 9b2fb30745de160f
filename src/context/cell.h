/* A cell: one piece of code run in a context, with its output spools (a run's), the values it
 * displayed in each format, its error, and its end state. Reference-counted: the context's
 * history and every open file of it hold one. */
#ifndef SBX_CELL_H
#define SBX_CELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "context_frame.h"
#include "run.h"
#include "waiter.h"

/* Bytes of displayed values a cell keeps (all formats); past it further values are dropped and
 * its status says results_dropped. */
#define CELL_RESULTS_MAX (32u << 20)
/* Displayed values a cell keeps. */
#define CELL_RESULTS_COUNT 1000

enum cell_state {
	CELL_QUEUED,
	CELL_RUNNING,
	CELL_DONE,
	CELL_ERROR,
	CELL_TIMEOUT,
	CELL_INTERRUPTED,
	CELL_KILLED,
};

struct cell_result {
	char *data[CTX_FORMATS]; /* as the driver sent it: base64 for the binary formats */
	size_t len[CTX_FORMATS];
	bool main;
};

struct cell {
	int refs;
	unsigned n;
	struct run *run; /* the code, the output spools, the end (doneq) */
	enum cell_state st;
	struct cell_result *res;
	size_t nres;
	size_t res_bytes;
	bool res_dropped;
	char *err_name, *err_value, *err_tb;
	TAILQ_ENTRY(cell) link; /* the context's cells, oldest first */
};

/* NULL and *err if its spools cannot be made. */
struct cell *cell_new(unsigned n, const char *code, size_t len, const char *spool_base,
		      uint64_t output_cap, int *err);
void cell_ref(struct cell *c);
void cell_unref(struct cell *c);
const char *cell_state_name(enum cell_state st);

/* Core lock held. */
void cell_add_result(struct cell *c, struct ctx_event *ev);
/* The first error counts; later ones are dropped. Takes the strings. */
void cell_set_error(struct cell *c, char *name, char *value, char *tb);
/* Sets the end state and ends its run (its readers wake). */
void cell_finish(struct cell *c, enum cell_state st);

/* Take the core lock. */
/* 0 once the cell ended, else -EAGAIN (w queued if given). */
int cell_wait(struct cell *c, struct waiter *w);
/* "key value" lines; caller frees. */
char *cell_status(struct cell *c, size_t *len);
/* The error file: "" or name, value and the traceback, one per line; caller frees. */
char *cell_error_text(struct cell *c, size_t *len);
/* The result JSON (SDK shape) of an ended cell; -EIO if a spool cannot be read back. */
int cell_result_json(struct cell *c, char **text, size_t *len);
/* Format f of displayed value k, as its file holds it (binary formats decoded): -ENOENT. */
int cell_result_file(struct cell *c, unsigned k, unsigned f, char **data, size_t *len);
/* Whether value k has format f. */
bool cell_result_has(struct cell *c, unsigned k, unsigned f);
size_t cell_result_count(struct cell *c);

#endif
