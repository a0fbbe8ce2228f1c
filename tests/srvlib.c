// SPDX-License-Identifier: MIT
/* The in-process server of the daemon's internal suites (srvlib.h). */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon/util/log.h"
#include "tests/srvlib.h"
#include "tests/testlib.h"

struct server sl_srv;
char *sl_dir;
struct ol_client sl_cl[SL_MAX_CLIENTS];
struct conn *sl_conns[SL_MAX_CLIENTS];

static char log_file[300];
static int saved_stderr = -1;

void sl_pump(void)
{
	event_base_loop(sl_srv.core.base, EVLOOP_NONBLOCK);
}

void sl_start(const char *conf)
{
	char sock[256], cfg[256];
	struct server_options opt = {
		.socket_path = sock,
		.config_path = cfg,
		.device_mode = DEVICE_MODE_SOFT,
		.socket_mode = 0600,
		.max_conns = 16,
		.outq_max = 256 * 1024,
	};
	FILE *f;
	int fd;

	log_max_priority = LOG_INFO;
	sl_dir = tl_mkdtemp();
	ck_assert_ptr_nonnull(sl_dir);
	snprintf(sock, sizeof(sock), "%s/sock", sl_dir);
	snprintf(cfg, sizeof(cfg), "%s/rdmabroker.conf", sl_dir);
	snprintf(log_file, sizeof(log_file), "%s/log", sl_dir);
	if (conf) {
		f = fopen(cfg, "w");
		ck_assert_ptr_nonnull(f);
		fputs(conf, f);
		ck_assert_int_eq(fclose(f), 0);
	}
	opt.runtime_dir = sl_dir;
	/* What the daemon logs, to be counted. */
	fd = open(log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
	dup2(fd, 2);
	close(fd);
	ck_assert_int_eq(server_init(&sl_srv, &opt), 0);
	memset(sl_conns, 0, sizeof(sl_conns));
	for (int i = 0; i < SL_MAX_CLIENTS; i++)
		sl_cl[i].fd = -1;
}

void sl_stop(void)
{
	for (int i = 0; i < SL_MAX_CLIENTS; i++)
		ol_close(&sl_cl[i]);
	server_fini(&sl_srv);
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	saved_stderr = -1;
	tl_rmtree(sl_dir);
	free(sl_dir);
	sl_dir = NULL;
}

struct ol_client *sl_connect(int i)
{
	struct ol_client *c = &sl_cl[i];
	int sv[2];

	ck_assert_int_eq(
		socketpair(AF_UNIX,
			   SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
			   sv),
		0);
	ck_assert_int_eq(conn_new(&sl_srv.tab, sv[0], &sl_conns[i]), 0);
	memset(c, 0, sizeof(*c));
	c->fd = sv[1];
	c->pump = sl_pump;
	return c;
}

struct ol_client *sl_client(int i, const char *domain, bool open)
{
	struct ol_client *c = sl_connect(i);

	OK(ol_hello(c, domain));
	if (open)
		OK(ol_open(c));
	return c;
}

void sl_hang_up(int i)
{
	conn_close(sl_conns[i]);
	sl_conns[i] = NULL;
}

void sl_kill(int i)
{
	sl_hang_up(i);
	objects_owner_dead(sl_owner(i));
}

struct obj_owner *sl_owner(int i)
{
	struct obj_owner *ow;

	TAILQ_FOREACH(ow, &sl_srv.core.registry->owners, link)
		if (ow->client_id == sl_cl[i].client_id)
			return ow;
	return NULL;
}

int sl_log_count(const char *needle)
{
	int n;

	fflush(stderr);
	n = tl_count_in_file(log_file, needle);
	ck_assert_int_ge(n, 0);
	return n;
}
