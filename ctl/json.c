// SPDX-License-Identifier: MIT
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "common/text/text.h"
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

static void json_newline(FILE *f, int depth)
{
	fputc('\n', f);
	for (int i = 0; i < depth; i++)
		fputs("  ", f);
}

/* Only the commands' own output comes here: strings are already escaped
 * (json_string()), so a quote inside one is always after a backslash. */
void json_pretty(FILE *f, const char *s, size_t len)
{
	bool in_string = false;
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			fputc(c, f);
			if (c == '\\' && i + 1 < len)
				fputc(s[++i], f);
			else if (c == '"')
				in_string = false;
			continue;
		}
		switch (c) {
		case '"':
			in_string = true;
			fputc(c, f);
			break;
		case '{':
		case '[':
			fputc(c, f);
			/* An empty one stays on its line: "[]". */
			if (i + 1 < len &&
			    (s[i + 1] == '}' || s[i + 1] == ']')) {
				fputc(s[++i], f);
				break;
			}
			json_newline(f, ++depth);
			break;
		case '}':
		case ']':
			json_newline(f, --depth);
			fputc(c, f);
			break;
		case ',':
			fputc(c, f);
			json_newline(f, depth);
			break;
		case ':':
			fputs(": ", f);
			break;
		default:
			fputc(c, f);
		}
	}
}

void json_list(FILE *f, const char *s)
{
	char item[256];

	fputc('[', f);
	for (bool first = true; *s;) {
		size_t len = strcspn(s, ",");

		while (len && s[len - 1] == ' ')
			len--;
		if (len) {
			if (len >= sizeof(item))
				len = sizeof(item) - 1;
			memcpy(item, s, len);
			item[len] = '\0';
			if (!first)
				fputc(',', f);
			json_string(f, item);
			first = false;
		}
		s += strcspn(s, ",");
		s += strspn(s, ", ");
	}
	fputc(']', f);
}
