// SPDX-License-Identifier: MIT
/*
 * Fork: make fork safe first (ibc_fork_init), make a CQ, then fork a child
 * that lives on. The child's inherited session answers -ESTALE; it connects
 * on its own, and the broker links its session to the parent's
 * (`rdmabrokerctl clients` shows the tree). Both hold their sessions until
 * the parent's standard input closes.
 * Build: cc fork.c $(pkg-config --cflags --libs libibclient)
 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ibclient.h>

static int fail(const char *who, const char *what)
{
	fprintf(stderr, "fork: %s: %s: %s\n", who, what, ibc_last_error());
	return 1;
}

static const char *state_name(enum ibc_fork_state s)
{
	return s == IBC_FORK_UNNEEDED ? "unneeded" :
	       s == IBC_FORK_ENABLED  ? "enabled" :
					"disabled";
}

/* The child: what it inherited is stale; a session of its own is not. */
static int child(struct ibc_client *inherited, struct ibc_cq *cq)
{
	struct ibc_client_info info;
	struct ibc_client *own;
	char c;

	if (ibc_cq_destroy(cq) != -ESTALE)
		return fail("child", "the inherited CQ did not answer ESTALE");
	printf("child %d: the inherited CQ answers ESTALE: %s\n", (int)getpid(),
	       ibc_last_error());
	/* Frees the library's memory only: nothing of the parent's. */
	ibc_disconnect(inherited);
	if (ibc_connect(NULL, &own) < 0)
		return fail("child", "connect");
	if (ibc_client_info(own, &info, sizeof(info)) < 0)
		return fail("child", "client info");
	printf("child %d: client %llu, forked from client %llu\n",
	       (int)getpid(), (unsigned long long)info.client_id,
	       (unsigned long long)info.parent_id);
	fflush(stdout);
	/* Until the parent's standard input (which it shares) closes. */
	while (read(0, &c, 1) > 0)
		;
	ibc_disconnect(own);
	return 0;
}

int main(void)
{
	struct ibc_client_info info;
	struct ibc_client *client;
	struct ibc_ctx *ctx;
	struct ibc_cq *cq;
	int status, ret;
	pid_t pid;
	char c;

	/* Before anything is registered, or it is too late. */
	ret = ibc_fork_init();
	printf("parent %d: ibc_fork_init: %d, fork state %s\n", (int)getpid(),
	       ret, state_name(ibc_fork_state()));
	if (ibc_connect(NULL, &client) < 0)
		return fail("parent", "connect");
	if (ibc_open(client, NULL, &ctx) < 0 ||
	    ibc_cq_create(ctx, 16, &cq) < 0 ||
	    ibc_client_info(client, &info, sizeof(info)) < 0)
		return fail("parent", "open, CQ");
	printf("parent %d: client %llu with a CQ; forking\n", (int)getpid(),
	       (unsigned long long)info.client_id);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return fail("parent", "fork");
	if (pid == 0)
		return child(client, cq);
	while (read(0, &c, 1) > 0)
		;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return fail("parent", "the child failed");
	ibc_cq_destroy(cq);
	ibc_close(ctx);
	ibc_disconnect(client);
	return 0;
}
