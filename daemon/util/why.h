/* SPDX-License-Identifier: MIT */
/*
 * struct why: the daemon's one carrier of a failure, its errno and its
 * sentence (for the client's reply and the log). Every layer below the
 * handlers fills one and returns the errno; a handler passes the one its
 * reply holds (struct reply's why), so the sentence goes out as it was
 * written, with no copy.
 */
#ifndef RDMAB_WHY_H
#define RDMAB_WHY_H

/* As long as a reply's sentence may be. */
#define WHY_MAX 256

struct why {
	int err;
	char text[WHY_MAX];
};

/* Write @err (negative) and the sentence; returns @err. */
int why_set(struct why *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
