/* SPDX-License-Identifier: MIT */
/*
 * The rule for XRCD names, shared by the daemon (requests and the
 * configuration's [xrcd NAME] sections) and the library (which refuses a
 * bad name before sending it): a name is shown in listings and logs and a
 * declared one becomes a file name, so it is printable text, one way only.
 */
#ifndef RDMAB_XRCD_NAME_H
#define RDMAB_XRCD_NAME_H

#include <stddef.h>

/* The longest XRCD name, in bytes. */
#define XRCD_NAME_MAX 64

/* Room for xrcd_name_check()'s sentence. */
#define XRCD_NAME_WHY_SIZE 512

/*
 * Check the @len bytes at @name: 1 to XRCD_NAME_MAX bytes of well-formed
 * UTF-8 with no NUL, no control character (text_is_control(): C0, DEL,
 * C1, line and paragraph separators, bidirectional embeddings, overrides
 * and isolates), no invisible formatting character (soft hyphen, zero
 * width spaces and joiners, direction marks, word joiner, byte order
 * mark), no '/', and not "." or "..". 0, or -EINVAL with a sentence in
 * @why (of @size bytes; NULL with 0) that quotes the name escaped and
 * says what is wrong with it (which byte, when one is).
 */
int xrcd_name_check(const char *name, size_t len, char *why, size_t size);

#endif
