// SPDX-License-Identifier: MIT
/*
 * UTF-8 checks and terminal-safe escaping (text.h), for the daemon's log
 * lines and rdmabrokerctl's output alike.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/text/text.h"

int text_utf8_decode(const char *s, size_t n, uint32_t *ret_cp)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp, min;
	size_t len;

	if (n == 0)
		return -EILSEQ;
	if (p[0] < 0x80) {
		*ret_cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
		min = 0x10000;
	} else {
		/* A continuation byte, 0xc0 and 0xc1 (always overlong) or
		 * 0xf5 and above (beyond U+10FFFF). */
		return -EILSEQ;
	}
	if (n < len)
		return -EILSEQ;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -EILSEQ;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -EILSEQ;
	*ret_cp = cp;
	return (int)len;
}

bool text_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
	       cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

int text_find_unsafe(const char *s, size_t *ret_offset)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int len = text_utf8_decode(s + i, n - i, &cp);

		if (len < 0 || text_is_control(cp)) {
			*ret_offset = i;
			return 1;
		}
		i += (size_t)len;
	}
	return 0;
}

const char *text_escape(char *buf, size_t size, const char *s)
{
	return text_escape_n(buf, size, s, strlen(s));
}

const char *text_escape_n(char *buf, size_t size, const char *s, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int len = text_utf8_decode(s + i, n - i, &cp);
		size_t bad = 0;

		/* Escaped byte by byte: a bad byte, or a control character
		 * whole. */
		if (len < 0)
			bad = 1;
		else if (text_is_control(cp))
			bad = (size_t)len;
		if (bad) {
			if (out + 4 * bad >= size)
				break;
			for (size_t k = 0; k < bad; k++)
				out += (size_t)snprintf(
					buf + out, size - out, "\\x%02x",
					(unsigned char)s[i + k]);
			i += bad;
		} else if (s[i] == '\\') {
			if (out + 2 >= size)
				break;
			buf[out++] = '\\';
			buf[out++] = '\\';
			i++;
		} else {
			if (out + (size_t)len >= size)
				break;
			memcpy(buf + out, s + i, (size_t)len);
			out += (size_t)len;
			i += (size_t)len;
		}
	}
	buf[out] = '\0';
	return buf;
}
