// SPDX-License-Identifier: MIT
/* What the mlx5 hardware suites share; see hwlib.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HW_NAME "hwlib"
#include "tests/hw/hwlib.h"

char hw_dir[64], hw_sock[256], hw_conf[256];
static pid_t daemon_pid = -1;

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

int hw_mkdir(const char *tmpl)
{
	snprintf(hw_dir, sizeof(hw_dir), "%s", tmpl);
	errno = 0;
	if (!mkdtemp(hw_dir))
		return -errno;
	chmod(hw_dir, 0755);
	snprintf(hw_sock, sizeof(hw_sock), "%s/sock", hw_dir);
	snprintf(hw_conf, sizeof(hw_conf), "%s/rdmabroker.conf", hw_dir);
	return 0;
}

int hw_connect(struct ibc_client **ret)
{
	struct ibc_connect_attr attr = {
		.comp_mask = IBC_CONNECT_ATTR_SOCKET,
		.socket_path = hw_sock,
	};

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
		execl(bin, bin, "--device", "verbs", "--socket", hw_sock,
		      "--runtime-dir", hw_dir, "--config", hw_conf,
		      "--socket-mode", "0666", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
			daemon_pid = -1;
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
