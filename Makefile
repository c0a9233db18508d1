# kgraph: GNU make. `make` builds every tool into bin/, `make check` runs
# the bats suite, `make deps` installs the Debian packages the build and
# the tests need. Objects go under build/. `make SANITIZE=address,undefined
# check` builds with sanitizers; build/flags records the flags (CC,
# CFLAGS, LDFLAGS, SANITIZE...), so changing them rebuilds everything.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CC ?= cc
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wno-unused-parameter
PKG_CONFIG ?= pkg-config

# msgpack-c calls itself `msgpack` on Debian 12 and `msgpack-c` later.
MSGPACK_PC := $(shell $(PKG_CONFIG) --exists msgpack-c 2>/dev/null && echo msgpack-c || echo msgpack)
PKGS = $(MSGPACK_PC) libzstd libxxhash yajl zlib
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null || echo -lmsgpackc -lzstd -lxxhash -lyajl -lz)

ifneq ($(SANITIZE),)
SANFLAGS = -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

ALL_CFLAGS = -std=c11 -pthread -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARNINGS) \
	$(CFLAGS) $(SANFLAGS) -Icommon -Itools $(PKG_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)
LIBS = -lm -pthread $(PKG_LIBS)

TOOLS = kineto2graph graphcat graph-deps graphsim graphstat tracegen graph-scale-dp graph-scale-layers graph-scale-pp graph2chrome graphplot
TOOLS += opmodel graph-retime
TOOLS += graph-scale-hidden graph-scale-tp graph-scale-batch graph-recompute
BINS = $(TOOLS:%=bin/%)
MANS = $(TOOLS:%=doc/%.1)

COMMON_SRC = $(wildcard common/*.c)
COMMON_OBJ = $(COMMON_SRC:%.c=build/%.o)
CLI_OBJ = build/tools/cli.o
# The what-if tools' main() skeleton (tools/whatif.h): only they link it
# (EXTRA_OBJ_NAME: objects linked into bin/NAME besides its own).
WHATIF_TOOLS = graph-scale-dp graph-scale-layers graph-scale-pp graph-scale-hidden graph-scale-tp \
	graph-scale-batch graph-retime graph-recompute
$(foreach t,$(WHATIF_TOOLS),$(eval EXTRA_OBJ_$(t) += build/tools/whatif.o))
# and of those, the ones that take an op model (--model) its loading,
# apart because it links libxgboost.
$(foreach t,graph-scale-hidden graph-scale-tp graph-scale-batch graph-retime,$(eval EXTRA_OBJ_$(t) += build/tools/whatif-om.o))

# A tool is tools/NAME.c plus, when it has grown, tools/NAME/*.c.
tool_objs = build/tools/$(1).o $(patsubst %.c,build/%.o,$(wildcard tools/$(1)/*.c))

.PHONY: all check install uninstall clean deps test-deps lint bench demo
.SECONDARY:

all: $(BINS)

# Rebuild everything when the flags change (a sanitizer build, say):
# build/flags holds them, rewritten as the Makefile is read whenever they
# differ, so its time is newer than every object and binary built with
# others. (A rule with a FORCE prerequisite did not do it: the recipe of
# a file that .SECONDARY makes secondary was never run, and a plain build
# after a sanitized one kept the sanitized binaries.)
FLAGS_NOW = $(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) $(LIBS)
ifeq ($(filter clean deps lint,$(MAKECMDGOALS)),)
$(shell mkdir -p build && { echo '$(FLAGS_NOW)' | cmp -s - build/flags || echo '$(FLAGS_NOW)' > build/flags; })
endif
build/flags: ;

build/%.o: %.c build/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(if $(wildcard $(basename $<)),-I$(basename $<)) -I$(dir $<) -c -o $@ $<

build/libcommon.a: $(COMMON_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

define tool_rule
bin/$(1): $(call tool_objs,$(1)) $$(EXTRA_OBJ_$(1)) $(CLI_OBJ) build/libcommon.a build/flags
	@mkdir -p bin
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$(filter-out build/flags,$$^) $$(LIBS) $$(EXTRA_LIBS_$(1))
endef
# The op model (common/opmodel.c) needs XGBoost's C API; only the tools
# that use it link it. opmodel reads graph streams, and a Kineto trace
# through the kineto2graph program beside it.
EXTRA_LIBS_opmodel = -lxgboost -lgomp
EXTRA_LIBS_graph-retime = -lxgboost -lgomp
EXTRA_LIBS_graph-scale-hidden = -lxgboost -lgomp
EXTRA_LIBS_graph-scale-tp = -lxgboost -lgomp
EXTRA_LIBS_graph-scale-batch = -lxgboost -lgomp
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

# The suite: bats through prove for a closing summary line.
check: all
	@tests/run

deps:
	@sh scripts/deps.sh

# What the optional tests need (as root): the viewer test's Chromium,
# Node.js, speedscope and playwright-core; Slurm and munge for the test
# of pipelines/ on Slurm. .ci/run does the same.
test-deps: deps
	@sh scripts/deps.sh viewer
	@command -v npm > /dev/null || apt-get install -y -q --no-install-recommends npm
	npm ci --prefix tests/viewer --no-audit --no-fund
	@sh scripts/deps.sh slurm

# The README's first command: what a newcomer runs on a fresh machine. An
# 8-rank job (tp 2, pp 2, dp 2) from tracegen, replayed and broken down,
# then a few what-ifs predicted from it (scripts/whatif-demo).
demo: deps
	@$(MAKE) --no-print-directory all
	rm -rf build/demo
	bin/tracegen --preset small -d build/demo
	bin/kineto2graph build/demo/*.json.gz | bin/graph-deps --merge > build/demo/job.kg
	bin/graphsim build/demo/job.kg | bin/graphstat --top 3
	@scripts/whatif-demo build/demo/job.kg

install: all
	mkdir -p $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	for t in $(TOOLS); do install -m 755 bin/$$t $(DESTDIR)$(BINDIR)/$$t; done
	for m in $(MANS); do install -m 644 $$m $(DESTDIR)$(MANDIR)/man1/; done

uninstall:
	for t in $(TOOLS); do rm -f $(DESTDIR)$(BINDIR)/$$t $(DESTDIR)$(MANDIR)/man1/$$t.1; done

# clang-format is advisory (it names the files it would change); the
# shell and man-page checks must pass.
lint:
	@for f in $(COMMON_SRC) $(wildcard common/*.h tools/*.c tools/*.h tools/*/*.c tools/*/*.h); do \
		clang-format --dry-run $$f 2>&1 | grep -q . && echo "clang-format: $$f: would change"; \
	done; true
	shellcheck -x scripts/deps.sh scripts/whatif-demo tests/run tests/tools/tap-tee .ci/run bench/ingest bench/json-parsers/run bench/tracegen \
	    bench/simulate bench/accuracy bench/job-scale bench/whatif-accuracy bench/whatif-speed bench/chrome-export pipelines/step pipelines/base pipelines/slurm \
	    fuzz/run fuzz/seeds bench/opmodel-accuracy bench/opmodel-speed bench/tp-accuracy bench/io-speed bench/step-memory tests/tools/minislurm
	for m in $(MANS); do mandoc -Tlint -W warning $$m; done

bench: all
	bench/ingest

clean:
	rm -rf build bin
	rm -rf pipelines/cache/.*.tmp.*

# Fuzzing (fuzz/README): libFuzzer harnesses built with clang into
# build/fuzz, apart from the tools' objects and flags; `make fuzz` runs
# each for FUZZ_TIME seconds, one after the other. Needs clang (make
# fuzz-deps); nothing else does.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZERS ?= kineto stream merge simstat whatif
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 $(FUZZ_SAN) \
	-fsanitize=fuzzer-no-link -Icommon -Itools -Ifuzz $(PKG_CFLAGS) -MMD -MP
fuzz_tools_kineto = kineto2graph
fuzz_tools_stream =
fuzz_tools_merge = graph-deps
fuzz_tools_simstat = graphsim graphstat
fuzz_tools_whatif = graph-scale-layers graph-scale-pp graph-scale-dp graph-scale-tp \
	graph-scale-hidden graph-retime graph2chrome graphsim
# The op model and common/reshape and resize, which use it, link
# libxgboost: only the what-if harness has them (graph-retime --model
# runs the small model fuzz/run fits)
FUZZ_XGB = build/fuzz/common/opmodel.o build/fuzz/common/reshape.o build/fuzz/common/resize.o
FUZZ_COMMON = $(filter-out $(FUZZ_XGB),$(COMMON_SRC:%.c=build/fuzz/%.o)) \
	build/fuzz/tools/cli.o build/fuzz/fuzz/fuzz.o
fuzz_extra_whatif = $(FUZZ_XGB) build/fuzz/tools/whatif.o build/fuzz/tools/whatif-om.o
fuzz_libs_whatif = -lxgboost -lgomp

# A tool's main file is built with its main renamed NAME_main.
build/fuzz/tools/%.o: tools/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(if $(filter $(TOOLS),$*),-Dmain=$(subst -,_,$*)_main) \
		$(if $(wildcard tools/$(firstword $(subst /, ,$*))),-Itools/$(firstword $(subst /, ,$*))) -c -o $@ $<
build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

define fuzz_rule
build/fuzz/$(1): build/fuzz/fuzz/$(1).o $(FUZZ_COMMON) $(fuzz_extra_$(1)) $(foreach t,$(fuzz_tools_$(1)),$(patsubst build/%,build/fuzz/%,$(call tool_objs,$(t))))
	$$(FUZZ_CC) $$(FUZZ_SAN) -fsanitize=fuzzer -o $$@ $$^ $$(LIBS) $(fuzz_libs_$(1))
endef
$(foreach f,$(FUZZERS),$(eval $(call fuzz_rule,$(f))))

.PHONY: fuzz fuzz-build fuzz-deps
fuzz-build: all $(FUZZERS:%=build/fuzz/%)
fuzz: fuzz-build
	@fuzz/run $(FUZZ_TIME) $(FUZZERS)
fuzz-deps:
	@sh scripts/deps.sh fuzz

-include $(shell find build -name '*.d' 2>/dev/null)
