// SPDX-License-Identifier: MIT
/*
 * Requests read and not answered (issue 25 item 3): one slot per
 * connection in a memfd the fd store keeps ("rb.inflight.<gen>"), holding
 * the connection's id and the serial of the request it is serving, set
 * when the request is read and cleared once its reply is in the socket.
 * Two plain stores a request, no journal record: a kill between them
 * leaves the serial, and the next daemon answers it -EAGAIN.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/restart/inflight.h"

#define INFLIGHT_MAGIC 0x544847494c464e49ull /* "INFLIGHT" */
/* Slots a scan reads at once (16 bytes each). */
#define INFLIGHT_SCAN_BLOCK 1024

struct inflight_hdr {
	uint64_t magic;
	uint64_t n;
};

struct inflight {
	/* First: inflight.h's inline stores reach the slots through it. */
	struct inflight_hot hot;
	int fd;
	struct inflight_hdr *hdr;
	size_t map_len;
	uint32_t n;
	/* Free slots, a stack. */
	uint32_t *free;
	uint32_t n_free;
};

_Static_assert(offsetof(struct inflight, hot) == 0,
	       "inflight.h reaches the slots at the table's start");

int inflight_create(uint32_t n, struct inflight **ret)
{
	struct inflight *t = calloc(1, sizeof(*t));
	void *p;
	int err;

	if (!t)
		return -ENOMEM;
	t->fd = memfd_create("rdmabroker-inflight",
			     MFD_CLOEXEC | MFD_ALLOW_SEALING);
	t->n = n;
	t->map_len = sizeof(struct inflight_hdr) +
		     (size_t)n * sizeof(struct inflight_slot);
	t->free = calloc(n ? n : 1, sizeof(*t->free));
	if (t->fd < 0 || !t->free) {
		err = t->fd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	if (ftruncate(t->fd, (off_t)t->map_len) < 0 ||
	    fcntl(t->fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		goto fail;
	}
	p = mmap(NULL, t->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd,
		 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	t->hdr = p;
	t->hot.slot = (struct inflight_slot *)(t->hdr + 1);
	t->hdr->magic = INFLIGHT_MAGIC;
	t->hdr->n = n;
	for (uint32_t i = 0; i < n; i++)
		t->free[i] = n - 1 - i;
	t->n_free = n;
	*ret = t;
	return 0;

fail:
	inflight_free(t);
	return err;
}

void inflight_free(struct inflight *t)
{
	if (!t)
		return;
	if (t->hdr)
		munmap(t->hdr, t->map_len);
	if (t->fd >= 0)
		close(t->fd);
	free(t->free);
	free(t);
}

int inflight_fd(const struct inflight *t)
{
	return t->fd;
}

int inflight_take(struct inflight *t, uint64_t conn_id)
{
	uint32_t i;

	if (!t || !t->n_free)
		return -1;
	i = t->free[--t->n_free];
	t->hot.slot[i].pending = 0;
	t->hot.slot[i].conn_id = conn_id;
	return (int)i;
}

void inflight_put(struct inflight *t, int slot)
{
	if (!t || slot < 0)
		return;
	t->hot.slot[slot].conn_id = 0;
	t->hot.slot[slot].pending = 0;
	t->free[t->n_free++] = (uint32_t)slot;
}

int inflight_scan(int fd,
		  void (*fn)(void *arg, uint64_t conn_id, uint64_t serial),
		  void *arg)
{
	/* Read in blocks: a table has a slot per --max-clients, and one
	 * read per slot was most of a restore's time. */
	struct inflight_slot s[INFLIGHT_SCAN_BLOCK];
	struct inflight_hdr h;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    h.magic != INFLIGHT_MAGIC || h.n > (1u << 24) ||
	    (uint64_t)st.st_size < sizeof(h) + h.n * sizeof(s[0]))
		return -EBADMSG;
	for (uint64_t i = 0; i < h.n;) {
		size_t k = h.n - i < INFLIGHT_SCAN_BLOCK ? (size_t)(h.n - i) :
							   INFLIGHT_SCAN_BLOCK;

		if (pread(fd, s, k * sizeof(s[0]),
			  (off_t)(sizeof(h) + i * sizeof(s[0]))) !=
		    (ssize_t)(k * sizeof(s[0])))
			return -EIO;
		for (size_t j = 0; j < k; j++)
			if (s[j].conn_id && s[j].pending)
				fn(arg, s[j].conn_id, s[j].pending - 1);
		i += k;
	}
	return 0;
}
