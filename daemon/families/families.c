// SPDX-License-Identifier: MIT
/* The array of families (family.h) made from the one list of them,
 * common/families.def, and the walks over it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/families/family.h"
#include "daemon/restart/journal.h"
#include "daemon/registry/objects.h"

/* Each family's own file defines it; no family's header is needed here. */
#define FAMILY(f, F) extern const struct family f##_family;
#include "common/families.def"

const struct family *const families[FAMILY_COUNT] = {
	[FAMILY_OBJECTS] = &objects_family,
#define FAMILY(f, F) [FAMILY_##F] = &f##_family,
#include "common/families.def"
};

/* Each family's journal kinds are its own: a record read back must reach
 * the family that wrote it. */
static int families_journal_check(void)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		unsigned int a = families[i]->journal_first;

		if (!a)
			continue;
		if (a < JOURNAL_FAMILY_FIRST ||
		    a + JOURNAL_FAMILY_KINDS - 1 > JOURNAL_KIND_MAX)
			return -EINVAL;
		for (unsigned int k = 0; k < i; k++) {
			unsigned int b = families[k]->journal_first;

			if (b && a < b + JOURNAL_FAMILY_KINDS &&
			    b < a + JOURNAL_FAMILY_KINDS)
				return -EINVAL;
		}
	}
	return 0;
}

int families_init(struct core *core)
{
	int ret = families_journal_check();

	if (ret < 0)
		return ret;
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		ret = families[i]->init ? families[i]->init(core) : 0;
		if (ret < 0)
			return ret;
	}
	return 0;
}

void families_fini(struct core *core)
{
	for (unsigned int i = FAMILY_COUNT; i-- > 0;)
		if (families[i]->fini)
			families[i]->fini(core);
}

const struct handler *families_request(unsigned int body_case)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		for (unsigned int k = 0;
		     families[i]->requests && families[i]->requests[k].handler;
		     k++)
			if (families[i]->requests[k].body_case == body_case)
				return families[i]->requests[k].handler;
	return NULL;
}

void families_configure(struct core *core)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->configure)
			families[i]->configure(core);
}

void families_session_closing(struct client *c)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->session_closing)
			families[i]->session_closing(c);
}

void families_device_gone(struct core *core, struct device *dev,
			  const char *reason)
{
	for (unsigned int i = FAMILY_COUNT; i-- > 0;)
		if (families[i]->device_gone)
			families[i]->device_gone(core, dev, reason);
}

void families_ctx_closed(struct core *core, const struct dctx *x)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->ctx_closed)
			families[i]->ctx_closed(core, x);
}

#define REKEY_MORE " ..."

void rekey_name_add(char *buf, size_t len, const char *item)
{
	size_t at = strlen(buf), n = strlen(item);

	if (at >= strlen(REKEY_MORE) &&
	    strcmp(buf + at - strlen(REKEY_MORE), REKEY_MORE) == 0)
		return;
	/* Room for the separator, the item, and " ..." after them. */
	if (at + 2 + n + strlen(REKEY_MORE) < len)
		snprintf(buf + at, len - at, "%s%s", at ? ", " : "", item);
	else if (at + strlen(REKEY_MORE) < len)
		snprintf(buf + at, len - at, "%s", REKEY_MORE);
}

void families_hello(struct client *c, const struct Rdmab__HelloRequest *hr)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->hello)
			families[i]->hello(c, hr);
}

void families_session_save(const struct client *c,
			   struct Rdmab__State__Session *m)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->session_save)
			families[i]->session_save(c, m);
}

void families_session_restore(struct client *c,
			      const struct Rdmab__State__Session *m)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->session_restore)
			families[i]->session_restore(c, m);
}

void families_ctx_save(const struct dctx *x, struct Rdmab__State__Context *m)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->ctx_save)
			families[i]->ctx_save(x, m);
}

void families_ctx_restore(struct core *core, struct dctx *x,
			  const struct Rdmab__State__Context *m)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->ctx_restore)
			families[i]->ctx_restore(core, x, m);
}

void families_device_caps(const struct client *c, const struct device *dev,
			  struct Rdmab__DeviceCaps *caps)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->device_caps)
			families[i]->device_caps(c, dev, caps);
}
