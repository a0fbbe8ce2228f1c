// SPDX-License-Identifier: MIT
/* What handlers fill a reply with (handler.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "daemon/server/handler.h"

void *reply_alloc(struct reply *r, size_t size)
{
	return wire_arena_alloc(r->arena, size);
}

int reply_error(struct reply *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why.text, sizeof(r->why.text), fmt, ap);
	va_end(ap);
	r->why.err = err;
	return err;
}
