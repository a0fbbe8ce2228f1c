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
#define CDI_KIND_DAEMON "rdmabroker.io/daemon"
#define CDI_DEVICE "broker"
#define SYSFS_UVERBS "/sys/class/infiniband_verbs"
#define SYSFS_IBDEV "/sys/class/infiniband"

/* What one verbs device needs inside a container. */
struct cdi_node {
	char node[sizeof("/dev/infiniband/") + NAME_MAX]; /* .../uverbsN */
	unsigned int major, minor;
	mode_t mode;
	char sysfs_uverbs[PATH_MAX]; /* the real directories */
	char sysfs_ibdev[PATH_MAX];
};

struct cdi_opts {
	const char *kind;
	/* --daemon: the spec of every uverbs node, for the daemon's own
	 * container; no broker is asked. */
	bool daemon;
	char host_sock[PATH_MAX];
	const char *cont_sock;
	const char *output;
};

/* CDI's name rules: a vendor of letters, digits, '.', '-' and '_' that
 * starts with a letter and ends with a letter or digit; a class the same
 * without '.'. Runtimes refuse anything else, some by crashing (podman
 * 4.3 on a class of one letter). */
static bool cdi_name_ok(const char *s, size_t n, const char *inner)
{
	char last;

	if (n < 2 ||
	    !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
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

	return slash && *kind &&
	       cdi_name_ok(kind, (size_t)(slash - kind), ".-_") &&
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

/* The uverbs node and sysfs directories of device @ibdev into *@ret_node:
 * 0, -ENODEV when no uverbs device names it, or -errno with the path in
 * @what. */
static int cdi_find_node(const char *ibdev, struct cdi_node *ret_node,
			 char *what, size_t what_size)
{
	char path[PATH_MAX], line[256];
	struct cdi_node n, *ret = &n;
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
			snprintf(what, what_size, "/dev/infiniband/%s",
				 de->d_name);
			break;
		}
		if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(ma, mi)) {
			ret_err = -ENODEV;
			snprintf(what, what_size,
				 "/dev/infiniband/%s is not character device "
				 "%u:%u",
				 de->d_name, ma, mi);
			break;
		}
		ret->major = ma;
		ret->minor = mi;
		ret->mode = st.st_mode & 0777;
		*ret_node = n;
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

static void cdi_nodes(FILE *f, const struct cdi_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s{\"path\":", i ? "," : "");
		json_string(f, nodes[i].node);
		fprintf(f,
			",\"type\":\"c\",\"major\":%u,\"minor\":%u,"
			"\"fileMode\":%u,\"permissions\":\"rw\"}",
			nodes[i].major, nodes[i].minor,
			(unsigned int)nodes[i].mode);
	}
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
	cdi_nodes(f, nodes, nn);
	fprintf(f, "],\"mounts\":[");
	cdi_mount(f, &first, host_sock, cont_sock, "\"bind\"", ro);
	for (size_t i = 0; i < nn; i++) {
		cdi_mount(f, &first, nodes[i].sysfs_uverbs,
			  nodes[i].sysfs_uverbs, "\"rbind\"", ro);
		cdi_mount(f, &first, nodes[i].sysfs_ibdev, nodes[i].sysfs_ibdev,
			  "\"rbind\"", ro);
	}
	fprintf(f, "]}}]}");
	free(nodes);
	return CTL_OK;
}

/*
 * --daemon: every uverbs node of this host, for a broker that runs in a
 * container (deploy/kubernetes/): a runtime lets a container open only the
 * device nodes it was given, and a CDI device gives them without
 * privileged mode. What the broker's clients get is the other spec.
 */
static int cdi_daemon_spec(FILE *f, const char *kind)
{
	struct cdi_node *nodes = NULL;
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int ret = CTL_OK;

	/* No RDMA device at all (no such class): an empty device, for a
	 * broker on the software device. */
	d = opendir(SYSFS_UVERBS);
	while (d && (de = readdir(d))) {
		char path[PATH_MAX], ibdev[256], what[PATH_MAX + 32] = "";
		struct cdi_node *more = NULL;
		int fd, err;

		if (strncmp(de->d_name, "uverbs", 6) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/ibdev", de->d_name);
		fd = openat(dirfd(d), de->d_name,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		err = fd < 0 ? -errno :
			       read_line(fd, "ibdev", ibdev, sizeof(ibdev));
		if (fd >= 0)
			close(fd);
		if (!err) {
			more = realloc(nodes, (n + 1) * sizeof(*nodes));
			err = more ? 0 : -ENOMEM;
		}
		if (!err) {
			nodes = more;
			err = cdi_find_node(ibdev, &nodes[n], what,
					    sizeof(what));
		}
		if (err) {
			fprintf(stderr, "rdmabrokerctl: cdi: %s: %s\n",
				*what ? what : path, strerror(-err));
			ret = CTL_ERROR;
			break;
		}
		n++;
	}
	if (d)
		closedir(d);
	if (ret == CTL_OK) {
		fprintf(f, "{\"cdiVersion\":\"" CDI_VERSION "\",\"kind\":");
		json_string(f, kind);
		fprintf(f, ",\"devices\":[{\"name\":\"uverbs\","
			   "\"containerEdits\":{\"deviceNodes\":[");
		cdi_nodes(f, nodes, n);
		fprintf(f, "]}}]}");
	}
	free(nodes);
	return ret;
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
static int cdi_render(struct ctl *ctl, const struct cdi_opts *o, char **ret_buf,
		      size_t *ret_len)
{
	bool pretty = ctl->pretty && (o->output || !ctl->json);
	char *raw = NULL, *out = NULL;
	size_t raw_len = 0, out_len = 0;
	FILE *m;
	int ret;

	m = open_memstream(&raw, &raw_len);
	if (!m)
		return ctl_fail("cdi", -errno);
	ret = o->daemon ? cdi_daemon_spec(m, o->kind) :
			  cdi_spec(m, ctl, o->kind, o->host_sock, o->cont_sock);
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

/* The broker's socket, as the host names it: a relative --socket is
 * resolved here, where it means something. */
static int cdi_host_socket(const struct ctl *ctl, char *buf)
{
	const char *sock = ctl->socket_path;

	if (!sock)
		sock = getenv("RDMABROKER_SOCKET");
	if (!sock || !*sock)
		sock = IBC_DEFAULT_SOCKET;
	if (!realpath(sock, buf)) {
		char text[TEXT_ESCAPED_SIZE(PATH_MAX)];
		int err = errno;

		fprintf(stderr,
			"rdmabrokerctl: cdi: the broker's socket %s: %s\n",
			text_escape(text, sizeof(text), sock), strerror(err));
		return CTL_ERROR;
	}
	if (!path_printable(buf)) {
		fprintf(stderr, "rdmabrokerctl: cdi: the broker's socket's "
				"path is not printable UTF-8\n");
		return CTL_ERROR;
	}
	return CTL_OK;
}

static int cdi_args(int argc, char **argv, struct cdi_opts *o)
{
	bool cont_given = false;

	for (int i = 1; i < argc; i++) {
		const char **opt = NULL;

		if (strcmp(argv[i], "--daemon") == 0) {
			o->daemon = true;
			continue;
		}
		if (strcmp(argv[i], "--kind") == 0)
			opt = &o->kind;
		else if (strcmp(argv[i], "--container-socket") == 0)
			opt = &o->cont_sock;
		else if (strcmp(argv[i], "--output") == 0 ||
			 strcmp(argv[i], "-o") == 0)
			opt = &o->output;
		if (!opt) {
			fprintf(stderr,
				"rdmabrokerctl: cdi: unknown argument \"%s\"\n",
				argv[i]);
			return CTL_USAGE;
		}
		if (i + 1 >= argc) {
			fprintf(stderr,
				"rdmabrokerctl: cdi: %s needs a value\n",
				argv[i]);
			return CTL_USAGE;
		}
		cont_given |= opt == &o->cont_sock;
		*opt = argv[++i];
	}
	if (!o->kind)
		o->kind = o->daemon ? CDI_KIND_DAEMON : CDI_KIND;
	if (!cdi_kind_ok(o->kind)) {
		fprintf(stderr,
			"rdmabrokerctl: cdi: --kind must be VENDOR/CLASS as "
			"CDI names them (e.g. " CDI_KIND ")\n");
		return CTL_USAGE;
	}
	if (o->daemon && cont_given) {
		fprintf(stderr, "rdmabrokerctl: cdi: --daemon's spec mounts "
				"no socket: no --container-socket\n");
		return CTL_USAGE;
	}
	if (o->cont_sock[0] != '/' || !path_printable(o->cont_sock) ||
	    strlen(o->cont_sock) >=
		    sizeof(((struct sockaddr_un *)0)->sun_path)) {
		fprintf(stderr,
			"rdmabrokerctl: cdi: --container-socket must be an "
			"absolute path of printable characters, at most "
			"107 bytes\n");
		return CTL_USAGE;
	}
	return CTL_OK;
}

int cmd_cdi(struct ctl *ctl, int argc, char **argv)
{
	struct cdi_opts o = { .cont_sock = IBC_DEFAULT_SOCKET };
	char *buf = NULL;
	size_t len = 0;
	int ret;

	ret = cdi_args(argc, argv, &o);
	if (ret == CTL_OK && !o.daemon)
		ret = cdi_host_socket(ctl, o.host_sock);
	if (ret == CTL_OK)
		ret = cdi_render(ctl, &o, &buf, &len);
	if (ret != CTL_OK)
		return ret;
	if (o.output) {
		ret = cdi_write(o.output, buf, len);
		if (ret < 0) {
			char text[TEXT_ESCAPED_SIZE(PATH_MAX)];

			fprintf(stderr, "rdmabrokerctl: cdi: %s: %s\n",
				text_escape(text, sizeof(text), o.output),
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
