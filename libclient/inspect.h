/* SPDX-License-Identifier: MIT */
/*
 * The listings' paging (inspect.c): a listing asks page after page and
 * copies each entry out in the caller's version of its structure. The
 * core's listings are inspect.c's; a family's is in its own file and
 * describes itself with a struct ibc_lister.
 */
#ifndef IBC_INSPECT_H
#define IBC_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "libclient/client.h"

/* A listing: its request (a ListRequest body, or the objects'), how many
 * entries a page holds, and how one is copied out. */
struct ibc_lister {
	Rdmab__Request__BodyCase body_case;
	const char *name;
	/* The library's size of an entry, its first version's, and its
	 * alignment. */
	size_t entry_size, entry_v0, entry_align;
	size_t (*count)(const Rdmab__Reply *reply, uint32_t *ret_total);
	void (*fill)(void *entry, const Rdmab__Reply *reply, size_t i);
};

/* Every page of listing @l (@filter: the objects' listing's) into
 * *@ret_list, entries of @size bytes (the caller's sizeof), *@ret_count
 * of them; the caller frees the list with ibc_list_free(). */
int ibc_list_all(struct ibc_client *client, const struct ibc_lister *l,
		 const struct ibc_object_filter *filter, void **ret_list,
		 size_t size, size_t *ret_count);

#endif
