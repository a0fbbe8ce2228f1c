// SPDX-License-Identifier: MIT
/*
 * The fd store (fdstore.h): systemd's FDSTORE=1 / FDSTOREREMOVE=1 notices,
 * the table of what is kept (for a re-exec and the bound), and the
 * descriptors passed at start under our names.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "daemon/restart/fdstore.h"
#include "daemon/restart/notify-sock.h"

struct fdstore_ent {
	char name[FDSTORE_NAME_MAX + 1];
	int fd;
	bool taken;
	/* Whose place it is (FDSTORE_NOBODY: the daemon's own). */
	uint32_t uid;
};

struct fdstore {
	/* Kept now: borrowed descriptors, in the order they came; a
	 * removed one leaves a hole (name "") until the table is full. */
	struct fdstore_ent *kept;
	unsigned int n_kept, n_used, max;
	/* The kept ones by name, index + 1 (0: empty): a restore keeps
	 * thousands, and a walk per put was most of its string compares. */
	uint32_t *kept_by_name;
	size_t kept_cap;
	/* Passed at start under our names: owned until taken. */
	struct fdstore_ent *passed;
	unsigned int n_passed;
	/* The passed ones by name: open addressing, index + 1 (0: empty),
	 * linear probing, so that a name's entries are met in the order
	 * they were passed. A restore takes thousands. */
	uint32_t *by_name;
	size_t by_name_cap;
	/* Of the descriptors systemd passed (SD_LISTEN_FDS_START + i),
	 * those passed under our names, fixed at start: asked for each of
	 * the thousands a restore gets (fdstore_passed()), a walk of the
	 * table was quadratic. */
	bool *ours;
	unsigned int n_listen;
	/* systemd keeps what is put: tell it (else the table alone),
	 * through one socket. */
	bool notify;
	struct notify_sock ns;
	/* Who counts the places charged to uids (none: nobody). */
	struct fdstore_books books;
};

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n <= strlen(FDSTORE_PREFIX) || n > FDSTORE_NAME_MAX ||
	    strncmp(name, FDSTORE_PREFIX, strlen(FDSTORE_PREFIX)) != 0)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' ||
		      *p == '_'))
			return false;
	return true;
}

static size_t name_hash(const char *name, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return (size_t)(h ^ h >> 32) & (cap - 1);
}

static int passed_index(struct fdstore *s)
{
	size_t cap = 16;

	while (cap < (size_t)s->n_passed * 2)
		cap *= 2;
	s->by_name = calloc(cap, sizeof(*s->by_name));
	if (!s->by_name)
		return -ENOMEM;
	s->by_name_cap = cap;
	for (unsigned int i = 0; i < s->n_passed; i++) {
		size_t h = name_hash(s->passed[i].name, cap);

		while (s->by_name[h])
			h = (h + 1) & (cap - 1);
		s->by_name[h] = i + 1;
	}
	return 0;
}

int fdstore_open(unsigned int max, bool notify, struct fdstore **ret)
{
	struct fdstore *s;
	char **names = NULL;
	int n, ret_err = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max = max;
	s->notify = notify;
	notify_sock_init(&s->ns);
	s->kept = calloc(max ? max : 1, sizeof(*s->kept));
	s->kept_cap = 16;
	while (s->kept_cap < (size_t)max * 2)
		s->kept_cap *= 2;
	s->kept_by_name = calloc(s->kept_cap, sizeof(*s->kept_by_name));
	if (!s->kept || !s->kept_by_name) {
		free(s->kept_by_name);
		free(s);
		return -ENOMEM;
	}
	/* Leave the environment to sd_take_listener(), which reads it
	 * again for the listener. */
	n = sd_listen_fds_with_names(0, &names);
	if (n < 0)
		n = 0;
	if (n > 0) {
		s->passed = calloc((size_t)n, sizeof(*s->passed));
		s->ours = calloc((size_t)n, sizeof(*s->ours));
		if (!s->passed || !s->ours)
			ret_err = -ENOMEM;
		s->n_listen = (unsigned int)n;
	}
	for (int i = 0; i < n && !ret_err; i++) {
		const char *name = names && names[i] ? names[i] : "";
		int fd = SD_LISTEN_FDS_START + i;
		struct fdstore_ent *e;

		if (!name_ok(name))
			continue;
		e = &s->passed[s->n_passed++];
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->fd = fd;
		s->ours[i] = true;
		/* Passed descriptors come without CLOEXEC. */
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	if (!ret_err)
		ret_err = passed_index(s);
	if (ret_err) {
		fdstore_free(s);
		return ret_err;
	}
	*ret = s;
	return 0;
}

void fdstore_free(struct fdstore *s)
{
	if (!s)
		return;
	fdstore_close_untaken(s);
	notify_sock_close(&s->ns);
	free(s->passed);
	free(s->ours);
	free(s->by_name);
	free(s->kept_by_name);
	free(s->kept);
	free(s);
}

bool fdstore_passed(const struct fdstore *s, int fd)
{
	return s && fd >= SD_LISTEN_FDS_START &&
	       (unsigned int)(fd - SD_LISTEN_FDS_START) < s->n_listen &&
	       s->ours[fd - SD_LISTEN_FDS_START];
}

unsigned int fdstore_n_passed(const struct fdstore *s)
{
	return s->n_passed;
}

bool fdstore_notifies(const struct fdstore *s)
{
	return s->notify;
}

/* The first passed entry named @name that is @taken (and, when taken,
 * is @fd, or any still held for -2), or NULL. */
static struct fdstore_ent *passed_find(const struct fdstore *s,
				       const char *name, bool taken, int fd)
{
	if (!s->n_passed)
		return NULL;
	for (size_t h = name_hash(name, s->by_name_cap); s->by_name[h];
	     h = (h + 1) & (s->by_name_cap - 1)) {
		struct fdstore_ent *e = &s->passed[s->by_name[h] - 1];

		if (e->taken == taken &&
		    (!taken || e->fd == fd || (fd == -2 && e->fd >= 0)) &&
		    strcmp(e->name, name) == 0)
			return e;
	}
	return NULL;
}

int fdstore_take(struct fdstore *s, const char *name, int *ret_fd)
{
	struct fdstore_ent *e = passed_find(s, name, false, -1);

	if (!e)
		return -ENOENT;
	e->taken = true;
	*ret_fd = e->fd;
	return 0;
}

int fdstore_each_passed(struct fdstore *s, const char *prefix,
			int (*fn)(void *arg, const char *name, int fd),
			void *arg)
{
	size_t len = strlen(prefix);

	for (unsigned int i = 0; i < s->n_passed; i++) {
		struct fdstore_ent *e = &s->passed[i];
		int ret;

		if (e->taken || strncmp(e->name, prefix, len) != 0)
			continue;
		ret = fn(arg, e->name, e->fd);
		if (ret)
			return ret;
	}
	return 0;
}

unsigned int fdstore_close_untaken(struct fdstore *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->n_passed; i++) {
		char msg[32 + FDSTORE_NAME_MAX];

		if (s->passed[i].taken)
			continue;
		s->passed[i].taken = true;
		close(s->passed[i].fd);
		/* systemd still holds its copy: nobody wants it. */
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s",
			 s->passed[i].name);
		if (s->notify)
			(void)notify_sock_send(&s->ns, msg, NULL, 0);
		n++;
	}
	return n;
}

/* The index slot of kept @name, or of the empty slot it would take. */
static size_t kept_slot(const struct fdstore *s, const char *name)
{
	size_t h = name_hash(name, s->kept_cap);

	while (s->kept_by_name[h] &&
	       strcmp(s->kept[s->kept_by_name[h] - 1].name, name) != 0)
		h = (h + 1) & (s->kept_cap - 1);
	return h;
}

static struct fdstore_ent *kept_find(struct fdstore *s, const char *name)
{
	uint32_t i = s->kept_by_name[kept_slot(s, name)];

	return i ? &s->kept[i - 1] : NULL;
}

/* Drop slot @h from the index: backward shift, so that no probe is cut
 * short by the hole. */
static void kept_unindex(struct fdstore *s, size_t h)
{
	size_t mask = s->kept_cap - 1;

	s->kept_by_name[h] = 0;
	for (size_t j = (h + 1) & mask; s->kept_by_name[j];
	     j = (j + 1) & mask) {
		size_t home = name_hash(s->kept[s->kept_by_name[j] - 1].name,
					s->kept_cap);

		if (((j - home) & mask) >= ((j - h) & mask)) {
			s->kept_by_name[h] = s->kept_by_name[j];
			s->kept_by_name[j] = 0;
			h = j;
		}
	}
}

/* Close the holes, in order, and index the table again. */
static void kept_compact(struct fdstore *s)
{
	unsigned int n = 0;

	memset(s->kept_by_name, 0, s->kept_cap * sizeof(*s->kept_by_name));
	for (unsigned int i = 0; i < s->n_used; i++) {
		if (!s->kept[i].name[0])
			continue;
		s->kept[n] = s->kept[i];
		s->kept_by_name[kept_slot(s, s->kept[n].name)] = n + 1;
		n++;
	}
	s->n_used = n;
}

void fdstore_set_books(struct fdstore *s, const struct fdstore_books *b)
{
	s->books = *b;
}

unsigned int fdstore_max(const struct fdstore *s)
{
	return s ? s->max : 0;
}

/* Charge @uid's place (its share checked unless @over). */
static int books_take(struct fdstore *s, uint32_t uid, bool over)
{
	if (uid == FDSTORE_NOBODY || !s->books.take)
		return 0;
	return s->books.take(s->books.arg, uid, over);
}

static void books_give(struct fdstore *s, uint32_t uid)
{
	if (uid != FDSTORE_NOBODY && s->books.give)
		s->books.give(s->books.arg, uid);
}

int fdstore_put(struct fdstore *s, const char *name, int fd)
{
	return fdstore_put_for(s, name, fd, FDSTORE_NOBODY, false);
}

int fdstore_put_for(struct fdstore *s, const char *name, int fd, uint32_t uid,
		    bool over)
{
	char msg[32 + FDSTORE_NAME_MAX];
	struct fdstore_ent *e;
	int ret;

	if (!s)
		return 0;
	if (!name_ok(name) || fd < 0)
		return -EINVAL;
	if (kept_find(s, name))
		return -EEXIST;
	if (s->n_kept >= s->max)
		return -ENOSPC;
	ret = books_take(s, uid, over);
	if (ret < 0)
		return ret;
	if (s->n_used == s->max)
		kept_compact(s);
	/* FDPOLL=0: systemd would drop a client's socket on POLLHUP
	 * itself; the daemon removes what it closes, and a restore finds a
	 * hung-up socket as the session's end. A descriptor taken at start
	 * and kept again under its name is systemd's already: telling it
	 * again only makes it find the duplicate (a message and a walk of
	 * its store per session, most of a restore's sessions). */
	if (s->notify && !passed_find(s, name, true, fd)) {
		snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s\nFDPOLL=0",
			 name);
		ret = notify_sock_send(&s->ns, msg, &fd, 1);
		if (ret < 0) {
			books_give(s, uid);
			return ret;
		}
	}
	e = &s->kept[s->n_used];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->fd = fd;
	e->uid = uid;
	s->kept_by_name[kept_slot(s, name)] = ++s->n_used;
	s->n_kept++;
	return 0;
}

void fdstore_remove(struct fdstore *s, const char *name)
{
	char msg[32 + FDSTORE_NAME_MAX];
	struct fdstore_ent *e;
	size_t h;

	if (!s)
		return;
	/* Also for a name only passed to us: systemd holds it all the
	 * same. */
	if (s->notify) {
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
		(void)notify_sock_send(&s->ns, msg, NULL, 0);
	}
	/* systemd holds none under @name now: a later put of the same
	 * number (reused) is a new file to tell it of. */
	while ((e = passed_find(s, name, true, -2)))
		e->fd = -1;
	h = kept_slot(s, name);
	if (!s->kept_by_name[h])
		return;
	/* A hole, not a move: the order stays (a re-exec passes them as
	 * they came), and a close costs no shift of the whole table. */
	e = &s->kept[s->kept_by_name[h] - 1];
	e->name[0] = '\0';
	books_give(s, e->uid);
	kept_unindex(s, h);
	s->n_kept--;
}

unsigned int fdstore_count(const struct fdstore *s)
{
	return s->n_kept;
}

unsigned int fdstore_list(const struct fdstore *s, int *fds, const char **names,
			  unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->n_used; i++) {
		if (!s->kept[i].name[0])
			continue;
		if (n < max) {
			fds[n] = s->kept[i].fd;
			names[n] = s->kept[i].name;
		}
		n++;
	}
	return n;
}
