// SPDX-License-Identifier: MIT
/*
 * The main() that make check links with a fuzz target instead of libFuzzer:
 * runs LLVMFuzzerTestOneInput once over every file it is given, so that
 * every machine replays the corpus with the ordinary compiler.
 *
 *   replay [-p] PATH...   replay each file, or each file in each directory;
 *                         after -p, paths are raw packets in the conventions
 *                         of tests/corpus (fuzz_wrap_packet)
 *   replay                $TESTS_FUZZ_CORPUS_DIR/NAME, then the packets of
 *                         $TESTS_CORPUS_DIR/ *.bin
 *
 * A crash or a broken invariant aborts; finding no input at all is an error
 * (exit 99), so that a moved corpus cannot pass for a replayed one.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/wire.h"
#include "tests/fuzz/fuzz.h"

/* libFuzzer's default -max_len is 4096; the corpus stays far below this. */
#define REPLAY_MAX_INPUT (1024 * 1024)

static unsigned int n_inputs, n_packets;

static int read_file(const char *path, uint8_t **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = NULL;
	size_t len = 0;
	struct stat st;
	int ret_err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret_err = -errno;
		goto out;
	}
	if (st.st_size > REPLAY_MAX_INPUT) {
		ret_err = -EFBIG;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret_err = -ENOMEM;
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret_err = n < 0 ? -errno : -EIO;
			goto out;
		}
		len += (size_t)n;
	}
	*ret = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret_err;
}

static int replay_file(const char *path, bool packet)
{
	const char *base = strrchr(path, '/');
	uint8_t *data = NULL, *in = NULL;
	size_t len = 0;
	int ret;

	ret = read_file(path, &data, &len);
	if (ret < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(-ret));
		return ret;
	}
	if (packet) {
		ret = fuzz_wrap_packet(base ? base + 1 : path, data, len, &in);
		if (ret < 0) {
			free(data);
			return ret;
		}
		free(data);
		data = in;
		len = (size_t)ret;
	}
	/* A crash report should say which file it was. */
	if (getenv("REPLAY_VERBOSE"))
		fprintf(stderr, "replay: %s\n", path);
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	n_inputs++;
	n_packets += packet;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of @dir in name order (only *.bin for packets). */
static int replay_dir(const char *dir, bool packet)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char *name;

		if (de->d_name[0] == '.')
			continue;
		if (packet && (l < 4 || strcmp(de->d_name + l - 4, ".bin")))
			continue;
		if (n == cap) {
			char **more = realloc(names, (cap ? cap * 2 : 64) *
							     sizeof(*names));

			if (!more) {
				ret = -ENOMEM;
				break;
			}
			names = more;
			cap = cap ? cap * 2 : 64;
		}
		name = strdup(de->d_name);
		if (!name) {
			ret = -ENOMEM;
			break;
		}
		names[n++] = name;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (ret == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			ret = replay_file(path, packet);
		free(names[i]);
	}
	free(names);
	return ret;
}

static int replay_path(const char *path, bool packet)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return S_ISDIR(st.st_mode) ? replay_dir(path, packet) :
				     replay_file(path, packet);
}

int main(int argc, char **argv)
{
	const char *fuzz_dir = getenv("TESTS_FUZZ_CORPUS_DIR");
	const char *packets = getenv("TESTS_CORPUS_DIR");
	bool packet = false;
	int ret = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc && ret == 0; i++) {
			if (strcmp(argv[i], "-p") == 0)
				packet = true;
			else
				ret = replay_path(argv[i], packet);
		}
	} else {
		char dir[4096];

		if (!fuzz_dir || !packets) {
			fprintf(stderr,
				"replay: set TESTS_FUZZ_CORPUS_DIR and "
				"TESTS_CORPUS_DIR, or name the inputs\n");
			return 99;
		}
		snprintf(dir, sizeof(dir), "%s/%s", fuzz_dir, fuzz_target_name);
		ret = replay_path(dir, false);
		if (ret == 0)
			ret = replay_path(packets, true);
	}
	if (ret < 0)
		return 99;
	if (n_inputs == 0) {
		fprintf(stderr, "replay: no input found\n");
		return 99;
	}
	printf("%s: %u inputs replayed (%u of them raw packets), no "
	       "crash\n",
	       fuzz_target_name, n_inputs, n_packets);
	return 0;
}
