// SPDX-License-Identifier: MIT
/*
 * vm-fdprobe LOG: a Type=notify service that measures what the systemd it
 * runs under does with a service's file descriptor store (issue 25 item 4),
 * so that rdmabrokerd(8) states facts, not guesses. tests/vm/suite.sh's
 * fdstore section starts it as a unit with FileDescriptorStoreMax=16 and
 * restarts it every way an operator or a fault can.
 *
 * Every start appends one line to LOG:
 *   start G pid=P passed=N fds=NAME=CONTENT,...
 * where G counts the lines before it plus one, and each passed descriptor
 * is shown with the name LISTEN_FDNAMES gives it and what it is (a memfd's
 * first bytes, "sock" for a socket), in the order it was passed. Then the
 * probe drops its "fill" descriptors (FDSTOREREMOVE=1), stores a memfd named
 * and holding "g<G>", and on the first start also probes the protocol:
 * "dup" (one memfd sent twice), a name with a ':' (invalid), "hup" (a socket
 * whose peer closes: systemd's POLLHUP removal), "nopoll" (the same with
 * FDPOLL=0), "pidfd" (a child's pidfd with FDPOLL=0, the child killed and
 * reaped once it is stored: what rdmabrokerd keeps of a detached owner's
 * process, shown "exited" or "live" when passed back), "rm" (stored, then
 * FDSTOREREMOVE=1) and "fill", 16 memfds in
 * one message against the bound. Then READY=1, watchdog pings every 500 ms
 * while WATCHDOG_USEC is set, SIGUSR1 makes it exit 1 (a failure).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

static volatile sig_atomic_t failing;

static void on_usr1(int sig)
{
	(void)sig;
	failing = 1;
}

static int memfd_with(const char *text)
{
	int fd = memfd_create(text, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

static void store(const char *state, const int *fds, unsigned int n)
{
	int r = sd_pid_notify_with_fds(0, 0, state, fds, n);

	if (r <= 0)
		fprintf(stderr, "vm-fdprobe: notify \"%s\": %d\n", state, r);
}

/* Is @fd a pidfd (its fdinfo has a Pid line)? Its process's state, in
 * @buf. */
static bool describe_pidfd(int fd, char *buf, size_t len)
{
	char path[64], info[512];
	const char *p;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, info, sizeof(info) - 1);
	close(f);
	info[n > 0 ? n : 0] = '\0';
	p = strstr(info, "\nPid:\t");
	if (!p)
		return false;
	snprintf(buf, len, "%s", atoi(p + 6) > 0 ? "live" : "exited");
	return true;
}

/* What a passed descriptor is, for the log line. */
static void describe(int fd, char *buf, size_t len)
{
	struct stat st;
	ssize_t n;

	if (describe_pidfd(fd, buf, len))
		return;
	if (fstat(fd, &st) < 0) {
		snprintf(buf, len, "badfd");
	} else if (S_ISSOCK(st.st_mode)) {
		snprintf(buf, len, "sock");
	} else {
		n = pread(fd, buf, len - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
	}
}

static int generation(const char *log)
{
	FILE *f = fopen(log, "re");
	int g = 1, c;

	if (!f)
		return 1;
	while ((c = fgetc(f)) != EOF)
		g += c == '\n';
	fclose(f);
	return g;
}

static void log_start(const char *log, int g)
{
	char **names = NULL, what[64];
	FILE *f = fopen(log, "ae");
	int n = sd_listen_fds_with_names(1, &names);

	if (!f)
		return;
	fprintf(f, "start %d pid=%d passed=%d fds=", g, (int)getpid(), n);
	for (int i = 0; i < n; i++) {
		describe(SD_LISTEN_FDS_START + i, what, sizeof(what));
		fprintf(f, "%s%s=%s", i ? "," : "",
			names && names[i] ? names[i] : "?", what);
		/* Closed: each start stores its own. */
		close(SD_LISTEN_FDS_START + i);
	}
	fputc('\n', f);
	fclose(f);
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
}

/* A child's pidfd, stored with FDPOLL=0; then the child exits and is
 * reaped (a pidfd polls readable, and with pidfs hangs up, then). */
static void probe_pidfd(void)
{
	pid_t child = fork();
	int fd;

	if (child < 0)
		return;
	if (child == 0) {
		pause();
		_exit(0);
	}
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, child, 0);
#else
	fd = -1;
#endif
	if (fd >= 0) {
		store("FDSTORE=1\nFDNAME=pidfd\nFDPOLL=0", &fd, 1);
		close(fd);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static void probe_protocol(void)
{
	int fd, sv[2], fill[16];

	fd = memfd_with("dup");
	store("FDSTORE=1\nFDNAME=dup", &fd, 1);
	store("FDSTORE=1\nFDNAME=dup", &fd, 1);
	close(fd);

	fd = memfd_with("badname");
	store("FDSTORE=1\nFDNAME=bad:name", &fd, 1);
	close(fd);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
		store("FDSTORE=1\nFDNAME=hup", &sv[0], 1);
		close(sv[0]);
		close(sv[1]);
		/* The manager drops it when it sees the hang-up, a moment
		 * later; until then it counts against the bound. */
		usleep(300000);
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
		store("FDSTORE=1\nFDNAME=nopoll\nFDPOLL=0", &sv[0], 1);
		close(sv[0]);
		close(sv[1]);
	}
	probe_pidfd();

	fd = memfd_with("rm");
	store("FDSTORE=1\nFDNAME=rm", &fd, 1);
	close(fd);
	store("FDSTOREREMOVE=1\nFDNAME=rm", NULL, 0);

	for (int i = 0; i < 16; i++)
		fill[i] = memfd_with("fill");
	store("FDSTORE=1\nFDNAME=fill", fill, 16);
	for (int i = 0; i < 16; i++)
		close(fill[i]);
}

int main(int argc, char **argv)
{
	char name[32], state[64];
	uint64_t wd = 0;
	int g, fd;

	if (argc != 2) {
		fprintf(stderr, "usage: vm-fdprobe LOG\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	g = generation(argv[1]);
	log_start(argv[1], g);

	store("FDSTOREREMOVE=1\nFDNAME=fill", NULL, 0);
	snprintf(name, sizeof(name), "g%d", g);
	fd = memfd_with(name);
	snprintf(state, sizeof(state), "FDSTORE=1\nFDNAME=%s", name);
	store(state, &fd, 1);
	close(fd);
	if (g == 1)
		probe_protocol();
	sd_notify(0, "READY=1");

	if (sd_watchdog_enabled(0, &wd) <= 0)
		wd = 0;
	while (!failing) {
		usleep(500000);
		if (wd)
			sd_notify(0, "WATCHDOG=1");
	}
	return 1;
}
