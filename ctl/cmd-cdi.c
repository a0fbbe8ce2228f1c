// SPDX-License-Identifier: MIT
/*
 * rdmabrokerctl cdi: a Container Device Interface spec that gives a
 * container the broker and nothing more. Its one device, "broker", mounts
 * the socket and names it in $RDMABROKER_SOCKET, and for each verbs device
 * the broker serves adds what ibv_import_device() needs: the uverbs node,
 * which libibverbs stat()s when it lists devices (it never opens it: the
 * broker sends the context's descriptor), and the device's sysfs
 * directories, which it reads. No umad, issm or rdma_cm node: a container
 * gets no verbs the broker does not see. The domain is the broker's choice
 * (uid, groups, cgroup), never the spec's: a spec cannot grant a domain.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"

/* The newest version Debian 12's podman (4.3) reads; containerd and CRI-O
 * read it too. A newer one would be refused there without a word of why
 * ("unresolvable CDI devices"). */
#define CDI_VERSION "0.5.0"
#define CDI_KIND "rdmabroker.io/broker"
#define CDI_DEVICE "broker"
#define SYSFS_UVERBS "/sys/class/infiniband_verbs"
#define SYSFS_IBDEV "/sys/class/infiniband"

/* What one verbs device needs inside a container. */
struct cdi_node {
	char node[PATH_MAX]; /* /dev/infiniband/uverbsN */
	unsigned int major, minor;
	mode_t mode;
	char sysfs_uverbs[PATH_MAX]; /* the real directories */
	char sysfs_ibdev[PATH_MAX];
};

/* CDI's name rules: a vendor of letters, digits, '.', '-' and '_' that
 * starts with a letter and ends with a letter or digit; a class the same
 * without '.'. Runtimes refuse anything else, some by crashing (podman
 * 4.3 on a class of one letter). */
static bool cdi_name_ok(const char *s, size_t n, const char *inner)
{
	char last;

	if (n < 2 || !((s[0] >= 'a' && s[0] <= 'z') ||
		       (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	last = s[n - 1];
	if (!((last >= 'a' && last <= 'z') || (last >= 'A' && last <= 'Z') ||
	      (last >= '0' && last <= '9')))
		return false;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr(inner, c)))
			return false;
	}
	return true;
}

static bool cdi_kind_ok(const char *kind)
{
	const char *slash = strchr(kind, '/');

	return slash && *kind && cdi_name_ok(kind, (size_t)(slash - kind),
					     ".-_") &&
	       cdi_name_ok(slash + 1, strlen(slash + 1), "-_");
}

/* The first line of @dir/@name into @buf; 0 or -errno. */
static int read_line(int dir, const char *name, char *buf, size_t size)
{
	ssize_t n;
	int fd, err;

	fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The uverbs node and sysfs directories of device @ibdev: 0, -ENODEV when
 * no uverbs device names it, or -errno with the path in @what. */
static int cdi_find_node(const char *ibdev, struct cdi_node *ret,
			 char *what, size_t what_size)
{
	char path[PATH_MAX], line[256];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int ret_err = -ENODEV;

	d = opendir(SYSFS_UVERBS);
	if (!d) {
		snprintf(what, what_size, "%s", SYSFS_UVERBS);
		return -errno;
	}
	while ((de = readdir(d))) {
		unsigned int ma, mi;
		int dir;

		if (strncmp(de->d_name, "uverbs", 6) != 0)
			continue;
		dir = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			continue;
		if (read_line(dir, "ibdev", line, sizeof(line)) < 0 ||
		    strcmp(line, ibdev) != 0 ||
		    read_line(dir, "dev", line, sizeof(line)) < 0 ||
		    sscanf(line, "%u:%u", &ma, &mi) != 2) {
			close(dir);
			continue;
		}
		close(dir);
		snprintf(ret->node, sizeof(ret->node), "/dev/infiniband/%s",
			 de->d_name);
		snprintf(path, sizeof(path), SYSFS_UVERBS "/%s", de->d_name);
		if (!realpath(path, ret->sysfs_uverbs)) {
			ret_err = -errno;
			snprintf(what, what_size, "%s", path);
			break;
		}
		snprintf(path, sizeof(path), SYSFS_IBDEV "/%s", ibdev);
		if (!realpath(path, ret->sysfs_ibdev)) {
			ret_err = -errno;
			snprintf(what, what_size, "%s", path);
			break;
		}
		/* The node the container gets is the host's, as udev made
		 * it (0666 by rdma-core's rule). */
		if (stat(ret->node, &st) < 0) {
			ret_err = -errno;
			snprintf(what, what_size, "%s", ret->node);
			break;
		}
		if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(ma, mi)) {
			ret_err = -ENODEV;
			snprintf(what, what_size,
				 "%s is not character device %u:%u",
				 ret->node, ma, mi);
			break;
		}
		ret->major = ma;
		ret->minor = mi;
		ret->mode = st.st_mode & 0777;
		ret_err = 0;
		break;
	}
	closedir(d);
	return ret_err;
}

static void cdi_mount(FILE *f, bool *first, const char *host,
		      const char *container, const char *bind,
		      const char *options)
{
	fprintf(f, "%s{\"hostPath\":", *first ? "" : ",");
	json_string(f, host);
	fprintf(f, ",\"containerPath\":");
	json_string(f, container);
	fprintf(f, ",\"type\":\"bind\",\"options\":[%s,%s]}", bind, options);
	*first = false;
}

/* The spec into @f; CTL_OK or CTL_ERROR, said. */
static int cdi_spec(FILE *f, struct ctl *ctl, const char *kind,
		    const char *host_sock, const char *cont_sock)
{
	/* Read-only does not stop connect(), which writes to no file
	 * system; it stops a container's root from chmod()ing or chown()ing
	 * the host's socket. */
	static const char ro[] = "\"ro\",\"nosuid\",\"nodev\",\"noexec\"";
	struct ibc_device_info *d;
	struct cdi_node *nodes = NULL;
	size_t n, nn = 0;
	bool first = true;
	int ret;

	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_list_devices(ctl->client, &d, sizeof(*d), &n);
	if (ret < 0)
		return ctl_fail("cdi: devices", ret);
	nodes = calloc(n ? n : 1, sizeof(*nodes));
	if (!nodes) {
		ibc_list_free(d);
		return ctl_fail("cdi", -ENOMEM);
	}
	for (size_t i = 0; i < n; i++) {
		char what[PATH_MAX + 32] = "";
		char name[CTL_TEXT_SIZE(d[i].name)];

		if (strcmp(d[i].kind, "verbs") != 0 || d[i].removed)
			continue;
		ret = cdi_find_node(d[i].name, &nodes[nn], what, sizeof(what));
		if (ret < 0) {
			text_escape(name, sizeof(name), d[i].name);
			if (ret == -ENODEV && !*what)
				fprintf(stderr,
					"rdmabrokerctl: cdi: no uverbs device "
					"in " SYSFS_UVERBS " names %s: the "
					"broker's devices are not this "
					"host's; run cdi on the broker's "
					"host\n",
					name);
			else
				fprintf(stderr,
					"rdmabrokerctl: cdi: device %s: %s: "
					"%s\n",
					name, what, strerror(-ret));
			free(nodes);
			ibc_list_free(d);
			return CTL_ERROR;
		}
		nn++;
	}
	ibc_list_free(d);

	fprintf(f, "{\"cdiVersion\":\"" CDI_VERSION "\",\"kind\":");
	json_string(f, kind);
	fprintf(f, ",\"devices\":[{\"name\":\"" CDI_DEVICE
		   "\",\"containerEdits\":{\"env\":[");
	{
		char env[PATH_MAX + 32];

		snprintf(env, sizeof(env), "RDMABROKER_SOCKET=%s", cont_sock);
		json_string(f, env);
	}
	fprintf(f, "],\"deviceNodes\":[");
	for (size_t i = 0; i < nn; i++) {
		fprintf(f, "%s{\"path\":", i ? "," : "");
		json_string(f, nodes[i].node);
		fprintf(f,
			",\"type\":\"c\",\"major\":%u,\"minor\":%u,"
			"\"fileMode\":%u,\"permissions\":\"rw\"}",
			nodes[i].major, nodes[i].minor,
			(unsigned int)nodes[i].mode);
	}
	fprintf(f, "],\"mounts\":[");
	cdi_mount(f, &first, host_sock, cont_sock, "\"bind\"", ro);
	for (size_t i = 0; i < nn; i++) {
		cdi_mount(f, &first, nodes[i].sysfs_uverbs,
			  nodes[i].sysfs_uverbs, "\"rbind\"", ro);
		cdi_mount(f, &first, nodes[i].sysfs_ibdev,
			  nodes[i].sysfs_ibdev, "\"rbind\"", ro);
	}
	fprintf(f, "]}}]}");
	free(nodes);
	return CTL_OK;
}

/* @path's directory and a temporary name beside it, then the rename:
 * runtimes watch their spec directories and must never read half a
 * spec. */
static int cdi_write(const char *path, const char *buf, size_t len)
{
	char tmp[PATH_MAX];
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && !err;) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/*
 * The spec as text, a line: indented with --pretty (files are read by
 * people too), except on stdout with --json, where the command table
 * indents what every command prints.
 */
static int cdi_render(struct ctl *ctl, const char *kind,
		      const char *host_sock, const char *cont_sock,
		      bool to_file, char **ret_buf, size_t *ret_len)
{
	bool pretty = ctl->pretty && (to_file || !ctl->json);
	char *raw = NULL, *out = NULL;
	size_t raw_len = 0, out_len = 0;
	FILE *m;
	int ret;

	m = open_memstream(&raw, &raw_len);
	if (!m)
		return ctl_fail("cdi", -errno);
	ret = cdi_spec(m, ctl, kind, host_sock, cont_sock);
	if (fclose(m) != 0 && ret == CTL_OK)
		ret = ctl_fail("cdi", -ENOMEM);
	if (ret != CTL_OK) {
		free(raw);
		return ret;
	}
	m = open_memstream(&out, &out_len);
	if (!m) {
		free(raw);
		return ctl_fail("cdi", -errno);
	}
	if (pretty)
		json_pretty(m, raw, raw_len);
	else
		fwrite(raw, 1, raw_len, m);
	fputc('\n', m);
	free(raw);
	if (fclose(m) != 0) {
		free(out);
		return ctl_fail("cdi", -ENOMEM);
	}
	*ret_buf = out;
	*ret_len = out_len;
	return CTL_OK;
}

static bool path_printable(const char *s)
{
	size_t off;

	return text_find_unsafe(s, &off) == 0;
}

int cmd_cdi(struct ctl *ctl, int argc, char **argv)
{
	const char *kind = CDI_KIND, *cont_sock = IBC_DEFAULT_SOCKET;
	const char *output = NULL, *sock = ctl->socket_path;
	char host_sock[PATH_MAX];
	char *buf = NULL;
	size_t len = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char **opt = NULL;

		if (strcmp(argv[i], "--kind") == 0)
			opt = &kind;
		else if (strcmp(argv[i], "--container-socket") == 0)
			opt = &cont_sock;
		else if (strcmp(argv[i], "--output") == 0 ||
			 strcmp(argv[i], "-o") == 0)
			opt = &output;
		if (!opt) {
			fprintf(stderr,
				"rdmabrokerctl: cdi: unknown argument \"%s\"\n",
				argv[i]);
			return CTL_USAGE;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "rdmabrokerctl: cdi: %s needs a value\n",
				argv[i]);
			return CTL_USAGE;
		}
		*opt = argv[++i];
	}
	if (!cdi_kind_ok(kind)) {
		fprintf(stderr,
			"rdmabrokerctl: cdi: --kind must be VENDOR/CLASS as "
			"CDI names them (e.g. " CDI_KIND ")\n");
		return CTL_USAGE;
	}
	if (cont_sock[0] != '/' || !path_printable(cont_sock) ||
	    strlen(cont_sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr,
			"rdmabrokerctl: cdi: --container-socket must be an "
			"absolute path of printable characters, at most "
			"107 bytes\n");
		return CTL_USAGE;
	}
	if (!sock)
		sock = getenv("RDMABROKER_SOCKET");
	if (!sock || !*sock)
		sock = IBC_DEFAULT_SOCKET;
	/* The mount names the host's file: a relative --socket is
	 * resolved here, where it means something. */
	if (!realpath(sock, host_sock)) {
		char text[TEXT_ESCAPED_SIZE(PATH_MAX)];
		int err = errno;

		fprintf(stderr,
			"rdmabrokerctl: cdi: the broker's socket %s: %s\n",
			text_escape(text, sizeof(text), sock), strerror(err));
		return CTL_ERROR;
	}
	if (!path_printable(host_sock)) {
		fprintf(stderr, "rdmabrokerctl: cdi: the broker's socket's "
				"path is not printable UTF-8\n");
		return CTL_ERROR;
	}
	ret = cdi_render(ctl, kind, host_sock, cont_sock, output != NULL,
			 &buf, &len);
	if (ret != CTL_OK)
		return ret;
	if (output) {
		ret = cdi_write(output, buf, len);
		if (ret < 0) {
			fprintf(stderr, "rdmabrokerctl: cdi: %s: %s\n", output,
				strerror(-ret));
			free(buf);
			return CTL_ERROR;
		}
	} else {
		fwrite(buf, 1, len, stdout);
	}
	free(buf);
	return CTL_OK;
}
