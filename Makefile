# slicefit: one non-recursive Makefile.
#
#   make            bin/slicefit-replay (and bin/slicefit once extender/ exists)
#   make test       every Criterion suite, the purity proof of packer/
#   make check      the same tests under AddressSanitizer + UBSan
#   make fuzz       libFuzzer on every parser, FUZZ_SECONDS each (clang)
#   make bench      the core's benchmarks (bench/bench_*.c)
#   make deps       installs the missing Debian packages (apt-get), nothing if all present
#   make install    PREFIX=/usr/local DESTDIR=
#   make run        deps, all, then bin/slicefit on the example cluster (127.0.0.1:8888)
#   make run-replay deps, all, then the replay of the bundled synthetic trace
#   make clean

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
V       ?= release
FUZZ_SECONDS ?= 20

PKGS     := libmicrohttpd jansson libcurl libuv yaml-0.1 gnutls
DEB_PKGS := build-essential pkg-config clang libclang-rt-14-dev valgrind \
            libmicrohttpd-dev libgnutls28-dev libjansson-dev libcurl4-openssl-dev libuv1-dev libcriterion-dev libyaml-dev

# Flags in named layers (Redis's src/Makefile).
STD   := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN  := -Wall -Wextra -Werror -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
         -Wold-style-definition -Wpointer-arith -Wcast-qual -Wwrite-strings -Wvla -Wformat=2 \
         -Wundef -Wimplicit-fallthrough
CORE_WARN := -Wconversion -Wsign-conversion -Wdouble-promotion
# The release build is hardened (stack canaries, fortified libc calls, read-only
# relocations bound at start); the check build keeps ASan's own instrumentation.
HARDEN      := -fstack-protector-strong -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
OPT_release := -O2 -g $(HARDEN)
OPT_check   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDSAN_release := -Wl,-z,relro,-z,now
LDSAN_check := -fsanitize=address,undefined
OPT   := $(OPT_$(V))
DEPF  := -MMD -MP
INC   := -Iinclude

B := build/$(V)

.DEFAULT_GOAL := all

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CRIT_LIBS  = $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

# ---- the pure core ----
CORE_SRC := $(wildcard packer/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
CORE_LIB := $(B)/libslicefit_packer.a

$(B)/packer/%.o: packer/%.c
	@mkdir -p $(@D)
	$(CC) $(STD) $(WARN) $(CORE_WARN) $(OPT) $(DEPF) $(INC) -c $< -o $@

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# ---- the shells (they may use the I/O libraries) ----
$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(STD) $(WARN) $(OPT) $(DEPF) $(INC) $(PKG_CFLAGS) -c $< -o $@

# apiwatch/ and extender/ (without its main) link into a library of the shell.
SHELL_SRC := $(wildcard apiwatch/*.c) $(filter-out extender/main.c,$(wildcard extender/*.c))
SHELL_OBJ := $(SHELL_SRC:%.c=$(B)/%.o)
SHELL_LIB := $(B)/libslicefit_shell.a
$(SHELL_LIB): $(SHELL_OBJ)
	@rm -f $@
	ar rcs $@ $^

# bench/replay*.c make the replay tool; bench/bench_*.c are benchmarks.
REPLAY_SRC := $(wildcard bench/replay*.c)
REPLAY_OBJ := $(REPLAY_SRC:%.c=$(B)/%.o)
REPLAY_MAIN := $(B)/bench/replay_main.o
REPLAY_LIBOBJ := $(filter-out $(REPLAY_MAIN),$(REPLAY_OBJ))

PROGS := bin/slicefit-replay
ifneq ($(wildcard extender/main.c),)
PROGS += bin/slicefit
endif

all: $(PROGS)

bin/slicefit-replay: $(REPLAY_OBJ) $(SHELL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

bin/slicefit: $(B)/extender/main.o $(SHELL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

# ---- tests: one Criterion binary per mirrored source folder ----
TEST_DIRS := $(sort $(dir $(wildcard test/*/test_*.c)))
TEST_BINS := $(foreach d,$(TEST_DIRS),$(B)/test-$(notdir $(d:%/=%)))

define test_rule
$(B)/test-$(1): $(patsubst %.c,$(B)/%.o,$(wildcard test/$(1)/*.c)) $(REPLAY_LIBOBJ) $(SHELL_LIB) $(CORE_LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(OPT) $$(LDSAN_$$(V)) -o $$@ $$^ $$(CRIT_LIBS) $$(PKG_LIBS) -lm
endef
$(foreach d,$(TEST_DIRS),$(eval $(call test_rule,$(notdir $(d:%/=%)))))

# test/tools/NAME.c: helper programs the tests start (the fake kube-apiserver, ...).
TOOL_SRC  := $(wildcard test/tools/*.c)
TOOL_BINS := $(TOOL_SRC:test/tools/%.c=$(B)/tools/%)
$(B)/tools/%: $(B)/test/tools/%.o $(SHELL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

# Tests find shared/ and the repository's data relative to the top.
export SLICEFIT_TOP := $(CURDIR)

test: $(PROGS) $(TOOL_BINS) $(TEST_BINS) check-pure
	@set -e; for t in $(TEST_BINS); do echo "== $$t"; $$t --jobs 2; done
	@echo "all test suites passed"

# libcriterion's own leak is suppressed (test/lsan.supp); every other leak fails.
check:
	LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp $(MAKE) V=check test

# The core does no I/O: it includes none of the I/O libraries and the static
# library references no symbol outside a short allow-list of pure libc/libm.
PURE_ALLOW := malloc calloc realloc free memcpy memmove memset memcmp strlen strcmp strncmp \
  strchr strrchr strstr strcspn strspn strtoll strtoull strtod qsort abort snprintf vsnprintf \
  __assert_fail __stack_chk_fail exp log log2 sqrt floor ceil fabs pow __ctype_b_loc \
  __ctype_tolower_loc __ctype_toupper_loc tolower toupper strncasecmp strcasecmp memchr \
  __isoc99_sscanf __isoc23_strtoll __isoc23_strtoull llabs lround llround __popcountdi2 \
  regcomp regexec regfree bcmp strcpy \
  __snprintf_chk __vsnprintf_chk __memcpy_chk __memmove_chk __memset_chk __strcpy_chk
check-pure: $(CORE_LIB)
	@if grep -nE '#include *[<"](jansson|curl/|uv\.h|microhttpd|time\.h|unistd\.h|fcntl\.h|sys/)' packer/*.c packer/*.h include/slicefit/*.h 2>/dev/null \
	  | grep -vE 'include/slicefit/(http|watch|decode|log|replay|extender|cluster|apiwatch)'; then \
	  echo "check-pure: packer/ includes an I/O header"; exit 1; fi
	@nm --defined-only $(CORE_LIB) | awk 'NF==3 {print $$3}' | sort -u > $(B)/core-defined.txt
	@bad=$$(nm -u $(CORE_LIB) | awk 'NF==2 {print $$2}' | sort -u | \
	  grep -vxF -f $(B)/core-defined.txt | grep -vE '^__(asan|ubsan)_' | \
	  grep -vxF $(foreach s,$(PURE_ALLOW),-e $(s)) || true); \
	if [ -n "$$bad" ]; then echo "check-pure: packer/ calls outside the pure allow-list:"; echo "$$bad"; exit 1; fi
	@echo "check-pure: packer/ is pure"

# ---- benchmarks (never timed tests) ----
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
$(B)/bench/bench_%: $(B)/bench/bench_%.o $(REPLAY_LIBOBJ) $(SHELL_LIB) $(CORE_LIB)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm
bench: $(BENCH_BINS) $(PROGS) $(TOOL_BINS)
	@set -e; for b in $(BENCH_BINS); do echo "== $$b"; $$b; done

# ---- fuzzing: clang libFuzzer, bounded time ----
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
build/fuzz/fuzz_%: fuzz/fuzz_%.c $(CORE_SRC) $(SHELL_SRC) $(REPLAY_SRC)
	@mkdir -p $(@D)
	clang $(STD) $(INC) $(PKG_CFLAGS) $(FUZZ_FLAGS) -o $@ $< $(CORE_SRC) $(SHELL_SRC) \
	  $(filter-out bench/replay_main.c,$(REPLAY_SRC)) $(PKG_LIBS) -lm
fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
	  echo "== $$n ($(FUZZ_SECONDS)s)"; \
	  d=fuzz/$${n#fuzz_}.dict; [ -f $$d ] && d=-dict=$$d || d=; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$d build/fuzz/corpus-$$n fuzz/corpus/$${n#fuzz_} 2>&1 | tail -n 3; done

# ---- install ----
install: $(PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "deps: all present"; fi

# The extender on the bundled example cluster, on loopback (README, first section).
run: deps
	$(MAKE) all
	bin/slicefit --snapshot extender/example-cluster.json --policy extender/example-policy.json \
	  --listen 127.0.0.1:8888

run-replay: deps
	$(MAKE) all
	bin/slicefit-replay

clean:
	rm -rf build bin

.PHONY: all test check check-pure bench fuzz install deps run run-replay clean

-include $(shell find build -name '*.d' 2>/dev/null)
