// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/wire.h"

void wire_fds_init(struct wire_fds *fds)
{
	fds->n = 0;
	for (unsigned int i = 0; i < WIRE_MAX_FDS; i++)
		fds->fd[i] = -1;
}

void wire_fds_close(struct wire_fds *fds)
{
	for (unsigned int i = 0; i < fds->n; i++) {
		if (fds->fd[i] >= 0)
			close(fds->fd[i]);
		fds->fd[i] = -1;
	}
	fds->n = 0;
}

int wire_fds_steal(struct wire_fds *fds, unsigned int idx)
{
	int fd;

	if (idx >= fds->n || fds->fd[idx] < 0)
		return -EBADF;
	fd = fds->fd[idx];
	fds->fd[idx] = -1;
	return fd;
}

unsigned int wire_fds_left(const struct wire_fds *fds)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < fds->n; i++)
		n += fds->fd[i] >= 0;
	return n;
}

int wire_send(int sock, const void *buf, size_t len, const int *fds,
	      unsigned int nfds, int flags)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * WIRE_MAX_FDS)];
	} cbuf;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (len > WIRE_MAX_PACKET || nfds > WIRE_MAX_FDS)
		return -EMSGSIZE;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	/* SEQPACKET sends whole records or nothing. */
	return 0;
}

/* Collect every SCM_RIGHTS descriptor of @mh into @fds; foreign control
 * messages and descriptors beyond the set's room are closed. */
static int wire_collect_fds(struct msghdr *mh, struct wire_fds *fds)
{
	int ret = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm;
	     cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;
		int *p;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS) {
			ret = -EPROTO;
			continue;
		}
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = (int *)CMSG_DATA(cm);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, p + i, sizeof(fd));
			if (fds->n < WIRE_MAX_FDS) {
				fds->fd[fds->n++] = fd;
			} else {
				close(fd);
				ret = -EPROTO;
			}
		}
	}
	return ret;
}

int wire_recv(int sock, void *buf, size_t cap, struct wire_fds *ret_fds,
	      int flags)
{
	/* Room for one more descriptor than allowed, so that a sender who
	 * exceeds the limit is seen (and refused) rather than truncated. */
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * (WIRE_MAX_FDS + 1))];
	} cbuf;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;
	int ret;

	wire_fds_init(ret_fds);
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;

	ret = wire_collect_fds(&mh, ret_fds);
	if (ret == 0 && (mh.msg_flags & MSG_CTRUNC))
		ret = -EPROTO;
	if (ret == 0 && (mh.msg_flags & MSG_TRUNC))
		ret = -EMSGSIZE;
	if (ret == 0 && n == 0 && ret_fds->n > 0)
		ret = -EPROTO;
	if (ret < 0) {
		wire_fds_close(ret_fds);
		return ret;
	}
	return (int)n;
}

static void *wire_budget_alloc(void *data, size_t size)
{
	struct wire_budget *b = data;
	size_t need = size + sizeof(max_align_t);
	char *p;

	if (size > b->left || need > b->left)
		return NULL;
	p = malloc(need);
	if (!p)
		return NULL;
	b->left -= need;
	memcpy(p, &need, sizeof(need));
	return p + sizeof(max_align_t);
}

static void wire_budget_free(void *data, void *ptr)
{
	struct wire_budget *b = data;
	char *p;
	size_t need;

	if (!ptr)
		return;
	p = (char *)ptr - sizeof(max_align_t);
	memcpy(&need, p, sizeof(need));
	b->left += need;
	free(p);
}

void wire_budget_init(struct wire_budget *b, size_t limit)
{
	b->allocator.alloc = wire_budget_alloc;
	b->allocator.free = wire_budget_free;
	b->allocator.allocator_data = b;
	b->left = limit;
}

int wire_pack(const ProtobufCMessage *msg, uint8_t **ret_buf)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (len > WIRE_MAX_PACKET)
		return -EMSGSIZE;
	/* An empty message is a zero-length packet, which SEQPACKET readers
	 * cannot tell from end of stream: always send at least one byte. */
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(msg, buf);
	*ret_buf = buf;
	return (int)len;
}

int wire_send_msg(int sock, const ProtobufCMessage *msg, const int *fds,
		  unsigned int nfds, int flags)
{
	uint8_t *buf;
	int len, ret;

	len = wire_pack(msg, &buf);
	if (len < 0)
		return len;
	ret = wire_send(sock, buf, (size_t)len, fds, nfds, flags);
	free(buf);
	return ret;
}
