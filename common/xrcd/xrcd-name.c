// SPDX-License-Identifier: MIT
/* The rule for XRCD names (xrcd-name.h states it). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/text/text.h"
#include "common/xrcd/xrcd-name.h"

/* Characters that show as nothing, so that two names that look the same
 * could differ. */
static bool xrcd_name_invisible(uint32_t cp)
{
	return cp == 0xad || cp == 0x61c || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2060 && cp <= 0x2064) || cp == 0xfeff;
}

/* What is wrong with the @len bytes at @name, into @why; 0 when nothing
 * is. */
static int xrcd_name_problem(const char *name, size_t len, char *why,
			     size_t size)
{
	if (len == 0) {
		snprintf(why, size, "it is empty");
		return -EINVAL;
	}
	if (len > XRCD_NAME_MAX) {
		snprintf(why, size, "it is longer than %d bytes",
			 XRCD_NAME_MAX);
		return -EINVAL;
	}
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(why, size, "\".\" and \"..\" name directories");
		return -EINVAL;
	}
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = text_utf8_decode(name + i, len - i, &cp);

		if (n < 0) {
			snprintf(why, size,
				 "byte %zu does not start a well-formed UTF-8 "
				 "character",
				 i + 1);
			return -EINVAL;
		}
		if (cp == 0) {
			snprintf(why, size, "byte %zu is a NUL", i + 1);
			return -EINVAL;
		}
		if (cp == '/') {
			snprintf(why, size, "byte %zu is a '/'", i + 1);
			return -EINVAL;
		}
		if (text_is_control(cp) || xrcd_name_invisible(cp)) {
			snprintf(why, size,
				 "byte %zu starts U+%04X, %s character", i + 1,
				 (unsigned int)cp,
				 text_is_control(cp) ?
					 "a control" :
					 "an invisible formatting");
			return -EINVAL;
		}
		i += (size_t)n;
	}
	return 0;
}

/* @name as text_escape_n() shows it, invisible characters escaped too,
 * so that the sentence shows what is wrong. */
static const char *xrcd_name_show(char *buf, size_t size, const char *name,
				  size_t len)
{
	size_t out = 0, start = 0, i = 0;

	buf[0] = '\0';
	while (start < len) {
		uint32_t cp;
		int n = 0;

		/* The next invisible character, or the end. */
		for (; i<len; i += n> 0 ? (size_t)n : 1) {
			n = text_utf8_decode(name + i, len - i, &cp);
			if (n > 0 && xrcd_name_invisible(cp))
				break;
		}
		text_escape_n(buf + out, size - out, name + start, i - start);
		out += strlen(buf + out);
		if (i == len)
			break;
		for (int k = 0; k < n && out + 4 < size; k++)
			out += (size_t)snprintf(buf + out, size - out,
						"\\x%02x",
						(unsigned char)name[i + k]);
		i += (size_t)n;
		start = i;
	}
	return buf;
}

int xrcd_name_check(const char *name, size_t len, char *why, size_t size)
{
	char problem[96], esc[TEXT_ESCAPED_SIZE(XRCD_NAME_MAX)];
	size_t shown = len < XRCD_NAME_MAX ? len : XRCD_NAME_MAX;

	if (xrcd_name_problem(name, len, problem, sizeof(problem)) == 0)
		return 0;
	/* Escaped: the bytes are whoever sent them's. */
	snprintf(why, size,
		 "XRCD name \"%s%s\": %s; a name is 1 to %d bytes of "
		 "printable UTF-8, with no '/', and is not \".\" or \"..\"",
		 xrcd_name_show(esc, sizeof(esc), name, shown),
		 shown < len ? "..." : "", problem, XRCD_NAME_MAX);
	return -EINVAL;
}
