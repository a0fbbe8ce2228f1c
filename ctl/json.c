// SPDX-License-Identifier: MIT
#include "config.h"

#include <string.h>

#include "common/text.h"
#include "ctl/ctl.h"

/*
 * Always valid JSON, whatever the bytes: what the broker sends is not
 * checked as UTF-8 on the way (a client's process name is any 15 bytes),
 * and a terminal reading the output acts on raw control characters.
 */
void json_string(FILE *f, const char *s)
{
	size_t n = strlen(s);

	fputc('"', f);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int len = text_utf8_decode(s + i, n - i, &cp);

		if (len < 0) {
			/* One replacement character per byte that is not
			 * UTF-8. */
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		i += (size_t)len;
		switch (cp) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (text_is_control(cp))
				fprintf(f, "\\u%04x", (unsigned int)cp);
			else
				fwrite(s + i - (size_t)len, 1, (size_t)len, f);
		}
	}
	fputc('"', f);
}
