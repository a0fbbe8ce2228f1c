// SPDX-License-Identifier: MIT
/* What the mlx5 hardware suites share; see hwlib.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HW_NAME "hwlib"
#include "tests/hw/hwlib.h"

char hw_dir[128], hw_sock[256], hw_conf[256];
enum hw_mode hw_mode = HW_MLX5;
const char *hw_domain;
static pid_t daemon_pid = -1;

int hw_init(int argc, char **argv, const char *(*find)(void),
	    const char **ret_dev)
{
	const char *dev = NULL;

	/* Forked children _exit(): their lines must be out by then. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "--soft") == 0) {
		hw_mode = HW_SOFT;
		dev = "soft0";
	} else if (argc == 3 && strcmp(argv[1], "--own") == 0) {
		hw_mode = HW_OWN;
		dev = argv[2];
	} else if (argc == 1) {
		dev = find();
		if (!dev) {
			printf("%s: no mlx5 device for this suite; skipped\n",
			       basename(argv[0]));
			return SKIP;
		}
	} else {
		fprintf(stderr, "usage: %s [--soft | --own DEVICE]\n", argv[0]);
		return 2;
	}
	*ret_dev = dev;
	return 0;
}

int hw_become(unsigned int uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -1;
	return 0;
}

/* Lines of @cmd's output that are objects: each starts with its device
 * ("dev NAME" or, for a QP, "link NAME/PORT"); not a pid, which a dead
 * creator's objects no longer show. */
static int rdma_lines(const char *cmd)
{
	char line[1024];
	int n = 0;
	FILE *f;

	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "rror") || strstr(line, "Unknown") ||
		    strstr(line, "not supported")) {
			fprintf(stderr, "hwlib: %s: %s", cmd, line);
			n = -1;
			break;
		}
		if (!strncmp(line, "dev ", 4) || !strncmp(line, "link ", 5))
			n++;
	}
	if (pclose(f) != 0 && n == 0)
		return -1;
	return n;
}

int hw_rdma_count(const char *type)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>&1", type);
	return rdma_lines(cmd);
}

int hw_rdma_qp_listed(uint32_t qpn)
{
	char cmd[128];
	int n;

	snprintf(cmd, sizeof(cmd), "rdma resource show qp lqpn %u 2>&1", qpn);
	n = rdma_lines(cmd);
	return n < 0 ? -1 : n > 0;
}

int hw_wait_count(const char *type, int want, int ms)
{
	int n;

	for (int waited = 0;; waited += 100) {
		n = hw_rdma_count(type);
		if (n == want || waited >= ms)
			return n;
		usleep(100000);
	}
}

/* By its kernel driver: udev's persistent naming renames mlx5 devices
 * (roce..., ib...), so the name says nothing. */
bool hw_is_mlx5(struct ibv_device *dev)
{
	char path[IBV_SYSFS_PATH_MAX + 32], link[256];
	ssize_t len;

	snprintf(path, sizeof(path), "%s/device/driver", dev->ibdev_path);
	len = readlink(path, link, sizeof(link) - 1);
	if (len <= 0)
		return false;
	link[len] = '\0';
	return strcmp(basename(link), "mlx5_core") == 0;
}

const char *hw_find_mlx5(void)
{
	static char name[64];
	struct ibv_device **list;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	name[0] = '\0';
	for (int i = 0; i < n && !name[0]; i++)
		if (hw_is_mlx5(list[i]))
			snprintf(name, sizeof(name), "%s",
				 ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	return name[0] ? name : NULL;
}

uint8_t hw_eth_mac[6];

const char *hw_find_mlx5_eth(void)
{
	static char name[64];
	struct ibv_device **list = ibv_get_device_list(NULL);

	name[0] = '\0';
	for (int i = 0; list && list[i] && !name[0]; i++) {
		char path[IBV_SYSFS_PATH_MAX + 64];
		struct ibv_context *ctx;
		struct ibv_port_attr pa;
		FILE *f;
		int ok;

		if (!hw_is_mlx5(list[i]))
			continue;
		ctx = ibv_open_device(list[i]);
		ok = ctx && ibv_query_port(ctx, 1, &pa) == 0 &&
		     pa.link_layer == IBV_LINK_LAYER_ETHERNET;
		if (ctx)
			ibv_close_device(ctx);
		if (!ok)
			continue;
		/* The port's netdev: the one under the PCI function. */
		snprintf(path, sizeof(path),
			 "/bin/sh -c 'cat %s/device/net/*/address' 2>/dev/null",
			 list[i]->ibdev_path);
		f = popen(path, "r");
		if (f &&
		    fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &hw_eth_mac[0],
			   &hw_eth_mac[1], &hw_eth_mac[2], &hw_eth_mac[3],
			   &hw_eth_mac[4], &hw_eth_mac[5]) == 6)
			snprintf(name, sizeof(name), "%s",
				 ibv_get_device_name(list[i]));
		if (f)
			pclose(f);
	}
	if (list)
		ibv_free_device_list(list);
	return name[0] ? name : NULL;
}

int hw_mkdir(const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	int ret;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(hw_dir, sizeof(hw_dir), "%s/%s-XXXXXX", tmp, prefix);
	errno = 0;
	if (!mkdtemp(hw_dir)) {
		ret = -errno;
		fprintf(stderr, "hwlib: mkdtemp %s: %s\n", hw_dir,
			strerror(-ret));
		return ret;
	}
	chmod(hw_dir, 0755);
	snprintf(hw_sock, sizeof(hw_sock), "%s/sock", hw_dir);
	snprintf(hw_conf, sizeof(hw_conf), "%s/rdmabroker.conf", hw_dir);
	return 0;
}

int hw_connect(struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET |
			     IBC_CONNECT_ATTR_TIMEOUT | IBC_CONNECT_ATTR_FLAGS,
		.socket_path = hw_sock,
		.timeout_ms = 20000,
		.flags = hw_mode == HW_OWN ? IBC_CONNECT_ALLOW_OWN_CONTEXT : 0,
	};

	if (hw_domain) {
		attr.comp_mask |= IBC_CONNECT_ATTR_DOMAIN;
		attr.domain = hw_domain;
	}

	return ibc_connect(&attr, ret);
}

int hw_start_daemon(const char *bin, const char *conf_text)
{
	struct ibc_client *c;
	size_t len = conf_text ? strlen(conf_text) : 0;
	int fd;

	/* Never the machine's own configuration. */
	errno = 0;
	fd = open(hw_conf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (len && write(fd, conf_text, len) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	close(fd);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		const char *kind = hw_mode == HW_SOFT ? "soft" : "verbs";

		execl(bin, bin, "--device", kind, "--socket", hw_sock,
		      "--runtime-dir", hw_dir, "--config", hw_conf,
		      "--socket-mode", "0666", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
			fprintf(stderr, "hwlib: rdmabrokerd exited at start\n");
			return -ECHILD;
		}
		if (hw_connect(&c) == 0) {
			ibc_disconnect(c);
			return 0;
		}
		usleep(50000);
	}
	return -ETIMEDOUT;
}

void hw_stop_daemon(const char *subdir)
{
	char path[300];

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
	}
	unlink(hw_conf);
	unlink(hw_sock);
	if (subdir) {
		DIR *d;

		snprintf(path, sizeof(path), "%s/%s", hw_dir, subdir);
		/* What the daemon keeps there across a stop (declared XRCD
		 * files) goes too. */
		d = opendir(path);
		for (struct dirent *e; d && (e = readdir(d));)
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		if (d)
			closedir(d);
		rmdir(path);
	}
	rmdir(hw_dir);
}
