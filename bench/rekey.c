// SPDX-License-Identifier: MIT
/*
 * make bench-rekey (run by make bench): the rekey of a domain with 16
 * members, each of which dispatches the Event, closes its old context and
 * opens the new one, against 16 ibc_open calls of the same members into a
 * domain whose context they all had closed (the first opens it, as the
 * first reopen after a rekey does). Same run, one daemon on the soft
 * device, everything pinned to CPU 0; the ratio of the medians of the
 * repetitions is printed.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "include/ibclient.h"

#define REKEY_MEMBERS 16
#define REKEY_MAX_REPS 2000

struct member {
	struct ibc_client *cl;
	struct ibc_ctx *ctx;
	int rekeyed;
};

static void on_event(struct ibc_client *cl, const struct ibc_event *ev,
		     void *arg)
{
	struct member *m = arg;

	(void)cl;
	if (ev->type == IBC_EVENT_DOMAIN_REKEYED)
		m->rekeyed = 1;
}

static int bench_connect(const char *sock, struct member *m,
			 struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_DOMAIN |
			     IBC_CONNECT_ATTR_EVENT_CB,
		.socket_path = sock,
		.domain = "bench",
		.event_cb = on_event,
		.event_arg = m,
	};

	return ibc_connect(&attr, ret);
}

static int lib_fail(const char *what, int err)
{
	fprintf(stderr, "bench-rekey: %s: %s\n", what, ibc_last_error());
	return err;
}

/* One rekey and every member's reopen, in ns; the rekey request alone
 * into @ret_req_ns. */
static int rekey_once(struct ibc_client *admin, struct member *m,
		      uint64_t *ret_ns, uint64_t *ret_req_ns)
{
	uint64_t t0 = now_ns();
	int err;

	err = ibc_admin_domain_rekey(admin, "bench", 0);
	if (err < 0)
		return lib_fail("rekey", err);
	*ret_req_ns = now_ns() - t0;
	for (int i = 0; i < REKEY_MEMBERS; i++) {
		while (!m[i].rekeyed) {
			err = ibc_dispatch(m[i].cl);
			if (err < 0)
				return lib_fail("dispatch", err);
		}
		m[i].rekeyed = 0;
		ibc_close(m[i].ctx);
		err = ibc_open(m[i].cl, NULL, &m[i].ctx);
		if (err < 0)
			return lib_fail("open after rekey", err);
	}
	*ret_ns = now_ns() - t0;
	return 0;
}

/* The members close (untimed: the context goes), then 16 opens, in ns. */
static int opens_once(struct member *m, uint64_t *ret_ns)
{
	uint64_t t0;
	int err;

	for (int i = 0; i < REKEY_MEMBERS; i++)
		ibc_close(m[i].ctx);
	t0 = now_ns();
	for (int i = 0; i < REKEY_MEMBERS; i++) {
		err = ibc_open(m[i].cl, NULL, &m[i].ctx);
		if (err < 0)
			return lib_fail("open", err);
	}
	*ret_ns = now_ns() - t0;
	return 0;
}

static int write_conf(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "[broker]\nadmin_group = %u\n[domain bench]\nusers = %u\n",
		(unsigned int)getgid(), (unsigned int)getuid());
	return fclose(f) ? -errno : 0;
}

int main(int argc, char **argv)
{
	static uint64_t rekey_ns[REKEY_MAX_REPS], open_ns[REKEY_MAX_REPS];
	static uint64_t req_ns[REKEY_MAX_REPS];
	struct member m[REKEY_MEMBERS] = { 0 };
	const char *daemon = "./rdmabrokerd";
	char dir[] = "/tmp/rdmab-bench-rekey.XXXXXX";
	char sock[128], conf[128], rundir[128], log[128];
	struct ibc_client *admin = NULL;
	unsigned int reps = 200;
	double idle = 100;
	pid_t pid;
	int opt, err, fd;

	while ((opt = getopt(argc, argv, "d:r:")) != -1) {
		if (opt == 'd')
			daemon = optarg;
		else if (opt == 'r')
			reps = (unsigned int)atoi(optarg);
		else
			return 2;
	}
	if (!reps || reps > REKEY_MAX_REPS) {
		fprintf(stderr, "bench-rekey: -r takes 1 to %d\n",
			REKEY_MAX_REPS);
		return 2;
	}
	cleanup_install();
	if (pin_self() < 0 || !mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/rdmabroker.conf", dir);
	snprintf(rundir, sizeof(rundir), "%s/run", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	if (write_conf(conf) < 0)
		return 1;
	{
		char *args[] = { (char *)daemon,
				 "--device",
				 "soft",
				 "--socket",
				 sock,
				 "--runtime-dir",
				 rundir,
				 "--config",
				 conf,
				 "--log-level",
				 "warning",
				 "--foreground",
				 NULL };

		err = spawn(args, log, &pid);
		if (err < 0 || unix_connect_wait(sock, 5000, pid, &fd) < 0) {
			fprintf(stderr, "bench-rekey: cannot start %s\n",
				daemon);
			return 1;
		}
		close(fd);
	}
	err = bench_connect(sock, NULL, &admin);
	for (int i = 0; i < REKEY_MEMBERS && err == 0; i++) {
		err = bench_connect(sock, &m[i], &m[i].cl);
		if (err == 0)
			err = ibc_open(m[i].cl, NULL, &m[i].ctx);
	}
	if (err < 0)
		return lib_fail("setup", err);
	/* As rdmab-bench: up to 20 s for CPU 0 to be quiet. */
	for (int i = 0; i < 20; i++)
		if (idle_percent(BENCH_CPU, 1000, &idle) < 0 || idle >= 90)
			break;
	if (idle < 90)
		fprintf(stderr,
			"bench-rekey: warning: CPU %d is only %.0f%% idle; "
			"figures will be noisy\n",
			BENCH_CPU, idle);
	/* Warm up both paths, then alternate them. */
	for (unsigned int i = 0; i < reps / 10 + 1 && err == 0; i++) {
		uint64_t ns, rq;

		err = rekey_once(admin, m, &ns, &rq);
		if (err == 0)
			err = opens_once(m, &ns);
	}
	for (unsigned int i = 0; i < reps && err == 0; i++) {
		uint64_t a, b, rq = 0;

		err = rekey_once(admin, m, &a, &rq);
		if (err == 0)
			err = opens_once(m, &b);
		rekey_ns[i] = a;
		open_ns[i] = b;
		req_ns[i] = rq;
	}
	if (err < 0)
		return 1;
	{
		/* quantile_u64 sorts: the minimum is then the first. */
		double r = (double)quantile_u64(rekey_ns, reps, 0.5) / 1000;
		double o = (double)quantile_u64(open_ns, reps, 0.5) / 1000;

		printf("rekey of a domain with %d members (each dispatching "
		       "and reopening): median %.1f us (min %.1f)\n"
		       "%d ibc_open calls of the same members: median %.1f us "
		       "(min %.1f)\n"
		       "ratio rekey / %d opens: %.2f  (%u repetitions, CPU "
		       "%d)\n",
		       REKEY_MEMBERS, r, (double)rekey_ns[0] / 1000,
		       REKEY_MEMBERS, o, (double)open_ns[0] / 1000,
		       REKEY_MEMBERS, r / o, reps, BENCH_CPU);
		printf("ratio of the minimums: %.2f; of the rekey, the "
		       "administrator's request: median %.1f us\n",
		       (double)rekey_ns[0] / (double)open_ns[0],
		       (double)quantile_u64(req_ns, reps, 0.5) / 1000);
	}
	for (int i = 0; i < REKEY_MEMBERS; i++) {
		ibc_close(m[i].ctx);
		ibc_disconnect(m[i].cl);
	}
	ibc_disconnect(admin);
	stop_child(pid);
	remove_tree(dir);
	return 0;
}
