# vbts: plain make.  `make` builds everything into $(BUILD)/.
#   make demo     install what is missing, build, trace a bundled stub
#   make test     install what is missing, run every test (unit + end-to-end)
#   make check    the same tests on an ASan+UBSan build
#   make lab      the end-to-end tests on stock KVM only (scripts/lab.sh)
#   make install PREFIX=DIR
BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
SANFLAGS ?=
CFLAGS  ?= -O2 -g
# Flags the build needs whatever CFLAGS the caller sets (make check sets its own).
REQ_CFLAGS  := -std=gnu11 -Wall -Wextra -Werror -pthread -Iinclude -Idecoder/include -Idecoder/cli -Ivmm
REQ_LDFLAGS := -pthread
NASM    ?= nasm
# Kernel payloads are unpacked with each format's library (vmm/boot/unpack.c);
# traces are compressed with libzstd, in the monitor and the decoder library.
UNPACK_LIBS := -lz -lbz2 -llzma -llzo2 -llz4 -lzstd
VMM_LIBS := -lZydis -lelf -lseccomp $(UNPACK_LIBS)
DEC_LIBS := -lzstd

VMM_SRC   := $(filter-out vmm/cli/main.c,$(shell find vmm -name '*.c' | LC_ALL=C sort))
VMM_OBJ   := $(VMM_SRC:%.c=$(BUILD)/%.o)
DEC_SRC   := $(wildcard decoder/lib/*.c)
DEC_OBJ   := $(DEC_SRC:%.c=$(BUILD)/%.o)
# The same, position-independent, for the shared library the Python package
# (python/vbts) loads.
DEC_PIC   := $(DEC_SRC:%.c=$(BUILD)/pic/%.o)
DEC_SONAME := libvbtsdecode.so.0
# vbts-decode's lines and views, apart from its main() for the tests and fuzzers.
CLI_SRC   := decoder/cli/format.c $(sort $(wildcard decoder/cli/view/*.c))
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC  := $(shell find tests/unit -name '*.c' | LC_ALL=C sort)
UNIT_OBJ  := $(UNIT_SRC:%.c=$(BUILD)/%.o)
STUB_SRC  := $(wildcard guest-stub/*.asm)
STUB_BIN  := $(STUB_SRC:guest-stub/%.asm=$(BUILD)/guest-stub/%.bin)
STUB_INC  := $(wildcard guest-stub/include/*.inc)
BTS_SRC   := $(wildcard guest-stub/bts/*.asm)
BTS_BIN   := $(BTS_SRC:guest-stub/bts/%.asm=$(BUILD)/guest-stub/bts/%.bin)
CSTUB_SRC := $(wildcard guest-stub/c/*.c)
CSTUB_ELF := $(CSTUB_SRC:guest-stub/c/%.c=$(BUILD)/guest-stub/c/%.elf)
C64STUB_SRC := $(wildcard guest-stub/c64/*.c)
C64STUB_ELF := $(C64STUB_SRC:guest-stub/c64/%.c=$(BUILD)/guest-stub/c64/%.elf)
PCSTUB_SRC := $(wildcard guest-stub/pc/*.c)
PCSTUB_ELF := $(PCSTUB_SRC:guest-stub/pc/%.c=$(BUILD)/guest-stub/pc/%.elf)

all: $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl $(BUILD)/libvbtsdecode.so stubs

stubs: $(STUB_BIN) $(BTS_BIN) $(CSTUB_ELF) $(C64STUB_ELF) $(PCSTUB_ELF) $(BUILD)/guest-stub/linux/yield

HEADERS   := $(shell find include vmm decoder -name '*.h')

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(REQ_CFLAGS) $(CFLAGS) $(SANFLAGS) -MMD -c $< -o $@

$(BUILD)/libvmm.a: $(VMM_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/libvbtsdecode.a: $(DEC_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/pic/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(REQ_CFLAGS) $(CFLAGS) $(SANFLAGS) -fPIC -MMD -c $< -o $@

# -z defs: every symbol it needs comes from a library it names.
$(BUILD)/libvbtsdecode.so: $(DEC_PIC)
	$(CC) -shared -Wl,-soname,$(DEC_SONAME) -Wl,-z,defs $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lelf $(DEC_LIBS)

$(BUILD)/vbts: $(BUILD)/vmm/cli/main.o $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ $(VMM_LIBS)

$(BUILD)/vbts-decode: $(BUILD)/decoder/cli/vbts-decode.o $(CLI_OBJ) $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -ldw -lelf $(DEC_LIBS)

$(BUILD)/vbts-ctl: $(BUILD)/decoder/cli/vbts-ctl.o $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ $(DEC_LIBS)

$(BUILD)/tests/unit-tests: $(UNIT_OBJ) $(CLI_OBJ) $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lcriterion -ldw $(VMM_LIBS)

# Flat multiboot images (a.out kludge) and a symbol map for the test tools.
$(BUILD)/guest-stub/%.bin: guest-stub/%.asm $(STUB_INC)
	@mkdir -p $(dir $@)
	$(NASM) -f bin -Iguest-stub/include/ -DMAPFILE='"$(BUILD)/guest-stub/$*.map"' -o $@ $<

# Guests that program BTS themselves and check their own records.
$(BUILD)/guest-stub/bts/%.bin: guest-stub/bts/%.asm guest-stub/bts/bts.inc $(STUB_INC)
	@mkdir -p $(dir $@)
	$(NASM) -f bin -Iguest-stub/include/ -Iguest-stub/bts/ -DMAPFILE='"$(@:.bin=.map)"' -o $@ $<

# Multiboot ELF guests in C with their DWARF (vbts-decode --format lcov, gdb):
# 32-bit, freestanding, static (no 32-bit libc needed), -O0 so that the
# expected traces beside the code hold.
$(BUILD)/guest-stub/c/%.elf: guest-stub/c/%.c guest-stub/c/multiboot.h guest-stub/c/stub.ld
	@mkdir -p $(dir $@)
	$(CC) -m32 -static -std=gnu11 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie -no-pie -nostdlib \
	    -fno-stack-protector -O0 -g -Wl,-T,guest-stub/c/stub.ld -Wl,--build-id=none \
	    -Wl,--no-warn-rwx-segments -o $@ $<

# 64-bit kernels in C that start in 32-bit mode (guest-stub/c64/longmode.h):
# an ELF64 with its DWARF, the multiboot header's a.out kludge for loaders.
$(BUILD)/guest-stub/c64/%.elf: guest-stub/c64/%.c guest-stub/c64/longmode.h guest-stub/c64/long64.ld
	@mkdir -p $(dir $@)
	$(CC) -m64 -static -std=gnu11 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie -no-pie -nostdlib \
	    -mno-red-zone -mcmodel=small -fno-stack-protector -fcf-protection=none -O0 -g \
	    -Wl,-T,guest-stub/c64/long64.ld -Wl,--build-id=none -Wl,--no-warn-rwx-segments \
	    -Wl,-z,max-page-size=0x1000 -o $@ $<

# Multiboot guests of the PC platform (tests/e2e/multiboot.t): 32-bit C, each
# with its own linker script, NAME.ld (segments below 1 MiB too).
$(BUILD)/guest-stub/pc/%.elf: guest-stub/pc/%.c guest-stub/pc/%.ld
	@mkdir -p $(dir $@)
	$(CC) -m32 -static -std=gnu11 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie -no-pie -nostdlib \
	    -fno-stack-protector -O0 -g -Wl,-T,guest-stub/pc/$*.ld -Wl,--build-id=none \
	    -Wl,--no-warn-rwx-segments -o $@ $<

# A static init for whole-system Linux traces (tests/e2e/linux_trace.t).
$(BUILD)/guest-stub/linux/yield: guest-stub/linux/yield.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -static -o $@ $<

deps:
	@tests/deps.sh

# The benchmark tools too, so that they cannot rot unseen.
tests: all $(BUILD)/tests/unit-tests $(BUILD)/bench/sockbench fuzz-replay

test: deps
	$(MAKE) tests
	@BUILD=$(BUILD) tests/run

# A sanitized build runs several times slower: the lab's time bounds widen for it.
check: deps
	$(MAKE) BUILD=build-san SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" CFLAGS="-O1 -g" tests
	@BUILD=build-san VBTS_LINUX_TIMEOUT_LAB=600 E2E_FILE_TIMEOUT_LAB=1200 LAB_TIMEOUT=2400 tests/run

demo: deps
	$(MAKE) all
	@scripts/demo.sh $(BUILD)

# A real Linux guest for tests and the demo: Debian's cloud kernel and a
# busybox initramfs, from apt only (scripts/linux-guest.sh).  Shared by
# `make test` and `make check`, so it lives in build/ whatever BUILD is.
LINUX_GUEST ?= build/linux
linux-guest: deps
	@scripts/linux-guest.sh $(LINUX_GUEST)

# The stock-KVM lab (scripts/lab.sh): Debian's kvm_amd in a QEMU TCG guest
# with nested SVM, from apt packages only, cached in build/lab.  `make test`
# runs the end-to-end tests there too; `make lab` runs only those.
lab: deps
	$(MAKE) tests
	@scripts/lab.sh setup
	@BUILD=$(BUILD) VBTS_UNIT=0 VBTS_LOCAL=0 tests/run

# Benchmarks print ratios measured side by side in one run (bench/*.sh).
bench: deps
	$(MAKE) all
	@for b in bench/*.sh; do echo "== $$b (this machine's KVM)"; BUILD=$(BUILD) $$b || exit 1; done
	@echo "== bench/tracer.sh in the lab (stock kvm_amd, nested SVM under QEMU TCG)"
	@scripts/lab.sh setup >/dev/null && scripts/lab.sh run env BUILD=$(BUILD) BENCH_QEMU=0 bench/tracer.sh
	@echo "== bench/compress.sh in the lab (decoding and unpacking are the host's: measured above)"
	@scripts/lab.sh run env BUILD=$(BUILD) BENCH_LOOPS=50000 BENCH_LINUX=50000 BENCH_DECODE=0 BENCH_BOOT=0 BENCH_RUNS=9 bench/compress.sh

# Differential fuzzing against QEMU (tests/gen/README.md): FUZZ_TRACE_N random
# programs from FUZZ_TRACE_SEED (default: from the clock), QEMU's records
# against vbts's under each engine, on this machine's KVM (each mismatch
# minimised to a corpus line) and in the lab (FUZZ_TRACE_LAB_N of them).
FUZZ_TRACE_N ?= 1000
FUZZ_TRACE_LAB_N ?= 300
fuzz-trace: deps
	$(MAKE) all
	@d=$(BUILD)/fuzz-trace/$$(date +%Y%m%d-%H%M%S); st=0; \
	QEMU_BRANCHES_CACHE=$(CURDIR)/$(BUILD)/oracle-cache tests/gen/fuzz-trace prepare $$d \
	    --count $(FUZZ_TRACE_N) $(if $(FUZZ_TRACE_SEED),--seed $(FUZZ_TRACE_SEED)) || st=1; \
	echo "== this machine's KVM"; \
	VBTS=$(BUILD)/vbts VBTS_DECODE=$(BUILD)/vbts-decode tests/gen/fuzz-trace run $$d \
	    --keep-failures $$d/failures --minimise || st=1; \
	echo "== the lab (stock kvm_amd, nested SVM under QEMU TCG): the first $(FUZZ_TRACE_LAB_N)"; \
	scripts/lab.sh setup >/dev/null && scripts/lab.sh run env VBTS=$(BUILD)/vbts VBTS_DECODE=$(BUILD)/vbts-decode \
	    tests/gen/fuzz-trace run $$d --host lab/kvm_amd -j 1 --limit $(FUZZ_TRACE_LAB_N) || st=1; \
	exit $$st

$(BUILD)/bench/sockbench: $(BUILD)/bench/sockbench.o $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ $(VMM_LIBS)

# --- fuzzing -----------------------------------------------------------------
# One libFuzzer target per input surface, fuzz/fuzz_<target>.c, with its seed
# corpus in fuzz/corpus/<target>/ (fuzz/README.md).  `make fuzz` runs each for
# FUZZ_TIME seconds (clang, ASan+UBSan) and fails if any finds something.
# `make tests` builds a replayer of each (fuzz/replay.c, the ordinary
# compiler and flags) that tests/run feeds its corpus: `make test` replays
# every corpus, `make check` under ASan and UBSan.
#
# A finding: libFuzzer leaves the input in $(BUILD)/fuzz/findings/ (crash-*,
# leak-*, timeout-*, oom-*, prefixed with the target).  Fix the bug, then
# copy the input into fuzz/corpus/<target>/ under a name that says what it
# found: from then on every `make test` replays it, so the bug stays fixed.
FUZZ_TARGETS := proto reader decode symbols multiboot linux unpack client guest_bts gdb stretch
FUZZ_TIME ?= 60
FUZZ_CC   ?= clang
FUZZ_CFLAGS := -std=gnu11 -g -O1 -pthread -Iinclude -Idecoder/include -Idecoder/cli -Ivmm -fno-omit-frame-pointer \
               -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_BIN    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz-%)
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay-%)

# The code under test with libFuzzer's coverage, apart from the normal build.
$(BUILD)/fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -c $< -o $@

$(BUILD)/fuzz/libvbts.a: $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(VMM_SRC) $(DEC_SRC) $(CLI_SRC))
	$(AR) rcs $@ $^

$(FUZZ_BIN): $(BUILD)/fuzz/fuzz-%: $(BUILD)/fuzz/obj/fuzz/fuzz_%.o $(BUILD)/fuzz/libvbts.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -ldw $(VMM_LIBS)

$(FUZZ_REPLAY): $(BUILD)/fuzz/replay-%: $(BUILD)/fuzz/replay.o $(BUILD)/fuzz/fuzz_%.o \
		$(CLI_OBJ) $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -ldw $(VMM_LIBS)

fuzz-replay: $(FUZZ_REPLAY)

# Each target in turn, every one even if an earlier one found something.
# New inputs go to $(BUILD)/fuzz/work/<target>, the first corpus directory;
# fuzz/corpus/<target> is only read.
fuzz:
	@fuzz/deps.sh $(FUZZ_CC)
	$(MAKE) $(FUZZ_BIN)
	@failed=; for t in $(FUZZ_TARGETS); do \
	    echo "== fuzz $$t: $(FUZZ_TIME) s"; \
	    rm -rf $(BUILD)/fuzz/work/$$t; mkdir -p $(BUILD)/fuzz/work/$$t $(BUILD)/fuzz/findings; \
	    case $$t in proto) opts=-max_len=2048 ;; *) opts= ;; esac; \
	    $(BUILD)/fuzz/fuzz-$$t -max_total_time=$(FUZZ_TIME) -timeout=10 -print_final_stats=1 $$opts \
	        -artifact_prefix=$(BUILD)/fuzz/findings/$$t- $(BUILD)/fuzz/work/$$t fuzz/corpus/$$t \
	        || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: findings in:$$failed (inputs in $(BUILD)/fuzz/findings/)"; exit 1; fi; \
	echo "fuzz: $(words $(FUZZ_TARGETS)) targets, $(FUZZ_TIME) s each, no finding"

# The Python package (python/vbts, docs/python.md) goes where PYTHON looks
# for PREFIX's packages: a site- or dist-packages folder under PREFIX on its
# sys.path (Debian's python3 and /usr/local), else PREFIX's site-packages
# (then PYTHONPATH names it); it loads PREFIX/lib/libvbtsdecode.so.0.
PYTHON ?= $(shell scripts/python)
PREFIX_ABS = $(abspath $(PREFIX))
PYTHON_SITE ?= $(shell $(PYTHON) -c 'import sys, sysconfig; p = sys.argv[1]; \
    own = [d for d in sys.path if d.startswith(p + "/") and d.endswith(("site-packages", "dist-packages"))]; \
    print(own[0] if own else sysconfig.get_path("purelib", "posix_prefix", {"base": p, "platbase": p}))' $(PREFIX_ABS))
DEC_HEADERS := $(wildcard decoder/include/vbts/*.h) include/vbts/format.h include/vbts/protocol.h include/vbts/le.h

install: $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl $(BUILD)/libvbtsdecode.so
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 0644 decoder/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 decoder/man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/vbts
	install -m 0755 $(BUILD)/libvbtsdecode.so $(DESTDIR)$(PREFIX)/lib/$(DEC_SONAME)
	ln -sf $(DEC_SONAME) $(DESTDIR)$(PREFIX)/lib/libvbtsdecode.so
	install -m 0644 $(DEC_HEADERS) $(DESTDIR)$(PREFIX)/include/vbts/
	install -d $(DESTDIR)$(PYTHON_SITE)/vbts
	install -m 0644 python/vbts/*.py $(DESTDIR)$(PYTHON_SITE)/vbts/
	echo 'LIBDIR = "$(PREFIX_ABS)/lib"  # written by make install' >$(DESTDIR)$(PYTHON_SITE)/vbts/_installed.py
	@echo "install: the Python package vbts is in $(PYTHON_SITE)"

clean:
	rm -rf build build-san

.PHONY: all stubs deps tests test check demo bench fuzz fuzz-trace fuzz-replay install clean linux-guest lab
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
