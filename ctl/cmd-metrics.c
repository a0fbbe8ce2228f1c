// SPDX-License-Identifier: MIT
/*
 * rdmabrokerctl metrics [--output FILE]: the broker's Prometheus text, for
 * node_exporter's textfile collector (or a look). --output writes FILE
 * whole or not at all (a temporary file beside it, renamed over it), so
 * that the collector never reads half a text; --json prints the text as
 * one string of an object, --output still writes the text.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"

/* The broker escapes every label value; a line that still holds a byte a
 * terminal acts on (a broker that is not ours) is shown escaped. */
static int metrics_print(FILE *f, char *text, size_t len)
{
	char *line = text, *end = text + len;

	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t off;

		if (nl)
			*nl = '\0';
		if (text_find_unsafe(line, &off)) {
			size_t n = strlen(line);
			char *esc = malloc(TEXT_ESCAPED_SIZE(n));

			if (!esc)
				return -ENOMEM;
			fprintf(f, "%s\n",
				text_escape(esc, TEXT_ESCAPED_SIZE(n), line));
			free(esc);
		} else {
			fprintf(f, "%s\n", line);
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return ferror(f) ? -EIO : 0;
}

/* Write @text into @path through a temporary file renamed over it. */
static int metrics_write(const char *path, char *text, size_t len)
{
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	FILE *f = NULL;
	int fd = -1, err = 0;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		err = -errno;
		goto out;
	}
	fd = -1;
	err = metrics_print(f, text, len);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		err = err ? err : -errno;
	if (fclose(f) != 0)
		err = err ? err : -errno;
	f = NULL;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
out:
	if (fd >= 0)
		close(fd);
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}

int cmd_metrics(struct ctl *ctl, int argc, char **argv)
{
	const char *output = NULL;
	char *text;
	size_t len;
	int ret;

	if (argc == 3 && strcmp(argv[1], "--output") == 0 && *argv[2]) {
		output = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "rdmabrokerctl: metrics takes only "
				"--output FILE\n");
		return CTL_USAGE;
	}
	ret = ctl_connect(ctl);
	if (ret)
		return ret;
	ret = ibc_metrics(ctl->client, &text, &len);
	if (ret < 0)
		return ctl_fail("metrics", ret);
	/* JSON: the text whole, as one string (json_string() keeps it
	 * valid whatever the bytes). */
	if (ctl->json && !output) {
		printf("{\"format\":\"prometheus-text-0.0.4\",\"text\":");
		json_string(stdout, text);
		printf("}\n");
		free(text);
		return CTL_OK;
	}
	ret = output ? metrics_write(output, text, len) :
		       metrics_print(stdout, text, len);
	free(text);
	if (ret < 0) {
		fprintf(stderr, "rdmabrokerctl: metrics: %s: %s\n",
			output ? output : "standard output", strerror(-ret));
		return CTL_ERROR;
	}
	return CTL_OK;
}
