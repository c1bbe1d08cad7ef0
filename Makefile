# slicefit: one non-recursive Makefile.
#
#   make            bin/slicefit-replay (and bin/slicefit once extender/ exists)
#   make test       deps-test, format-check, then every Criterion suite and the purity proof of packer/
#   make check      the same tests under AddressSanitizer + UBSan
#   make fuzz       libFuzzer on every parser, FUZZ_SECONDS each (clang)
#   make bench      the core's benchmarks (bench/bench_*.c)
#   make format-check  fails if a source drifts from .clang-format (make format applies it)
#   make deps       installs the missing Debian packages (apt-get), nothing if all present;
#                   make run installs only what running needs, make test what the tests need
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
# What each goal needs from Debian: running (make run) only the compiler and the six
# libraries (GnuTLS for the serving TLS priorities); the tests also Criterion, openssl (test certificates), procps (pgrep: no
# test process outlives its suite), promtool (the prometheus package: the /metrics
# lint), for the runtime image the CA bundle and umoci (test/manifests unpacks the
# image with it), and python3-scipy (bench/packing-bounds.py solves its LP with HiGHS:
# a solver we test against, not one we write); make deps installs all, clang and
# valgrind too. curl and jq run README.md's example (test/extender/test_readme.c).
RUN_DEB_PKGS  := build-essential pkg-config libmicrohttpd-dev libjansson-dev \
                 libcurl4-openssl-dev libuv1-dev libyaml-dev libgnutls28-dev
TEST_DEB_PKGS := $(RUN_DEB_PKGS) libcriterion-dev openssl prometheus procps ca-certificates umoci \
                 curl jq \
                 clang-format python3-scipy
DEB_PKGS      := $(TEST_DEB_PKGS) clang libclang-rt-14-dev valgrind

# Flags in named layers (Redis's src/Makefile).
STD   := -std=c11 -D_POSIX_C_SOURCE=200809L
WARN  := -Wall -Wextra -Werror -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
         -Wold-style-definition -Wpointer-arith -Wcast-qual -Wwrite-strings -Wvla -Wformat=2 \
         -Wundef -Wimplicit-fallthrough
CORE_WARN := -Wconversion -Wsign-conversion -Wdouble-promotion
# The release build is hardened (stack canaries, fortified libc calls, read-only
# relocations bound at start); the check build keeps ASan's own instrumentation.
HARDEN      := -fstack-protector-strong -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
# Debug information names paths relative to the top, so the programs do not depend on
# where the tree was checked out (the image's digest must not).
OPT_release := -O2 -g $(HARDEN) -ffile-prefix-map=$(CURDIR)=.
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
CORE_SRC := $(wildcard packer/*.c packer/*/*.c)
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
	$(CC) $(STD) $(WARN) $(OPT) $(DEPF) $(INC) $(PKG_CFLAGS) $(XDEFS) -c $< -o $@

# The build's identity (--version, slicefit_build_info): only extender/version.c
# sees it, and it is recompiled when the commit changes.
VERSION  ?= 0.1.0
REVISION := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
$(B)/revision.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION) $(REVISION)' | cmp -s - $@ || echo '$(VERSION) $(REVISION)' > $@
$(B)/extender/version.o: $(B)/revision.txt
$(B)/extender/version.o: XDEFS = -DSF_VERSION='"$(VERSION)"' -DSF_REVISION='"$(REVISION)"'
FORCE:

# The layers, each a library: packer <- model <- apiwatch, extender, bench.
# model/ (the decoders of Kubernetes JSON, the cluster model, the pending pods, the
# log) uses jansson and nothing of libcurl, libuv or libmicrohttpd (check-layers);
# the daemon, the replay, the tests and the fuzzers all build on it.
MODEL_SRC := $(wildcard model/*.c)
MODEL_OBJ := $(MODEL_SRC:%.c=$(B)/%.o)
MODEL_LIB := $(B)/libslicefit_model.a
$(MODEL_LIB): $(MODEL_OBJ)
	@rm -f $@
	ar rcs $@ $^

# apiwatch/ and extender/ (without its main) link into the library of the shell.
SHELL_SRC := $(wildcard apiwatch/*.c) $(filter-out extender/main.c,$(wildcard extender/*.c))
SHELL_OBJ := $(SHELL_SRC:%.c=$(B)/%.o)
SHELL_LIB := $(B)/libslicefit_shell.a
$(SHELL_LIB): $(SHELL_OBJ)
	@rm -f $@
	ar rcs $@ $^

# bench/replay/*.c make the replay tool; bench/bench_*.c are benchmarks.
REPLAY_SRC := $(wildcard bench/replay/*.c)
REPLAY_OBJ := $(REPLAY_SRC:%.c=$(B)/%.o)
REPLAY_MAIN := $(B)/bench/replay/replay_main.o
REPLAY_LIBOBJ := $(filter-out $(REPLAY_MAIN),$(REPLAY_OBJ))

# The programs go to bin/ in the release build only; every other variant keeps its own in
# $(B)/bin, so that make check never replaces a release bin/slicefit with an ASan one. The
# tests find them through SLICEFIT_BIN.
BIN_release := bin
BIN := $(or $(BIN_$(V)),$(B)/bin)
export SLICEFIT_BIN := $(CURDIR)/$(BIN)

PROGS := $(BIN)/slicefit-replay $(BIN)/slicefit-defrag
ifneq ($(wildcard extender/main.c),)
PROGS += $(BIN)/slicefit
endif

all: $(PROGS)

$(BIN)/slicefit-replay: $(REPLAY_OBJ) $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

# cli/: small programs on the model layer alone.
$(BIN)/slicefit-defrag: $(B)/cli/defrag_main.o $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

$(BIN)/slicefit: $(B)/extender/main.o $(SHELL_LIB) $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm

# ---- the runtime image: an OCI image layout in build/image (image/mkimage) ----
# Its programs are the release build's objects linked with a version.o that says
# revision "release" instead of the commit: a digest that changed with every commit
# could not be pinned by the commit carrying the pin. make image-pin writes the
# digest into manifests/kustomization.yaml and the inputs it depends on into
# manifests/image-inputs.txt; test/manifests/test_image.c checks the pin whenever
# the inputs match.
IMAGE_BIN := build/image-bin
$(B)/extender/version-image.o: extender/version.c
	@mkdir -p $(@D)
	$(CC) $(STD) $(WARN) $(OPT) $(INC) -DSF_VERSION='"$(VERSION)"' -DSF_REVISION='"release"' -c $< -o $@
$(IMAGE_BIN)/slicefit: $(B)/extender/main.o $(B)/extender/version-image.o $(SHELL_LIB) $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm
$(IMAGE_BIN)/slicefit-replay: $(REPLAY_OBJ) $(B)/extender/version-image.o $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm
image: $(IMAGE_BIN)/slicefit $(IMAGE_BIN)/slicefit-replay image/mkimage
	@test "$(V)" = release || { echo "make image: the release build only"; exit 1; }
	@image/mkimage $(CURDIR) $(IMAGE_BIN) build/image
image-pin: image
	@cp build/image.inputs manifests/image-inputs.txt
	@sed -i '/^- name: slicefit$$/,/digest:/ s|digest: sha256:[0-9a-f]*|digest: '"$$(cat build/image.digest)"'|' \
	  manifests/kustomization.yaml
	@echo "pinned $$(cat build/image.digest) in manifests/kustomization.yaml"

# ---- tests: one Criterion binary per mirrored source folder ----
# test/F/test_*.c make $(B)/test-F, test/F/G/test_*.c make $(B)/test-F-G; a
# binary links the .c files of its own folder only.
TEST_DIRS := $(patsubst test/%/,%,$(sort $(dir $(wildcard test/*/test_*.c test/*/*/test_*.c))))
test_name = test-$(subst /,-,$(1))
TEST_BINS := $(foreach d,$(TEST_DIRS),$(B)/$(call test_name,$(d)))

# Every one also links test/lsan_runner.c: LeakSanitizer checks Criterion's workers, not its runner.
define test_rule
$(B)/$(call test_name,$(1)): $(patsubst %.c,$(B)/%.o,$(wildcard test/$(1)/*.c)) $(B)/test/lsan_runner.o $(REPLAY_LIBOBJ) $(SHELL_LIB) $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(OPT) $$(LDSAN_$$(V)) -o $$@ $$^ $$(CRIT_LIBS) $$(PKG_LIBS) -lm
endef
$(foreach d,$(TEST_DIRS),$(eval $(call test_rule,$(d))))

# test/tools/NAME.c: helper programs the tests start (the fake kube-apiserver, ...);
# test/tools/NAME/*.c, when present, are more of NAME's parts.
TOOL_SRC  := $(wildcard test/tools/*.c)
TOOL_BINS := $(TOOL_SRC:test/tools/%.c=$(B)/tools/%)
define tool_rule
$(B)/tools/$(1): $(B)/test/tools/$(1).o $(patsubst %.c,$(B)/%.o,$(wildcard test/tools/$(1)/*.c)) $(SHELL_LIB) $(MODEL_LIB) $(CORE_LIB)
	@mkdir -p $$(@D)
	$$(CC) $$(OPT) $$(LDSAN_$$(V)) -o $$@ $$^ $$(PKG_LIBS) -lm
endef
$(foreach t,$(TOOL_SRC:test/tools/%.c=%),$(eval $(call tool_rule,$(t))))

# Tests find shared/ and the repository's data relative to the top.
export SLICEFIT_TOP := $(CURDIR)

# The sanitizer build: every report of every process the tests start (Criterion's workers,
# the daemons, the fake API server) goes to a file in SAN_DIR instead of a stderr nobody
# reads, and a suite that leaves one fails (test/san-reports.sh, which also says why
# libcriterion's own leak is left out there and not by an LSan suppression). Criterion
# alone cannot do it: it ignores a worker's exit status once the test has reported, so
# LeakSanitizer's exit code 23 at the worker's exit (or its abort with abort_on_error)
# still counts as a pass.
SAN_DIR := $(CURDIR)/$(B)/sanitizer
ifeq ($(V),check)
export ASAN_OPTIONS := $(ASAN_OPTIONS)$(if $(ASAN_OPTIONS),:)log_path=$(SAN_DIR)/asan
export UBSAN_OPTIONS := $(UBSAN_OPTIONS)$(if $(UBSAN_OPTIONS),:)log_path=$(SAN_DIR)/ubsan:print_stacktrace=1
endif

# Like make run, make test first installs what it needs (deps-test), then builds and runs.
test: deps-test
	@$(MAKE) --no-print-directory test-suites

# After each suite, no process started from this tree's bin/ or build/ may still run
# (a daemon or fake API server a test lost); a kill by PR_SET_PDEATHSIG gets 2 s.
ifeq ($(V),release)
export SLICEFIT_IMAGE := $(CURDIR)/build/image
IMAGE_FOR_TESTS := image
endif
test-suites: format-check $(PROGS) $(TOOL_BINS) $(TEST_BINS) check-pure check-layers $(IMAGE_FOR_TESTS)
	@rm -rf $(SAN_DIR); mkdir -p $(SAN_DIR)
	@set -e; for t in $(TEST_BINS); do echo "== $$t"; $$t --jobs 2; $(MAKE) --no-print-directory no-strays sanitizer-reports; done
	@echo "== test/bench/packing_bounds_test.py"; /usr/bin/python3 test/bench/packing_bounds_test.py
	@echo "== test/bench/variant_pods_test.py"; /usr/bin/python3 test/bench/variant_pods_test.py
	@echo "== test/bench/add_cpu_pods_test.py"; /usr/bin/python3 test/bench/add_cpu_pods_test.py
	@echo "== test/bench/standins_test.py"; /usr/bin/python3 test/bench/standins_test.py
	@echo "== test/docs/links_test.py"; /usr/bin/python3 test/docs/links_test.py
	@for tool in kubectl promtool; do command -v $$tool >/dev/null 2>&1 || \
	  echo "note: $$tool is not on PATH: the tests that need it were skipped (SKIPPED lines above)"; done
	@echo "all test suites passed"

no-strays:
	@left=""; for i in 1 2 3 4 5 6 7 8 9 10; do \
	  left=$$(pgrep -f '^$(CURDIR)/(bin|build)/' || true); [ -z "$$left" ] && break; sleep 0.2; done; \
	if [ -n "$$left" ]; then echo "processes started by the tests outlived them:"; \
	  ps -o pid,args -p "$$(echo $$left | tr ' ' ,)"; exit 1; fi

# A sanitizer report from any process of the suite just run fails it (see SAN_DIR above).
sanitizer-reports:
	@test/san-reports.sh $(SAN_DIR)

check:
	$(MAKE) V=check test

# The core (packer/ with packer/cel/ and the map) does no I/O. Two proofs:
# no core source, nor any project header the compiler pulls into one
# (listed by -MM, so nothing needs excluding by hand), includes an I/O header
# (stdio.h is allowed for snprintf: the symbol check below is what keeps
# fopen and printf out); and the static library built from those sources
# references no symbol outside a short allow-list of pure libc/libm.
IO_HEADERS := jansson|curl/|uv\.h|microhttpd|yaml\.h|time\.h|unistd\.h|fcntl\.h|sys/
PURE_ALLOW := malloc calloc realloc free memcpy memmove memset memcmp strlen strcmp strncmp \
  strchr strrchr strstr strcspn strspn strtoll strtoull strtod qsort abort snprintf vsnprintf \
  __assert_fail __stack_chk_fail exp log log2 sqrt floor ceil fabs pow __ctype_b_loc \
  __ctype_tolower_loc __ctype_toupper_loc tolower toupper strncasecmp strcasecmp memchr \
  __isoc99_sscanf __isoc23_strtoll __isoc23_strtoull llabs lround llround __popcountdi2 \
  regcomp regexec regfree bcmp strcpy \
  __snprintf_chk __vsnprintf_chk __memcpy_chk __memmove_chk __memset_chk __strcpy_chk
check-pure: $(CORE_LIB)
	@hdrs=$$($(CC) $(STD) $(INC) -MM $(CORE_SRC) | tr ' \\' '\n\n' | grep '\.h$$' | sort -u); \
	if grep -nE '#include *[<"]($(IO_HEADERS))' $(CORE_SRC) $$hdrs; then \
	  echo "check-pure: the core includes an I/O header"; exit 1; fi
	@nm --defined-only $(CORE_LIB) | awk 'NF==3 {print $$3}' | sort -u > $(B)/core-defined.txt
	@bad=$$(nm -u $(CORE_LIB) | awk 'NF==2 {print $$2}' | sort -u | \
	  grep -vxF -f $(B)/core-defined.txt | grep -vE '^__(asan|ubsan)_' | \
	  grep -vxF $(foreach s,$(PURE_ALLOW),-e $(s)) || true); \
	if [ -n "$$bad" ]; then echo "check-pure: the core calls outside the pure allow-list:"; echo "$$bad"; exit 1; fi
	@echo "check-pure: $(sort $(dir $(CORE_SRC))) are pure"

# The model layer decodes JSON (jansson) and keeps the cluster; it does no network I/O
# and runs no event loop: no model source, nor a header it pulls in, names libcurl,
# libuv or libmicrohttpd, and its library references none of their symbols.
MODEL_IO := curl/|uv\.h|microhttpd
check-layers: $(MODEL_LIB)
	@hdrs=$$($(CC) $(STD) $(INC) $(PKG_CFLAGS) -MM $(MODEL_SRC) | tr ' \\' '\n\n' | grep '\.h$$' | grep -v '^/usr' | sort -u); \
	if grep -nE '#include *[<"]($(MODEL_IO))' $(MODEL_SRC) $$hdrs; then \
	  echo "check-layers: model/ includes a header of the shell's I/O libraries"; exit 1; fi
	@bad=$$(nm -u $(MODEL_LIB) | awk 'NF==2 {print $$2}' | grep -E '^(curl_|uv_|MHD_)' | sort -u); \
	if [ -n "$$bad" ]; then echo "check-layers: model/ calls the shell's I/O libraries:"; echo "$$bad"; exit 1; fi
	@echo "check-layers: model/ uses no libcurl, libuv or libmicrohttpd"

# ---- benchmarks (never timed tests) ----
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
$(B)/bench/bench_%: $(B)/bench/bench_%.o $(REPLAY_LIBOBJ) $(SHELL_LIB) $(MODEL_LIB) $(CORE_LIB)
	$(CC) $(OPT) $(LDSAN_$(V)) -o $@ $^ $(PKG_LIBS) -lm
# bench_e2e drives the end-to-end harness's processes: the parts of test/e2e that need no Criterion.
$(B)/bench/bench_e2e: $(B)/test/e2e/gen.o $(B)/test/e2e/ffit.o $(B)/test/e2e/proc.o
bench: $(BENCH_BINS) $(PROGS) $(TOOL_BINS)
	@set -e; for b in $(BENCH_BINS); do echo "== $$b"; $$b; done

# ---- fuzzing: clang libFuzzer, bounded time ----
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
build/fuzz/fuzz_%: fuzz/fuzz_%.c $(CORE_SRC) $(MODEL_SRC) $(SHELL_SRC) $(REPLAY_SRC)
	@mkdir -p $(@D)
	clang $(STD) $(INC) $(PKG_CFLAGS) $(FUZZ_FLAGS) -o $@ $< $(CORE_SRC) $(MODEL_SRC) $(SHELL_SRC) \
	  $(filter-out bench/replay/replay_main.c,$(REPLAY_SRC)) $(PKG_LIBS) -lm
fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
	  echo "== $$n ($(FUZZ_SECONDS)s)"; \
	  d=fuzz/$${n#fuzz_}.dict; [ -f $$d ] && d=-dict=$$d || d=; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$d build/fuzz/corpus-$$n fuzz/corpus/$${n#fuzz_} 2>&1 | tail -n 3; done

# ---- house style: .clang-format ----
# The tree was formatted once, in a commit of its own; make test runs format-check
# first, so any drift from .clang-format fails it (make format applies the style).
FORMAT_SRC := $(wildcard include/slicefit/*.h packer/*.[ch] packer/*/*.[ch] model/*.[ch] apiwatch/*.[ch] \
  extender/*.[ch] cli/*.[ch] bench/*.[ch] bench/*/*.[ch] test/*.[ch] test/*/*.[ch] \
  test/*/*/*.[ch] fuzz/*.c)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC) && echo "format-check: $(words $(FORMAT_SRC)) files match .clang-format"
format:
	clang-format -i $(FORMAT_SRC)

# ---- install ----
install: $(PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/

# Installs the Debian packages of the list that are missing (apt-get), nothing if all present.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "$(2): all present"; fi
endef

deps:
	$(call install_missing,$(DEB_PKGS),deps)
deps-run:
	$(call install_missing,$(RUN_DEB_PKGS),deps-run)
deps-test:
	$(call install_missing,$(TEST_DEB_PKGS),deps-test)

# The extender on the bundled example cluster, on loopback (README, first section);
# /debug/state on 127.0.0.1:8889.
run: deps-run
	$(MAKE) all
	bin/slicefit --snapshot extender/example-cluster.json --policy extender/example-policy.json \
	  --listen 127.0.0.1:8888 --debug-listen 127.0.0.1:8889

run-replay: deps-run
	$(MAKE) all
	bin/slicefit-replay

clean:
	rm -rf build bin

.PHONY: FORCE all image image-pin test test-suites no-strays sanitizer-reports check check-pure check-layers deps-run deps-test bench fuzz format format-check \
        install deps run run-replay clean

-include $(shell find build -name '*.d' 2>/dev/null)
