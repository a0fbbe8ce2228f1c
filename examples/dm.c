// SPDX-License-Identifier: MIT
/*
 * Device memory shared by two processes:
 *   dm write TEXT     allocate a DM, write TEXT into it, print its handle,
 *                     and hold it until stdin closes (then free it)
 *   dm read HANDLE    import the DM HANDLE of this domain and print its
 *                     text
 * Build: cc dm.c $(pkg-config --cflags --libs libibclient)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ibclient.h>

/* DM accesses are whole 4-byte words. */
#define TEXT_MAX 252

static int fail(const char *what, struct ibc_client *client)
{
	fprintf(stderr, "dm: %s: %s\n", what, ibc_last_error());
	ibc_disconnect(client);
	return 1;
}

static int dm_write(struct ibc_client *client, struct ibc_ctx *ctx,
		    const char *text)
{
	char buf[TEXT_MAX + 4] = { 0 };
	struct ibc_dm *dm;
	int c;

	if (strlen(text) > TEXT_MAX) {
		fprintf(stderr, "dm: at most %d bytes of text\n", TEXT_MAX);
		ibc_disconnect(client);
		return 2;
	}
	strcpy(buf, text);
	if (ibc_dm_alloc(ctx, sizeof(buf), 0, &dm) < 0)
		return fail("ibc_dm_alloc", client);
	if (ibc_dm_write(dm, 0, buf, sizeof(buf)) < 0)
		return fail("ibc_dm_write", client);
	printf("DM %llu: handle %u, %zu bytes; wrote \"%s\"\n",
	       (unsigned long long)ibc_dm_id(dm), ibc_dm_handle(dm),
	       ibc_dm_length(dm), text);
	fflush(stdout);
	while ((c = getchar()) != EOF)
		;
	if (ibc_dm_free(dm) < 0)
		return fail("ibc_dm_free", client);
	ibc_disconnect(client);
	return 0;
}

static int dm_read(struct ibc_client *client, struct ibc_ctx *ctx,
		   const char *arg)
{
	char buf[TEXT_MAX + 4];
	struct ibc_dm *dm;
	char *end;
	unsigned long h = strtoul(arg, &end, 10);

	if (end == arg || *end || h > UINT32_MAX) {
		fprintf(stderr, "dm: not a handle: %s\n", arg);
		ibc_disconnect(client);
		return 2;
	}
	if (ibc_dm_import(ctx, (uint32_t)h, &dm) < 0)
		return fail("ibc_dm_import", client);
	if (ibc_dm_read(dm, buf, 0, sizeof(buf)) < 0)
		return fail("ibc_dm_read", client);
	buf[TEXT_MAX] = '\0';
	printf("DM %llu: handle %lu; read \"%s\"\n",
	       (unsigned long long)ibc_dm_id(dm), h, buf);
	if (ibc_dm_unimport(dm) < 0)
		return fail("ibc_dm_unimport", client);
	ibc_disconnect(client);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibc_client *client;
	struct ibc_ctx *ctx;

	if (argc != 3 ||
	    (strcmp(argv[1], "write") && strcmp(argv[1], "read"))) {
		fprintf(stderr, "Usage: dm write TEXT | dm read HANDLE\n");
		return 2;
	}
	if (ibc_connect(NULL, &client) < 0) {
		fprintf(stderr, "dm: connect: %s\n", ibc_last_error());
		return 1;
	}
	if (ibc_open(client, NULL, &ctx) < 0)
		return fail("ibc_open", client);
	if (strcmp(argv[1], "write") == 0)
		return dm_write(client, ctx, argv[2]);
	return dm_read(client, ctx, argv[2]);
}
