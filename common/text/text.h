/* SPDX-License-Identifier: MIT */
/*
 * Shared by the daemon and rdmabrokerctl: text that came from another
 * process (a client's process name or library version, the broker's names
 * and sentences), checked as UTF-8 and made safe to show on a terminal or
 * write to a log.
 */
#ifndef RDMAB_TEXT_H
#define RDMAB_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decode the well-formed UTF-8 character at @s, of at most @n bytes: its
 * length (1 to 4) with *ret_cp set, or -EILSEQ for a byte that does not
 * start one (a stray continuation, an overlong form, a surrogate, beyond
 * U+10FFFF, or a sequence cut short).
 */
int text_utf8_decode(const char *s, size_t n, uint32_t *ret_cp);

/*
 * Characters a terminal or a log reader acts on instead of showing: C0
 * controls, DEL, C1 controls (U+0080-U+009F, which include CSI), the line
 * and paragraph separators U+2028 and U+2029, and the bidirectional
 * embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) that
 * reorder what follows them.
 */
bool text_is_control(uint32_t cp);

/*
 * Find the first byte of @s (NUL-terminated) that is not part of printable
 * UTF-8, that is, starts no well-formed character or starts one that
 * text_is_control(): 1 with its offset in *ret_offset, 0 when there is
 * none.
 */
int text_find_unsafe(const char *s, size_t *ret_offset);

/* Room for the escaped form of @n bytes, NUL included. */
#define TEXT_ESCAPED_SIZE(n) (4 * (n) + 1)

/*
 * Write @s into @buf (of @size > 0 bytes) as printable text: a backslash
 * becomes "\\", each byte of a control character (text_is_control()) and
 * each byte that is not part of well-formed UTF-8 becomes "\xNN"; the rest
 * is copied. The result is NUL-terminated and cut before an escape or a
 * character that does not fit whole (TEXT_ESCAPED_SIZE() always fits).
 * Returns @buf.
 */
const char *text_escape(char *buf, size_t size, const char *s);
/* text_escape() of the @n bytes at @s, which may hold a NUL ("\x00"). */
const char *text_escape_n(char *buf, size_t size, const char *s, size_t n);

#endif
