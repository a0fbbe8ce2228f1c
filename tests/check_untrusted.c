// SPDX-License-Identifier: MIT
/*
 * Bytes from clients on their way to the operator: the UTF-8 decoder and
 * the escaping of common/text/text.c, log_escape() and log_msg() of the daemon,
 * the daemon refusing a hello whose library version is not printable, and
 * the daemon's log for a client whose process name (PR_SET_NAME) holds
 * terminal escapes, a newline that would forge a journal line and bytes
 * that are not UTF-8. rdmabrokerctl's side is in check_ctl.c.
 *
 * The output is checked by tl_text_safe() (tests/testlib.c), written apart
 * from common/text/text.c.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/text/text.h"
#include "daemon/util/log.h"
#include "tests/cklib.h"
#include "tests/testlib.h"

/* --- common/text/text.c --------------------------------------------------- */

START_TEST(test_utf8_decode)
{
	static const struct {
		const char *s;
		int len;
		uint32_t cp;
	} good[] = {
		{ "A", 1, 'A' },
		{ "\x7f", 1, 0x7f },
		{ "\xc2\x80", 2, 0x80 },
		{ "\xc3\xa9", 2, 0xe9 },
		{ "\xdf\xbf", 2, 0x7ff },
		{ "\xe0\xa0\x80", 3, 0x800 },
		{ "\xed\x9f\xbf", 3, 0xd7ff },
		{ "\xee\x80\x80", 3, 0xe000 },
		{ "\xef\xbf\xbd", 3, 0xfffd },
		{ "\xf0\x90\x80\x80", 4, 0x10000 },
		{ "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
	};
	static const char *const bad[] = {
		"\x80",		    /* a continuation byte alone */
		"\xbf",		    /* another */
		"\xc0\x80",	    /* overlong NUL */
		"\xc1\xbf",	    /* overlong */
		"\xe0\x9f\xbf",	    /* overlong */
		"\xf0\x8f\xbf\xbf", /* overlong */
		"\xed\xa0\x80",	    /* a surrogate */
		"\xed\xbf\xbf",	    /* another */
		"\xf4\x90\x80\x80", /* beyond U+10FFFF */
		"\xf5\x80\x80\x80", /* beyond */
		"\xff",		    /* never UTF-8 */
		"\xfe",		    /* never UTF-8 */
		"\xc3",		    /* cut short */
		"\xe2\x82",	    /* cut short */
		"\xf0\x9f\x98",	    /* cut short */
		"\xc3\x28",	    /* not a continuation */
		"\xe2\x28\xa1",	    /* not a continuation */
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint32_t cp = 0;

		ck_assert_int_eq(
			text_utf8_decode(good[i].s, strlen(good[i].s), &cp),
			good[i].len);
		ck_assert_uint_eq(cp, good[i].cp);
		/* One byte short is not a character. */
		if (good[i].len > 1)
			ck_assert_int_eq(text_utf8_decode(good[i].s,
							  strlen(good[i].s) - 1,
							  &cp),
					 -EILSEQ);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t cp = 12345;

		ck_assert_msg(text_utf8_decode(bad[i], strlen(bad[i]), &cp) ==
				      -EILSEQ,
			      "bad sequence %zu accepted", i);
		ck_assert_uint_eq(cp, 12345);
	}
	ck_assert_int_eq(text_utf8_decode("", 0, NULL), -EILSEQ);
}
END_TEST

START_TEST(test_text_is_control)
{
	static const uint32_t ctl[] = { 0,	0x1b,	0x1f,	0x7f,	0x80,
					0x9b,	0x9f,	0x2028, 0x2029, 0x202a,
					0x202e, 0x2066, 0x2069 };
	static const uint32_t ok[] = {
		' ',	'~',	0xa0,	0xe9,	0x2027,
		0x202f, 0x2065, 0x206a, 0xfffd, 0x1f600
	};

	for (size_t i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++)
		ck_assert_msg(text_is_control(ctl[i]), "U+%04X",
			      (unsigned int)ctl[i]);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(!text_is_control(ok[i]), "U+%04X",
			      (unsigned int)ok[i]);
}
END_TEST

START_TEST(test_text_find_unsafe)
{
	size_t off = 99;

	ck_assert_int_eq(text_find_unsafe("", &off), 0);
	ck_assert_int_eq(text_find_unsafe("0.1.0-caf\xc3\xa9 \\", &off), 0);
	ck_assert_uint_eq(off, 99);
	ck_assert_int_eq(text_find_unsafe("0.1\n<0>x", &off), 1);
	ck_assert_uint_eq(off, 3);
	ck_assert_int_eq(text_find_unsafe("ab\xff", &off), 1);
	ck_assert_uint_eq(off, 2);
	ck_assert_int_eq(text_find_unsafe("\xc3\xa9\xc2\x9b[2J", &off), 1);
	ck_assert_uint_eq(off, 2);
	ck_assert_int_eq(text_find_unsafe("a\xe2\x80\xae", &off), 1);
	ck_assert_uint_eq(off, 1);
}
END_TEST

START_TEST(test_text_escape)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "plain 0.1.0", "plain 0.1.0" },
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80",
		  "caf\xc3\xa9 \xf0\x9f\x98\x80" },
		{ "\x1b[2J", "\\x1b[2J" },
		{ "a\nb\tc\r", "a\\x0ab\\x09c\\x0d" },
		{ "\x7f", "\\x7f" },
		{ "\xc2\x9bm", "\\xc2\\x9bm" },
		{ "\xe2\x80\xaexyz", "\\xe2\\x80\\xaexyz" },
		{ "\xff\xfe", "\\xff\\xfe" },
		{ "\xc3(", "\\xc3(" },
		{ "back\\slash", "back\\\\slash" },
		{ "\\x41", "\\\\x41" },
	};
	char buf[TEXT_ESCAPED_SIZE(64)];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(text_escape(buf, sizeof(buf), cases[i].in),
				 cases[i].out);
	/* Cut before what does not fit whole: an escape, a character. */
	ck_assert_str_eq(text_escape(buf, 4, "\x1b"), "");
	ck_assert_str_eq(text_escape(buf, 5, "\x1b"), "\\x1b");
	ck_assert_str_eq(text_escape(buf, 5, "ab\x1b"), "ab");
	ck_assert_str_eq(text_escape(buf, 3, "a\xc3\xa9"), "a");
	ck_assert_str_eq(text_escape(buf, 4, "a\xc3\xa9"), "a\xc3\xa9");
	ck_assert_str_eq(text_escape(buf, 2, "\\"), "");
	ck_assert_str_eq(text_escape(buf, 1, "abc"), "");
}
END_TEST

/* Every string of up to 2 bytes, and random ones: the escaped form is
 * always safe text and fits TEXT_ESCAPED_SIZE. */
START_TEST(test_text_escape_any_bytes)
{
	char in[16], out[TEXT_ESCAPED_SIZE(sizeof(in))];
	struct tl_rng rng;
	size_t off;

	for (unsigned int a = 1; a < 256; a++) {
		for (unsigned int b = 0; b < 256; b++) {
			in[0] = (char)a;
			in[1] = (char)b;
			in[2] = '\0';
			text_escape(out, sizeof(out), in);
			ck_assert_msg(
				tl_text_safe(out, strlen(out), NULL, &off),
				"%02x %02x: byte %zu of the escape", a, b, off);
		}
	}
	tl_rng_seed(&rng, 7);
	for (int i = 0; i < 20000; i++) {
		size_t n = tl_rng_below(&rng, sizeof(in));

		tl_rng_fill(&rng, in, n);
		/* Mostly the bytes that matter: ASCII controls, UTF-8 lead
		 * and continuation bytes. */
		for (size_t k = 0; k < n; k++)
			if (tl_rng_below(&rng, 2))
				in[k] = (char)(in[k] & 0x9f);
		in[n] = '\0';
		text_escape(out, sizeof(out), in);
		ck_assert(strlen(out) < sizeof(out));
		ck_assert_msg(tl_text_safe(out, strlen(out), NULL, &off),
			      "random %d: byte %zu of \"%s\"", i, off, out);
		/* Nothing lost when it fits. */
		if (strlen(in) == n && !strchr(in, '\\') &&
		    !text_find_unsafe(in, &off))
			ck_assert_str_eq(out, in);
	}
}
END_TEST

/* --- the daemon's log ------------------------------------------------- */

/* What log_msg() writes, through a pipe on stderr. */
static char *capture_log(int priority, const char *s)
{
	static char buf[4096];
	int p[2], saved;
	ssize_t n;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	fflush(stderr);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(p[1], 2), 2);
	log_msg(priority, "client said %s.", s);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

START_TEST(test_log_escape)
{
	char esc[LOG_ESCAPED_SIZE(char[32])];
	const char *line;

	log_max_priority = LOG_DEBUG;
	ck_assert_str_eq(log_escape(esc, sizeof(esc), "x\n<0>forged\xff"),
			 "x\\x0a<0>forged\\xff");
	line = capture_log(LOG_INFO, esc);
	ck_assert_str_eq(line, "<6>client said x\\x0a<0>forged\\xff.\n");
	/* A site without log_escape() still writes one line, with its
	 * own priority. */
	line = capture_log(LOG_INFO, "x\n<0>forged\x1b[2J\r");
	ck_assert_str_eq(line, "<6>client said x?<0>forged?[2J?.\n");
	line = capture_log(LOG_DEBUG + 1, "x");
	ck_assert_str_eq(line, "");
}
END_TEST

/* --- against the daemon ------------------------------------------------ */

static struct tl_daemon D;
static struct tl_named_client N;
static char log_path[PATH_MAX];

static void daemon_teardown(void)
{
	tl_named_client_stop(&N);
	tl_daemon_stop(&D);
}

/* Start the daemon at --log-level debug with its stderr in log_path. */
static void daemon_up_logging(void)
{
	static const char *const args[] = { "--log-level", "debug", NULL };
	char *dir = tl_mkdtemp();
	int fd, saved, ret;

	ck_assert_ptr_nonnull(dir);
	snprintf(log_path, sizeof(log_path), "%s/daemon.log", dir);
	free(dir);
	fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fd, 2), 2);
	close(fd);
	ret = tl_daemon_start(&D, args);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_msg(ret == 0, "cannot start %s: %s", tl_daemon_path(),
		      strerror(-ret));
}

/* The log so far; its length in *ret_len. */
static char *log_read(size_t *ret_len)
{
	FILE *f = fopen(log_path, "re");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	*ret_len = n;
	return buf;
}

/* Wait until the log holds @needle; returns the log. */
static char *log_wait(const char *needle, size_t *ret_len)
{
	int64_t deadline = tl_now_ms() + TL_WAIT_MS;

	for (;;) {
		char *log = log_read(ret_len);

		if (memmem(log, *ret_len, needle, strlen(needle)) ||
		    tl_now_ms() >= deadline)
			return log;
		free(log);
		tl_sleep_ms(10);
	}
}

/* Every line of the log starts with "<N>" and is safe text. */
static void assert_log_lines(const char *log, size_t len)
{
	const char *line = log, *end = log + len;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		size_t off;

		ck_assert_msg(n >= 3 && line[0] == '<' && line[1] >= '0' &&
				      line[1] <= '7' && line[2] == '>',
			      "a log line without its priority: \"%.*s\"",
			      (int)n, line);
		ck_assert_msg(tl_text_safe(line, n, NULL, &off),
			      "byte %zu (0x%02x) of a log line is not safe "
			      "text",
			      off, (unsigned char)line[off]);
		line += n + 1;
	}
}

START_TEST(test_log_client_name)
{
	/* 15 bytes: a clear screen, a newline with a forged emergency,
	 * bytes that are not UTF-8. */
	static const char comm[] = "\x1b[2J\n<0>forged\xff";
	const char *want = "(\\x1b[2J\\x0a<0>forged\\xff) connected";
	size_t len;
	char *log;

	ck_assert_uint_eq(strlen(comm), 15);
	daemon_up_logging();
	ck_assert_int_eq(tl_named_client_start(&N, D.sock, comm), 0);
	log = log_wait(want, &len);
	ck_assert_msg(memmem(log, len, want, strlen(want)),
		      "the log does not show the name as %s:\n%s", want, log);
	ck_assert_msg(!strstr(log, "\n<0>"), "a forged line:\n%s", log);
	assert_log_lines(log, len);
	free(log);
}
END_TEST

START_TEST(test_hello_version_refused)
{
	static const struct {
		const char *version;
		const char *says;
	} bad[] = {
		{ "0.1\n<0>forged", "control character U+000A at byte 3" },
		{ "0.1\x1b[2J", "control character U+001B at byte 3" },
		{ "0.1\xc2\x9bJ", "control character U+009B at byte 3" },
		{ "0.1\xe2\x80\xae", "control character U+202E at byte 3" },
		{ "0.1\xff", "not UTF-8: byte 3 is 0xff" },
		{ "0.1\xc3", "not UTF-8: byte 3 is 0xc3" },
	};
	char msg[256];
	size_t len;
	char *log;
	int fd;

	daemon_up_logging();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = tl_raw_connect(D.sock);
		ck_assert_int_ge(fd, 0);
		msg[0] = '\0';
		ck_assert_int_eq(tl_raw_hello_version(fd, 1, bad[i].version,
						      msg, sizeof(msg)),
				 EINVAL);
		ck_assert_msg(strstr(msg, "library version") &&
				      strstr(msg, bad[i].says),
			      "%zu: the sentence \"%s\" does not say \"%s\"", i,
			      msg, bad[i].says);
		/* Refused, not disconnected: a good hello follows. */
		ck_assert_int_eq(tl_raw_hello_version(fd, 2, "0.1", NULL, 0),
				 0);
		close(fd);
	}
	/* Printable UTF-8 and a backslash are fine, and logged escaped. */
	fd = tl_raw_connect(D.sock);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		tl_raw_hello_version(fd, 1, "0.1-caf\xc3\xa9\\n", NULL, 0), 0);
	close(fd);
	log = log_wait("library 0.1-caf\xc3\xa9\\\\n,", &len);
	ck_assert_msg(strstr(log, "library 0.1-caf\xc3\xa9\\\\n,"),
		      "no hello of 0.1-caf\xc3\xa9\\\\n in the log:\n%s", log);
	ck_assert_msg(!strstr(log, "\n<0>"), "a forged line:\n%s", log);
	assert_log_lines(log, len);
	free(log);
}
END_TEST

static Suite *untrusted_suite(void)
{
	Suite *s = suite_create("untrusted");
	TCase *tc;

	tc = tcase_create("text");
	tcase_add_test(tc, test_utf8_decode);
	tcase_add_test(tc, test_text_is_control);
	tcase_add_test(tc, test_text_find_unsafe);
	tcase_add_test(tc, test_text_escape);
	tcase_add_test(tc, test_text_escape_any_bytes);
	tcase_add_test(tc, test_log_escape);
	suite_add_tcase(s, tc);

	tc = tcase_create("daemon");
	tcase_add_checked_fixture(tc, NULL, daemon_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_log_client_name);
	tcase_add_test(tc, test_hello_version_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run("untrusted", untrusted_suite());
}
