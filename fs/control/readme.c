/* The mount's README: the control part's lines, from its rows, and the text the file reads,
 * which fs/root.c makes once at start from every part's lines. */
#include "ctl.h"
#include "ctlkind.h"

const char *readme_text = "";

/* The directories a row's where puts it in. */
static const struct {
	int where;
	const char *dir;
} places[] = {
    {IN_ROOT, ""},
    {IN_NET, "network/"},
    {IN_SESSION, "sessions/ID/"},
    {IN_RUN, "sessions/ID/runs/N/"},
    {IN_JOB, "sessions/ID/procs/NAME/"},
};

void ctl_help(struct help *h)
{
	for (int k = 0; k < K_MAX; k++) {
		const struct kind_info *r = kind_row(k);
		bool is_dir = S_ISDIR(r->mode);

		if (!r->help)
			continue;
		if (r->path)
			help_add(h, r->path, "", false, r->help);
		for (size_t i = 0; i < sizeof(places) / sizeof(places[0]) && !r->path; i++)
			if (r->where & places[i].where)
				help_add(h, places[i].dir, r->name, is_dir, r->help);
	}
}

void ctl_set_readme(const char *text)
{
	readme_text = text;
}
