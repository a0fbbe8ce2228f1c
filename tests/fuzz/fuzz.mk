# SPDX-License-Identifier: MIT
#
# The libFuzzer build of the fuzz targets, in $(builddir)/fuzz: make
# check-fuzz runs it (tests/fuzz/Makefile.inc), with srcdir, builddir, CC
# (clang), sysconfdir, docdir, LIB_SOURCES (libdaemon's, libproto's and libcommon's
# sources), PKG_CFLAGS and PKG_LIBS. A plain GNU makefile, not automake's:
# it compiles the sources the normal build links, again, with clang and the
# fuzzer's instrumentation, whatever compiler the normal build uses, and
# reuses only its config.h and generated protocol files.

O := $(builddir)/fuzz
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -g -O1 $(SAN) -fsanitize=fuzzer-no-link -Wall -Wextra \
	-Wno-unused-parameter -Wno-missing-field-initializers
FUZZ_CPPFLAGS := -I$(builddir) -I$(srcdir) -include config.h \
	-DSYSCONFDIR='"$(sysconfdir)"' -DDOCDIR='"$(docdir)"' $(PKG_CFLAGS)

# The generated protocol sources are in the build tree, the rest in the
# source tree.
vpath %.c $(srcdir) $(builddir)

LIB_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(filter %.c,$(LIB_SOURCES)))
# libproto: the framing, the hand codecs and the generated code.
PROTO_OBJS := $(sort $(filter $(O)/obj/proto/%,$(LIB_OBJS)) \
	$(O)/obj/proto/rdmabroker.pb-c.o $(O)/obj/proto/state.pb-c.o)

all: $(O)/fuzz_request $(O)/fuzz_dispatch $(O)/fuzz_state

# A compiler that cannot link a libFuzzer program says so once, with the
# packages that bring one.
$(O)/cc-ok:
	@mkdir -p $(O)
	@printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)' \
		'{ return 0; }' >$(O)/cc-check.c
	@if ! $(CC) $(SAN) -fsanitize=fuzzer $(O)/cc-check.c \
		-o $(O)/cc-check >$(O)/cc-check.log 2>&1; then \
		echo "check-fuzz: '$(CC)' cannot link a libFuzzer program:"; \
		sed 's/^/    /' $(O)/cc-check.log; \
		echo "check-fuzz: on Debian 12: apt-get install clang" \
			"libclang-rt-14-dev (or configure FUZZ_CC=...)"; \
		exit 1; \
	fi
	@touch $@

$(O)/obj/%.o: %.c | $(O)/cc-ok
	@mkdir -p $(@D)
	@echo "  FUZZCC   $*.o"
	@$(CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(O)/fuzz_request: $(O)/obj/tests/fuzz/fuzz_request.o $(PROTO_OBJS)
	@echo "  FUZZLD   $(@F)"
	@$(CC) $(SAN) -fsanitize=fuzzer $^ $(PKG_LIBS) -o $@

# The daemon reads the identity the input chose: see fuzz_dispatch.c.
$(O)/fuzz_dispatch: $(O)/obj/tests/fuzz/fuzz_dispatch.o $(LIB_OBJS)
	@echo "  FUZZLD   $(@F)"
	@$(CC) $(SAN) -fsanitize=fuzzer -Wl,--wrap=getsockopt $^ \
		$(PKG_LIBS) -o $@

# The restart's state reader: the journal and the restore's check.
$(O)/fuzz_state: $(O)/obj/tests/fuzz/fuzz_state.o $(LIB_OBJS)
	@echo "  FUZZLD   $(@F)"
	@$(CC) $(SAN) -fsanitize=fuzzer $^ $(PKG_LIBS) -o $@

.PHONY: all
-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
