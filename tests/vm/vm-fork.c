// SPDX-License-Identifier: MIT
/*
 * Fork on a real uverbs device (rxe maps its queues through the device
 * file), run by tests/vm/suite.sh inside the VM:
 *
 *   vm-fork DEV
 *	an own-context client: the fork state libibverbs and the library
 *	report (UNNEEDED where the kernel answers RDMA netlink's
 *	copy-on-fork), ibc_fork_init before and after a registration; then
 *	with a CQ on a completion channel, a QP and an MR, a fork: in the
 *	parent every /dev/infiniband/uverbs mapping is MADV_DONTFORK
 *	("dc" in /proc/self/smaps), in the child none is mapped, the
 *	cmd_fd, async fd, channel and broker socket are placeholders, the
 *	inherited CQ answers ESTALE, and a session of its own is linked to
 *	the parent's
 *
 * Prints CHECK lines (vmutil.h); exits 0 when all passed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ibclient.h"
#include "tests/vm/vmutil.h"

static const char *state_name(int s)
{
	return s == IBC_FORK_UNNEEDED ? "unneeded" :
	       s == IBC_FORK_ENABLED  ? "enabled" :
					"disabled";
}

static struct ibc_client *connect_own(void)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_FLAGS | IBC_CONNECT_ATTR_TIMEOUT,
		.flags = IBC_CONNECT_ALLOW_OWN_CONTEXT,
		.timeout_ms = 20000,
	};
	struct ibc_client *cl = NULL;

	return ibc_connect(&attr, &cl) == 0 ? cl : NULL;
}

/* uverbs mappings of this process, and how many lack VmFlags "dc". */
static void uverbs_maps(int *ret_n, int *ret_copied)
{
	char line[512];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	*ret_n = *ret_copied = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " /dev/infiniband/uverbs")) {
			in = true;
			(*ret_n)++;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			if (!strstr(line, " dc"))
				(*ret_copied)++;
			in = false;
		}
	}
	fclose(f);
}

static bool is_placeholder(int fd)
{
	struct stat st, root;
	int flags = fcntl(fd, F_GETFD);

	return fd >= 0 && flags >= 0 && (flags & FD_CLOEXEC) &&
	       (fcntl(fd, F_GETFL) & O_PATH) && fstat(fd, &st) == 0 &&
	       stat("/", &root) == 0 && st.st_dev == root.st_dev &&
	       st.st_ino == root.st_ino;
}

/* The broker's socket: the one socket this process has. */
static int find_socket(void)
{
	char path[64], link[128];

	for (int fd = 0; fd < 256; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = '\0', !strncmp(link, "socket:", 7)))
			return fd;
	}
	return -1;
}

struct child_result {
	int maps;
	bool cmd_fd, async_fd, channel, sock;
	int cq_err;
	uint64_t link;
};

static void child(int wfd, struct ibc_cq *cq, int cmd_fd, int async_fd,
		  int ch_fd, int sock)
{
	struct child_result r = { 0 };
	struct ibc_client_info info = { 0 };
	struct ibc_client *own;
	int copied;

	uverbs_maps(&r.maps, &copied);
	r.cmd_fd = is_placeholder(cmd_fd);
	r.async_fd = is_placeholder(async_fd);
	r.channel = is_placeholder(ch_fd);
	r.sock = is_placeholder(sock);
	r.cq_err = ibc_cq_destroy(cq);
	own = connect_own();
	if (own && ibc_client_info(own, &info, sizeof(info)) == 0)
		r.link = info.parent_id;
	vm_write_all(wfd, &r, sizeof(r));
	_exit(0);
}

int main(int argc, char **argv)
{
	struct ibc_qp_attr qa = { .qp_type = IBV_QPT_RC,
				  .cap = { .max_send_wr = 4,
					   .max_recv_wr = 4,
					   .max_send_sge = 1,
					   .max_recv_sge = 1 } };
	int vstate = ibv_is_fork_initialized(), err, n, copied, p[2], status;
	int sock;
	static char buf[8192];
	struct ibc_client_info info;
	struct ibc_cq_attr ca = { .cqe = 16 };
	struct ibv_comp_channel *ch;
	struct child_result r;
	struct ibc_client *cl;
	struct ibv_context *v;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	struct ibc_qp *qp;
	struct ibc_mr *mr;
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: vm-fork DEV\n");
		return 2;
	}
	vm_check(true, "fork-state-kernel",
		 "ibv_is_fork_initialized: %s (unneeded where the kernel "
		 "answers RDMA netlink's copy-on-fork)",
		 state_name(vstate));
	vm_check((int)ibc_fork_state() == vstate, "fork-state-library",
		 "ibc_fork_state: %s", state_name(ibc_fork_state()));
	err = ibc_fork_init();
	vm_check(err == 0, "fork-init-first", "ibc_fork_init: %d (%s)", err,
		 ibc_last_error());
	cl = connect_own();
	if (!vm_check(cl != NULL, "fork-connect", "ibc_connect: %s",
		      ibc_last_error()))
		return 1;
	err = ibc_open(cl, argv[1], &ctx);
	if (!vm_check(err == 0, "fork-open", "ibc_open %s: %d (%s)", argv[1],
		      err, ibc_last_error()))
		return 1;
	v = ibc_verbs_context(ctx);
	ch = v ? ibv_create_comp_channel(v) : NULL;
	ca.channel = ch;
	err = ch ? ibc_cq_create_ex(ctx, &ca, &cq) : -errno;
	if (err == 0) {
		qa.send_cq = qa.recv_cq = cq;
		err = ibc_qp_create(ctx, &qa, &qp);
	}
	if (err == 0)
		err = ibc_reg_mr(ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE,
				 &mr);
	if (!vm_check(err == 0, "fork-objects",
		      "a CQ on a channel, an RC QP and an MR: %d (%s)", err,
		      ibc_last_error()))
		return 1;
	/* UNNEEDED: still 0 after a registration (rdma-core 51's rule);
	 * otherwise too late. */
	err = ibc_fork_init();
	vm_check(vstate == IBV_FORK_UNNEEDED ? err == 0 : err == -EINVAL,
		 "fork-init-after-mr",
		 "ibc_fork_init after ibc_reg_mr: %d "
		 "(%s), state %s",
		 err, ibc_last_error(), state_name(ibc_fork_state()));
	ibc_client_info(cl, &info, sizeof(info));

	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	sock = find_socket();
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1], cq, v->cmd_fd, v->async_fd, ch->fd, sock);
	}
	close(p[1]);
	uverbs_maps(&n, &copied);
	vm_check(n > 0 && copied == 0, "fork-dontfork",
		 "%d /dev/infiniband/uverbs mappings in the parent, %d without "
		 "VmFlags dc",
		 n, copied);
	err = vm_read_all(p[0], &r, sizeof(r));
	waitpid(pid, &status, 0);
	if (!vm_check(err == 0, "fork-child", "the child's report: %d", err))
		return 1;
	vm_check(r.maps == 0, "fork-child-unmapped",
		 "uverbs mappings in the child: %d", r.maps);
	vm_check(r.cmd_fd && r.async_fd && r.channel && r.sock,
		 "fork-placeholders",
		 "cmd_fd %d, async fd %d, channel %d, broker socket %d on "
		 "O_PATH /, CLOEXEC: %d %d %d %d",
		 v->cmd_fd, v->async_fd, ch->fd, sock, r.cmd_fd, r.async_fd,
		 r.channel, r.sock);
	vm_check(r.cq_err == -ESTALE, "fork-child-estale",
		 "ibc_cq_destroy of the inherited CQ: %d", r.cq_err);
	vm_check(r.link == info.client_id, "fork-child-link",
		 "the child's session names client %llu as its parent (the "
		 "parent is %llu)",
		 (unsigned long long)r.link,
		 (unsigned long long)info.client_id);
	/* The parent's objects are untouched by the child. */
	err = ibc_qp_destroy(qp);
	if (err == 0)
		err = ibc_dereg_mr(mr);
	if (err == 0)
		err = ibc_cq_destroy(cq);
	vm_check(err == 0, "fork-parent-intact",
		 "the parent destroys its QP, MR and CQ after the child: %d "
		 "(%s)",
		 err, ibc_last_error());
	ibv_destroy_comp_channel(ch);
	ibc_close(ctx);
	ibc_disconnect(cl);
	return vm_failures() ? 1 : 0;
}
