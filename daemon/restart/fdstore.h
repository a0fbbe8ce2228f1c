/* SPDX-License-Identifier: MIT */
/*
 * The fd store (issue 25 item 1): every descriptor that must outlive the
 * daemon's process is kept, under a name, by systemd's store
 * (FileDescriptorStoreMax=, a "FDSTORE=1\nFDNAME=" notice with the
 * descriptor, notify-sock.h)
 * and handed back at the next start as LISTEN_FDS/LISTEN_FDNAMES, or, on
 * SIGUSR2, handed to the new binary the same way (reexec.c).
 *
 * Names: "rb." then what the descriptor is and its key, e.g.
 * "rb.state.3", "rb.conn.<client id>", "rb.ctx.<context id>",
 * "rb.dm.<dm id>", "rb.xrcd-dir", "rb.xrcd.<ino>",
 * "rb.xrcd-ctx.<device>.<n>". At most
 * FDSTORE_NAME_MAX bytes of [A-Za-z0-9._-]: systemd refuses ':' and the
 * prefix tells our descriptors from the socket unit's listener. One name
 * names one descriptor at a time.
 *
 * Ownership: fdstore_put() borrows the caller's descriptor (systemd and
 * the kernel keep their own copy); the caller stays its owner and must
 * fdstore_remove() it before closing it, so the store never holds a stale
 * file nor grows without bound. At start, fdstore_take() gives the passed
 * descriptor of a name to the caller; what nobody took is closed by
 * fdstore_close_untaken().
 *
 * Outside systemd (no NOTIFY_SOCKET) put and remove only keep the table
 * that a re-exec hands on.
 */
#ifndef RDMAB_FDSTORE_H
#define RDMAB_FDSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FDSTORE_PREFIX "rb."
#define FDSTORE_NAME_MAX 64
/* The uid of a place charged to nobody: the daemon's own, those kept for
 * every connection, and what a restore kept again. */
#define FDSTORE_NOBODY UINT32_MAX

struct fdstore;

/*
 * Read what the previous daemon left: every passed descriptor whose name
 * starts with FDSTORE_PREFIX (LISTEN_PID must be ours), without touching
 * the rest, which sd_take_listener() then reads (it skips those
 * fdstore_passed() claims). @max bounds the table (the unit's
 * FileDescriptorStoreMax=); @notify: systemd keeps the store (else only
 * the table is kept, for a re-exec). 0 with *@ret set, or -errno.
 */
int fdstore_open(unsigned int max, bool notify, struct fdstore **ret);
void fdstore_free(struct fdstore *s);

/* Was descriptor @fd passed under one of our names? */
bool fdstore_passed(const struct fdstore *s, int fd);
/* Descriptors passed at start under our names (taken or not). */
unsigned int fdstore_n_passed(const struct fdstore *s);
/* Does systemd keep the store (false: a re-exec's, the table alone)? */
bool fdstore_notifies(const struct fdstore *s);

/*
 * Take the passed descriptor named @name: the caller owns it (CLOEXEC
 * set). -ENOENT when none was passed under that name (or it was taken).
 */
int fdstore_take(struct fdstore *s, const char *name, int *ret_fd);
/*
 * Call @fn for every passed descriptor not yet taken whose name starts
 * with @prefix ("rb.conn."), in the order they were passed; @fn may take
 * it (fdstore_take()). A non-zero return of @fn stops the walk and is
 * returned.
 */
int fdstore_each_passed(struct fdstore *s, const char *prefix,
			int (*fn)(void *arg, const char *name, int fd),
			void *arg);
/* Close every passed descriptor nobody took, and drop it from the
 * store; returns how many. */
unsigned int fdstore_close_untaken(struct fdstore *s);

/*
 * Keep @fd (borrowed) under @name: 0, -EINVAL for a bad name, -EEXIST
 * for a name in use, -ENOSPC past the bound, or the notice's -errno
 * (the table then keeps nothing either).
 */
int fdstore_put(struct fdstore *s, const char *name, int fd);
/*
 * The same, the place charged to @uid through the books
 * (fdstore_set_books()): -ENOSPC past the bound, or the books' -errno
 * (over the uid's share, unless charged @over it: what it keeps exists
 * already, a restore keeps it again, or an administrator's).
 * fdstore_remove() gives the place back.
 */
int fdstore_put_for(struct fdstore *s, const char *name, int fd, uint32_t uid,
		    bool over);
/* Who counts the places charged to uids: @take charges one to @uid
 * (0 or -errno, its share checked unless @over), @give gives one
 * back. Kept, not copied further; none set: nothing is counted. */
struct fdstore_books {
	int (*take)(void *arg, uint32_t uid, bool over);
	void (*give)(void *arg, uint32_t uid);
	void *arg;
};
void fdstore_set_books(struct fdstore *s, const struct fdstore_books *b);
/* The bound (0 without a store). */
unsigned int fdstore_max(const struct fdstore *s);
/* Forget @name (FDSTOREREMOVE=1), kept or only passed; a place charged to
 * a uid is given back. */
void fdstore_remove(struct fdstore *s, const char *name);
/* Descriptors kept now. */
unsigned int fdstore_count(const struct fdstore *s);
/*
 * For a re-exec: the kept descriptors and their names, in order, at most
 * @max; returns how many there are (more than @max: call again bigger).
 */
unsigned int fdstore_list(const struct fdstore *s, int *fds, const char **names,
			  unsigned int max);

#endif
