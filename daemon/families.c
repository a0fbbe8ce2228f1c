// SPDX-License-Identifier: MIT
/* The array of families (family.h) made from the one list of them,
 * common/families.def, and the walks over it. */
#include "config.h"

#include "daemon/family.h"
#include "daemon/objects.h"

/* Each family's own file defines it; no family's header is needed here. */
#define FAMILY(f, F) extern const struct family f##_family;
#include "common/families.def"

const struct family *const families[FAMILY_COUNT] = {
	[FAMILY_OBJECTS] = &objects_family,
#define FAMILY(f, F) [FAMILY_##F] = &f##_family,
#include "common/families.def"
};

int families_init(struct server *srv)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++) {
		int ret = families[i]->init ? families[i]->init(srv) : 0;

		if (ret < 0)
			return ret;
	}
	return 0;
}

void families_fini(struct server *srv)
{
	for (unsigned int i = FAMILY_COUNT; i-- > 0;)
		if (families[i]->fini)
			families[i]->fini(srv);
}

const struct handler *families_request(unsigned int body_case)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		for (unsigned int k = 0; k < families[i]->n_requests; k++)
			if (families[i]->requests[k].body_case == body_case)
				return families[i]->requests[k].handler;
	return NULL;
}

void families_configure(struct server *srv)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->configure)
			families[i]->configure(srv);
}

void families_session_closing(struct conn *c)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->session_closing)
			families[i]->session_closing(c);
}

void families_device_gone(struct server *srv, struct device *dev,
			  const char *reason)
{
	for (unsigned int i = FAMILY_COUNT; i-- > 0;)
		if (families[i]->device_gone)
			families[i]->device_gone(srv, dev, reason);
}

void families_ctx_closed(struct server *srv, const struct dctx *x)
{
	for (unsigned int i = 0; i < FAMILY_COUNT; i++)
		if (families[i]->ctx_closed)
			families[i]->ctx_closed(srv, x);
}
