# cuzk — the one build.
#
#   make            every binary into build/bin/, one static library per module in build/lib/
#   make test       build and run every test (unit tests with Check, then script tests)
#   make asan       the tests built and run with AddressSanitizer + UBSan (build-asan/)
#   make tsan       the shared-memory/thread unit tests (TSAN_TESTS) under ThreadSanitizer (build-tsan/)
#   make format     clang-format the project's sources, shfmt its scripts, in place (tools/format.sh)
#   make format-check  list the files clang-format or shfmt would change, fail if any (CI)
#   make lint-shell shellcheck over the shell scripts, fail on any finding (CI; tools/lint_shell.sh)
#   make demo       the main job: prove the bundled example circuit, verify with snarkjs
#   make api-demo   the README's HTTP API lines: config, generator, token in build/api-demo/, one proof
#   make bench      benchmarks that print comparison tables
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each; make soak: random kills, SOAK_SECONDS
#   make install    PREFIX (default /usr/local), SYSCONFDIR (/etc) and DESTDIR honoured
#   make man        the manual pages (docs/man/*.scd, scdoc) into build/man/
#   make deb        the Debian package (debian/, dpkg-buildpackage) into build/deb/;
#                   make deb-lint runs lintian on it (docs/packaging.md)
#   make CUDA=0     never build the CUDA backend, even when nvcc is present
#                   (CUDA_ARCHS="80 90" picks the GPU architectures)
#   make gpu-check  on a machine with a GPU: build, pack, GPU checks and figures (bench/gpu-check.sh)
#   make WERROR=1   warnings are errors (CI sets CI=true, which implies it)
#   make NATIVE=1   build for this machine's CPU alone (-march=native); the default runs on any
#                   x86-64-v2 CPU and picks the wider kernels at run time
#
# Layout convention (so adding a file never needs a Makefile edit):
#   <module>/*.c except main.c  -> build/lib/libcuzk_<module>.a
#   <stage>/main.c              -> build/bin/<binary> (table below)
#   tools/cuzk_main.c, tools/top_main.c -> build/bin/cuzk, build/bin/cuzk-top
#   tests/unit/test_*.c         -> build/tests/test_* (Check), run by tests/run.sh
#   tests/scripts/*.sh          -> run by tests/run.sh after the unit tests
#   bench/*.c                   -> build/bench/*
#   zk/cuda/*.cu                -> build/lib/libcuzk_cuda.a (nvcc; CUDA builds only)
#   tests/gpu/*.c, *.cu         -> build/tests-gpu/* (CUDA builds; need a GPU to run)
#   bench/gpu/*.c               -> build/bench-gpu/* (CUDA builds; bench/gpu-check.sh)

# Parallel by default: one job per CPU (`nproc`), so that the README's two commands
# need no flag; a -jN on the command line (-j1 for a serial build) wins.
ifeq ($(filter -j% j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

BUILD   ?= build
PREFIX  ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DOCDIR  ?= $(PREFIX)/share/doc/cuzk
MANDIR  ?= $(PREFIX)/share/man
DESTDIR ?=
CC      ?= cc
PKG_CONFIG ?= pkg-config

ifeq ($(CI),true)
WERROR ?= 1
endif

WARN   := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
          -Wno-missing-field-initializers -Wno-maybe-uninitialized
# -Wno-maybe-uninitialized: gcc 12 reports false positives on the limb loops of
# field.h whenever the limb count is a run-time value (generic helpers); the real
# check for uninitialised reads is the ASan/UBSan test run and valgrind.
ifeq ($(WERROR),1)
WARN   += -Werror
endif
OPT    ?= -O2
# The default build runs on any x86-64-v2 CPU (Nehalem and newer, a VM's generic CPU
# model): the hot kernels pick their wider instructions at run time, by CPUID — the
# mulx/adx field products (zk/field.c) and the AVX-512 IFMA lanes of the MSM and NTT
# (zk/ifma.c, __attribute__((target))) — so one binary is fast on the machine it lands
# on without depending on the one that built it (tests/scripts/portable_build.sh runs
# it on an emulated Nehalem). NATIVE=1 builds for this machine's CPU alone.
ifeq ($(NATIVE),1)
ARCHFLAGS ?= -march=native -mtune=native
else
ARCHFLAGS ?= -march=x86-64-v2 -mtune=generic
endif
# The ARCHFLAGS a build was made with: every object depends on this stamp, rewritten
# only when they change, so switching (NATIVE=1) rebuilds everything; the portable
# build's test reads it.
ARCH_STAMP := $(BUILD)/obj/.archflags
$(shell mkdir -p $(BUILD)/obj && { [ "$$(cat $(ARCH_STAMP) 2>/dev/null)" = "$(ARCHFLAGS)" ] || echo "$(ARCHFLAGS)" > $(ARCH_STAMP); })
CFLAGS ?= $(OPT) -g
CPPFLAGS_ALL := -I. -D_GNU_SOURCE $(CPPFLAGS)
# EXTRA_CFLAGS (sanitizers) is added in the recipes, not here, so that a target can
# override it (SAN_HEAVY below).
CFLAGS_ALL   := -std=gnu17 $(WARN) $(ARCHFLAGS) -pthread -fno-strict-aliasing $(CFLAGS)

# libpq is compiled against (its header's types) but not linked into the binaries:
# store/pq_dl.c loads it the first time a fleet queue is opened (pq_dl.h says why:
# its ~20 dependencies cost every start of every binary). Only the tests that talk
# to PostgreSQL themselves link it (PQ_LIBS).
PKGS      := liburing numa hwloc jansson ncursesw sqlite3 libcrypto
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) libpq 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
PQ_LIBS    := $(shell $(PKG_CONFIG) --libs libpq 2>/dev/null)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
SYS_LIBS  := $(PKG_LIBS) -lgmp -lm -lrt -ldl -pthread
# --as-needed: a binary records only the libraries it calls (cuzk-top alone needs
# ncurses, cuzkd alone sqlite, hwloc and liburing), where every binary is linked
# against all of SYS_LIBS; some toolchains make it the default, not all.
LDFLAGS_ALL := -pthread -Wl,--as-needed $(LDFLAGS) $(EXTRA_LDFLAGS)

# ---- CUDA detection -------------------------------------------------------
# The CUDA backend (zk/cuda/*.cu kernels + gpuworker/backend_cuda.c) is built when
# nvcc is found (CUDA=0 turns it off). The runtime is linked statically (cudart_static),
# so the binaries need only the NVIDIA driver (libcuda.so.1, loaded at run time) and,
# on a machine without one, start and report "no CUDA device".
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(NVCC),)
CUDA ?= 0
else
CUDA ?= 1
endif
CUDA_SRCS := $(wildcard zk/cuda/*.cu)
# CUDA_ON: really building it (nvcc, the kernels and their C API are all there).
CUDA_ON := 0
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but no nvcc found (set NVCC=/path/to/nvcc, or CUDA=0))
endif
ifneq ($(CUDA_SRCS),)
ifneq ($(wildcard zk/gpu.h),)
CUDA_ON := 1
endif
endif
endif
# Files compiled only with the CUDA backend.
CUDA_ONLY_C := gpuworker/backend_cuda.c
ifeq ($(CUDA_ON),1)
# The toolkit's root comes from nvcc itself (its -dryrun prints TOP=): `nvcc` on the
# PATH may be a wrapper script in another folder, whose own path says nothing about
# where the libraries are. The nvcc binary's parent folder is the fallback.
ifeq ($(origin CUDA_HOME),undefined)
CUDA_HOME := $(or $(realpath $(shell $(NVCC) -dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^\#\$$ TOP=//p' | head -n 1)),$(patsubst %/bin/,%,$(dir $(realpath $(NVCC)))))
endif
ifeq ($(wildcard $(CUDA_HOME)/lib64/libcudart_static.a),)
$(error no libcudart_static.a under $(CUDA_HOME)/lib64 (nvcc is $(NVCC)); set CUDA_HOME=, or CUDA=0)
endif
# Architectures: sm_80 (A100, A40...) and sm_90 (H100/H200) as machine code, plus
# compute_90 PTX so newer GPUs can JIT it. Each entry is one more device compile of
# every .cu file: CUDA_ARCHS=90 halves the build on a small machine.
CUDA_ARCHS ?= 80 90
CUDA_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
CPPFLAGS_ALL += -DCUZK_HAVE_CUDA
SYS_LIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
endif

# ---- modules ---------------------------------------------------------------
# api/ (cuzk-api, the HTTP API) needs libmicrohttpd (Debian: libmicrohttpd-dev); a
# build without it leaves cuzk-api out, says so, and builds everything else.
# and libcurl (libcurl4-openssl-dev) for its callbacks.
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd 2>/dev/null)
CURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null)
ifneq ($(and $(MHD_LIBS),$(CURL_LIBS)),)
API_MODULE := api
SYS_LIBS += $(MHD_LIBS) $(CURL_LIBS)
else
$(info note: no libmicrohttpd (libmicrohttpd-dev) or libcurl (libcurl4-openssl-dev): cuzk-api, the HTTP API, is not built)
endif
MODULES := base shm zk store proto stage synth gpuworker finalizer fleet supervisor tools $(API_MODULE)
define module_template
$(1)_SRCS := $$(filter-out $(1)/main.c $(1)/cuzk_main.c $(1)/top_main.c $(if $(filter 1,$(CUDA_ON)),,$(CUDA_ONLY_C)),$$(wildcard $(1)/*.c))
$(1)_OBJS := $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS))
ifneq ($$($(1)_SRCS),)
LIBS_BUILT += $(BUILD)/lib/libcuzk_$(1).a
# Made afresh each time (rm first): `ar rcs` only adds and replaces, so an object of a
# source file since removed or renamed would stay in the archive and still be linked.
$(BUILD)/lib/libcuzk_$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endif
endef
LIBS_BUILT :=
$(foreach m,$(MODULES),$(eval $(call module_template,$(m))))
# The kernels: one more library, before the binaries (their prerequisites).
ifeq ($(CUDA_ON),1)
CUDA_OBJS := $(patsubst %.cu,$(BUILD)/obj/%.o,$(CUDA_SRCS))
# ptxas -v's report of every kernel (registers, stack frame, spills) is kept beside the
# object as NAME.o.ptxas: tests/scripts/cuda_stack.sh checks that no kernel keeps more
# than 64 bytes of stack per thread (the report costs nothing: ptxas runs anyway).
$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(@D)
	@echo "$(NVCC) $(NVCCFLAGS_ALL) -Xptxas -v -MMD -MP -c -o $@ $<"
	@$(NVCC) $(NVCCFLAGS_ALL) -Xptxas -v -MMD -MP -c -o $@ $< 2>$@.ptxas.tmp; rc=$$?; \
	  grep -v -E '^ptxas info|^    [0-9]+ bytes stack frame' $@.ptxas.tmp >&2; \
	  if [ $$rc = 0 ]; then mv $@.ptxas.tmp $@.ptxas; else rm -f $@.ptxas.tmp; fi; exit $$rc
LIBS_BUILT += $(BUILD)/lib/libcuzk_cuda.a
$(BUILD)/lib/libcuzk_cuda.a: $(CUDA_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^
# The CUPTI activity recorder, an injection library the driver loads by
# CUDA_INJECTION64_PATH (zk/cuda/cupti_rec.c; docs/cuda.md): not linked into anything,
# and libcupti is dlopen'ed at run time, so only the toolkit's headers are needed here.
# base/clock.c (os_now_ns, nothing else of base/) is compiled in, position-independent
# and hidden: base's archive is not built -fPIC, and the library exports only
# InitializeInjection.
CUPTI_LIB := $(BUILD)/lib/libcuzk_cupti.so
$(CUPTI_LIB): zk/cuda/cupti_rec.c base/clock.c base/os.h $(ARCH_STAMP)
	@mkdir -p $(@D)
	$(CC) -I. $(CFLAGS_ALL) -fPIC -fvisibility=hidden -shared -I$(CUDA_HOME)/include \
	  -DCUZK_CUPTI_TOOLKIT_LIB='"$(CUDA_HOME)/lib64/libcupti.so"' -o $@ $(filter %.c,$^) -ldl -pthread
endif

LINK_LIBS = -Wl,--start-group $(LIBS_BUILT) -Wl,--end-group

# ---- binaries --------------------------------------------------------------
# binary name : main source
BIN_MAINS := cuzk:tools/cuzk_main.c cuzk-top:tools/top_main.c cuzkd:supervisor/main.c \
             cuzk-synth:synth/main.c cuzk-gpuworker:gpuworker/main.c cuzk-finalizer:finalizer/main.c \
             $(if $(API_MODULE),cuzk-api:api/main.c)
BINS :=
define bin_template
ifneq ($$(wildcard $(2)),)
BINS += $(BUILD)/bin/$(1)
$(BUILD)/bin/$(1): $(BUILD)/obj/$(patsubst %.c,%.o,$(2)) $$(LIBS_BUILT)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS_ALL) -o $$@ $$< $$(LINK_LIBS) $$(SYS_LIBS)
endif
endef
$(foreach b,$(BIN_MAINS),$(eval $(call bin_template,$(word 1,$(subst :, ,$(b))),$(word 2,$(subst :, ,$(b))))))

# ---- tests and benches -----------------------------------------------------
# test_api_*.c test api/, built only with it (libmicrohttpd)
TEST_SRCS  := $(filter-out $(if $(API_MODULE),,tests/unit/test_api_%.c),$(wildcard tests/unit/test_*.c))
TEST_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_HELPERS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/helper_*.c))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_HELPERS) $(LIBS_BUILT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(TEST_HELPERS) $(LINK_LIBS) $(CHECK_LIBS) $(SYS_LIBS) $(PQ_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIBS_BUILT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(LINK_LIBS) $(SYS_LIBS)

# test_field_o0: test_field linked with the arithmetic compiled at -O0, so that the
# inline asm of zk/field.c keeps building (and computing the same) without the
# optimiser: at -O0 gcc neither folds the field descriptors nor shares address
# registers between operands, and a constraint list that fits at -O2 can ask for more
# registers than x86-64 has ("impossible constraints", which a debug build hit).
# run.sh runs it as one more unit test. Sanitizers stay off, as for SAN_HEAVY.
O0_ARITH := zk/field.c zk/curve.c zk/ifma.c zk/ifma381.c $(wildcard zk/msm*.c) zk/ntt.c zk/pairing.c zk/pairing_tower.c
O0_OBJS  := $(patsubst %.c,$(BUILD)/obj/O0/%.o,$(O0_ARITH))
$(BUILD)/obj/O0/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -O0 $(PKG_CFLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/tests/test_field_o0: $(BUILD)/obj/tests/unit/test_field.o $(O0_OBJS) $(TEST_HELPERS) $(LIBS_BUILT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(O0_OBJS) $(TEST_HELPERS) $(LINK_LIBS) $(CHECK_LIBS) $(SYS_LIBS) $(PQ_LIBS)
# Not in the sanitizer builds (SAN set): the arithmetic is uninstrumented there
# (SAN_HEAVY) in both variants, so under ASan test_field_o0 would repeat test_field
# (58 s of it) and check nothing more.
ifeq ($(SAN),)
TEST_BINS += $(BUILD)/tests/test_field_o0
endif

$(BUILD)/obj/tests/%.o: tests/%.c $(ARCH_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(EXTRA_CFLAGS) $(PKG_CFLAGS) $(CHECK_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(ARCH_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(EXTRA_CFLAGS) $(PKG_CFLAGS) -MMD -MP -c -o $@ $<

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The release every binary prints with --version: debian/changelog's first entry.
VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
$(BUILD)/obj/base/version.o: debian/changelog
$(BUILD)/obj/base/version.o: CPPFLAGS_ALL += -DCUZK_VERSION='"$(VERSION)"'

# build-witness embeds the sources of every .wgen (.incbin, which -MMD does not see).
$(BUILD)/obj/tools/build_witness.o: synth/wgen_abi.cpp proto/wgen_abi.h synth/wgen_assert.h

# ---- CUDA backend ------------------------------------------------------------
# Sources that test CUZK_HAVE_CUDA are rebuilt when CUDA_ON changes (a stamp holding
# its value), so `make CUDA=0` after `make` never links a stale object.
CUDA_STAMP := $(BUILD)/obj/.cuda-on
$(shell mkdir -p $(BUILD)/obj && { [ "$$(cat $(CUDA_STAMP) 2>/dev/null)" = "$(CUDA_ON)" ] || echo $(CUDA_ON) > $(CUDA_STAMP); })
CUDA_FLAG_USERS := $(shell grep -l CUZK_HAVE_CUDA $(foreach m,$(MODULES),$(m)/*.c) tests/unit/*.c 2>/dev/null)
$(patsubst %.c,$(BUILD)/obj/%.o,$(CUDA_FLAG_USERS)): $(CUDA_STAMP)

# tests/gpu/*.c|*.cu: programs that need a GPU (bench/gpu-check.sh runs them), and
# bench/gpu/*.c (build/bench-gpu/: its figures); built by `make tests` when CUDA is on,
# never run by `make test`.
GPU_TEST_SRCS := $(wildcard tests/gpu/*.c tests/gpu/*.cu)
GPU_TEST_BINS :=
ifeq ($(CUDA_ON),1)
NVCCFLAGS ?= -O3 -lineinfo
NVCC_WARN := -Xcompiler -Wall,-Wno-unknown-pragmas
ifeq ($(WERROR),1)
NVCC_WARN += -Werror all-warnings -Xcompiler -Werror
endif
# --threads: the architectures of one file compile in parallel (ptxas of the MSM
# kernels is minutes per architecture on a small machine).
NVCC_THREADS ?= 0
NVCCFLAGS_ALL := -std=c++17 $(CUDA_GENCODE) --threads $(NVCC_THREADS) -I. -D_GNU_SOURCE \
                 -DCUZK_HAVE_CUDA -Xcompiler -pthread $(NVCC_WARN) $(NVCCFLAGS)
GPU_TEST_BINS := $(patsubst tests/gpu/%,$(BUILD)/tests-gpu/%,$(basename $(GPU_TEST_SRCS))) \
                 $(patsubst bench/gpu/%.c,$(BUILD)/bench-gpu/%,$(wildcard bench/gpu/*.c))
$(BUILD)/bench-gpu/%: $(BUILD)/obj/bench/gpu/%.o $(LIBS_BUILT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(LINK_LIBS) $(SYS_LIBS)
$(BUILD)/tests-gpu/%: $(BUILD)/obj/tests/gpu/%.o $(TEST_HELPERS) $(LIBS_BUILT)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(TEST_HELPERS) $(LINK_LIBS) $(CHECK_LIBS) $(SYS_LIBS) $(PQ_LIBS)
endif

# ---- targets ---------------------------------------------------------------
.PHONY: man deb deb-lint all test unit-tests asan tsan format format-check lint-shell bench install install-files clean fixtures demo api-demo fuzz soak gpu-tests gpu-check \
        doc-exit-codes
# keep test and bench objects between runs (make would delete them as intermediates)
.SECONDARY:
.DEFAULT_GOAL := all
all: $(LIBS_BUILT) $(BINS) $(CUPTI_LIB) man

# Manual pages (scdoc): docs/man/NAME.SECTION.scd -> build/man/NAME.SECTION. The stages
# get a .so link to cuzkd(8), which describes them (dh_installman makes it a symlink).
MAN_SRCS := $(wildcard docs/man/*.scd)
MANS := $(patsubst docs/man/%.scd,$(BUILD)/man/%,$(MAN_SRCS))
MAN_LINKS := $(patsubst %,$(BUILD)/man/%.8,cuzk-synth cuzk-gpuworker cuzk-finalizer)
man: $(MANS) $(MAN_LINKS)
$(BUILD)/man/%: docs/man/%.scd
	@mkdir -p $(@D)
	scdoc < $< > $@.tmp && mv $@.tmp $@
$(MAN_LINKS):
	@mkdir -p $(@D)
	echo '.so man8/cuzkd.8' > $@

# The Debian package (debian/; docs/packaging.md): built by tools/deb.sh in a copy of
# the source under $(BUILD)/deb/ (dpkg-buildpackage writes its results to the parent
# of the source tree, so never into the checkout's parent). DEB_PROFILES=pkg.cuzk.cuda
# builds the CUDA package instead (needs nvcc).
deb:
	BUILD=$(BUILD) bash tools/deb.sh
deb-lint: deb
	BUILD=$(BUILD) bash tools/deb.sh --lint

# bench/mulchain_gen: tests/scripts/mulchain_gen.sh checks it against circom's files.
tests: all $(TEST_BINS) $(GPU_TEST_BINS) $(BUILD)/bench/mulchain_gen

# The GPU programs alone, and the whole check on a machine with a GPU.
gpu-tests: all $(GPU_TEST_BINS)
# (bench/gpu-bundle.sh packs the programs and their libraries; the same two commands
# prepare a run on another machine: carry $(BUILD)/gpu-bundle.tar.gz and the tree.)
gpu-check: tests
	BUILD=$(BUILD) bash bench/gpu-bundle.sh
	BUILD=$(BUILD) bash bench/gpu-check.sh --bundle $(BUILD)/gpu-bundle.tar.gz

test: tests
	BUILD=$(BUILD) bash tests/run.sh

# Sanitizer builds leave the pure-arithmetic files uninstrumented: ASan+UBSan turned
# the MSM (zk/msm*.c) alone into more than ten minutes of compiling (its per-group bodies are
# large, fully unrolled limb code). They touch only stack arrays and caller buffers and
# are checked against GMP and naive references by the unit tests; everything that
# allocates, maps, parses or shares memory (readers, shm, stages) stays instrumented.
# zk/ifma.c and zk/ifma381.c (the AVX-512 IFMA lanes msm.c calls) are of the same kind:
# no allocation, no shared state (their one static, the pad bucket, is never written).
# (test_ifma still takes about 100 s under ASan without them: that time is elsewhere.)
SAN_HEAVY := $(wildcard zk/msm*.c) zk/curve.c zk/pairing.c zk/pairing_tower.c zk/field.c zk/ntt.c zk/ifma.c zk/ifma381.c
$(patsubst %.c,$(BUILD)/obj/%.o,$(SAN_HEAVY)): override EXTRA_CFLAGS := $(filter-out -fsanitize=%,$(EXTRA_CFLAGS))

# (CUDA=0: the sanitizers check the host code the unit tests run; nvcc objects are
# not instrumented, and a second nvcc build per sanitizer would only cost time.)
asan:
	rm -f build-asan/tests/test_field_o0
	$(MAKE) BUILD=build-asan OPT=-O1 CUDA=0 SAN=asan \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" tests
	BUILD=build-asan CUZK_SANITIZER=asan bash tests/run.sh --unit-only

# TSan: only the unit tests whose code shares memory between threads or processes
# (rings, pool, job table, segments, stats page, the pipeline's stages, the team, in-flight threads,
# the fixed-base tables' builder thread, a small proof's jobs at once);
# the arithmetic tests are single-threaded and ASan already covers their memory.
TSAN_TESTS := test_ring test_ring_kill test_pool test_jobtab test_segment test_stats \
              test_shm_stress test_pipeline test_team test_inflight test_fixed_base test_small_jobs
# gcc 12's TSan expects the address layout of a kernel with at most 28 bits of mmap
# randomness; with more (vm.mmap_rnd_bits = 32 on newer kernels) it stops with
# "unexpected memory mapping". setarch -R (no ASLR for the run) avoids that where the
# personality call is allowed; where it is not, TSan's own FATAL fails the run, never a pass.
TSAN_RUN := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo setarch $$(uname -m) -R)
tsan:
	$(MAKE) BUILD=build-tsan OPT=-O1 CUDA=0 SAN=tsan EXTRA_CFLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
	  EXTRA_LDFLAGS="-fsanitize=thread" $(patsubst %,build-tsan/tests/%,$(TSAN_TESTS))
	BUILD=build-tsan CUZK_SANITIZER=tsan TEST_FILTER='^($(subst $(eval) ,|,$(strip $(TSAN_TESTS))))$$' \
	  $(TSAN_RUN) bash tests/run.sh --unit-only

# .clang-format: 4 spaces, one style for the whole tree; .editorconfig the scripts'
# (shfmt: 2 spaces). .shellcheckrc: shellcheck's settings.
format:
	bash tools/format.sh
format-check:
	bash tools/format.sh --check
lint-shell:
	bash tools/lint_shell.sh

bench: all $(BENCH_BINS)
	BUILD=$(BUILD) bash bench/run.sh

fixtures:
	bash tests/fixtures/make.sh

# libFuzzer harnesses (tests/fuzz/, clang): FUZZ_SECONDS per target; make test runs a
# short smoke of the same (tests/scripts/fuzz_smoke.sh).
FUZZ_SECONDS ?= 30
fuzz: all
	BUILD=$(BUILD) bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The random-kill fault test for SOAK_SECONDS (not in make test): kills survived and
# partitions proved are printed at the end.
SOAK_SECONDS ?= 600
soak: all
	BUILD=$(BUILD) DURATION=$(SOAK_SECONDS) KILLS=$${KILLS:-30} bash tests/faults/random_kills.sh

demo: all
	BUILD=$(BUILD) bash tools/demo.sh

# The README's HTTP API lines: config, generator and token into $(BUILD)/api-demo/,
# one proof over HTTP, verified by snarkjs (tools/api_demo.sh).
api-demo: all
	BUILD=$(BUILD) bash tools/api_demo.sh

# docs/usage.md's exit-code table, rewritten from base/error.c's (the lines between its
# exit-codes markers); test_error fails while the two differ.
doc-exit-codes: all
	$(BUILD)/bin/cuzk help exit-codes --markdown > $(BUILD)/exit-codes.md
	awk -v t=$(BUILD)/exit-codes.md '/<!-- exit-codes: end/ { skip = 0 } !skip { print } \
	  /<!-- exit-codes: begin/ { while ((getline l < t) > 0) print l; skip = 1 }' docs/usage.md > docs/usage.md.tmp
	mv docs/usage.md.tmp docs/usage.md

# Binaries; the systemd unit (paths filled in), the sysusers.d entry for the cuzk
# user/group, the example config (also as /etc/cuzk/cuzkd.conf unless one exists), the
# README with docs/, the manual pages, the Grafana dashboard and alert rules.
# tests/scripts/install_tree.sh checks the tree.
# install-files installs what is built, without building: tests/scripts/install_tree.sh
# uses it so that it never relinks a binary that a test running beside it executes.
install: all
	$(MAKE) install-files
install-files:
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
	  $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/cuzk $(DESTDIR)$(DOCDIR)/monitoring \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	  deploy/cuzkd.service.in > $(DESTDIR)$(UNITDIR)/cuzkd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/cuzkd.service
	$(if $(API_MODULE),sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	  -e 's|@DOCDIR@|$(DOCDIR)|g' deploy/cuzk-api.service.in > $(DESTDIR)$(UNITDIR)/cuzk-api.service)
	$(if $(API_MODULE),chmod 0644 $(DESTDIR)$(UNITDIR)/cuzk-api.service)
	install -m 0644 deploy/cuzk.sysusers $(DESTDIR)$(SYSUSERSDIR)/cuzk.conf
	install -m 0644 deploy/cuzkd.conf $(DESTDIR)$(DOCDIR)/cuzkd.conf.example
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 0644 docs/*.md docs/openapi.json $(DESTDIR)$(DOCDIR)/
	install -m 0644 deploy/monitoring/cuzk-dashboard.json deploy/monitoring/cuzk-alerts.yml \
	  $(DESTDIR)$(DOCDIR)/monitoring/
	install -m 0644 $(filter %.1,$(MANS)) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(filter %.5,$(MANS)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(filter %.8,$(MANS)) $(MAN_LINKS) $(DESTDIR)$(MANDIR)/man8/
	test -e $(DESTDIR)$(SYSCONFDIR)/cuzk/cuzkd.conf || \
	  install -m 0644 deploy/cuzkd.conf $(DESTDIR)$(SYSCONFDIR)/cuzk/cuzkd.conf

clean:
	rm -rf build build-asan build-tsan
