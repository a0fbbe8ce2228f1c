// SPDX-License-Identifier: MIT
/* A cgroup path in a listing (clients, domains, objects), as a table cell
 * and as JSON: apart so that the three commands print it alike. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/text/text.h"
#include "ctl/ctl.h"

const char *ctl_cgroup_text(char *buf, size_t size, const char *cgroup,
			    bool truncated)
{
	size_t len;

	if (!*cgroup)
		return "-";
	text_escape(buf, size, cgroup);
	len = strlen(buf);
	/* Outside the escape: a path cannot say it was cut. */
	if (truncated && len + 4 <= size)
		memcpy(buf + len, "...", 4);
	return buf;
}

void json_cgroup(FILE *f, const char *cgroup, bool truncated)
{
	fputs(",\"cgroup\":", f);
	json_string(f, cgroup);
	fprintf(f, ",\"cgroup_truncated\":%s", truncated ? "true" : "false");
}
