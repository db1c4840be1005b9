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
REQ_CFLAGS  := -std=gnu11 -Wall -Wextra -Werror -pthread -Iinclude -Idecoder/include -Ivmm
REQ_LDFLAGS := -pthread
NASM    ?= nasm

VMM_SRC   := $(filter-out vmm/cli/main.c,$(shell find vmm -name '*.c' | LC_ALL=C sort))
VMM_OBJ   := $(VMM_SRC:%.c=$(BUILD)/%.o)
DEC_SRC   := $(wildcard decoder/lib/*.c)
DEC_OBJ   := $(DEC_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC  := $(shell find tests/unit -name '*.c' | LC_ALL=C sort)
UNIT_OBJ  := $(UNIT_SRC:%.c=$(BUILD)/%.o)
STUB_SRC  := $(wildcard guest-stub/*.asm)
STUB_BIN  := $(STUB_SRC:guest-stub/%.asm=$(BUILD)/guest-stub/%.bin)
STUB_INC  := $(wildcard guest-stub/include/*.inc)
BTS_SRC   := $(wildcard guest-stub/bts/*.asm)
BTS_BIN   := $(BTS_SRC:guest-stub/bts/%.asm=$(BUILD)/guest-stub/bts/%.bin)

all: $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl stubs

stubs: $(STUB_BIN) $(BTS_BIN) $(BUILD)/guest-stub/linux/yield

HEADERS   := $(shell find include vmm decoder -name '*.h')

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(REQ_CFLAGS) $(CFLAGS) $(SANFLAGS) -MMD -c $< -o $@

$(BUILD)/libvmm.a: $(VMM_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/libvbtsdecode.a: $(DEC_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/vbts: $(BUILD)/vmm/cli/main.o $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lZydis -lelf

$(BUILD)/vbts-decode: $(BUILD)/decoder/cli/vbts-decode.o $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lelf

$(BUILD)/vbts-ctl: $(BUILD)/decoder/cli/vbts-ctl.o $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^

$(BUILD)/tests/unit-tests: $(UNIT_OBJ) $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lcriterion -lZydis -lelf

# Flat multiboot images (a.out kludge) and a symbol map for the test tools.
$(BUILD)/guest-stub/%.bin: guest-stub/%.asm $(STUB_INC)
	@mkdir -p $(dir $@)
	$(NASM) -f bin -Iguest-stub/include/ -DMAPFILE='"$(BUILD)/guest-stub/$*.map"' -o $@ $<

# Guests that program BTS themselves and check their own records.
$(BUILD)/guest-stub/bts/%.bin: guest-stub/bts/%.asm guest-stub/bts/bts.inc $(STUB_INC)
	@mkdir -p $(dir $@)
	$(NASM) -f bin -Iguest-stub/include/ -Iguest-stub/bts/ -DMAPFILE='"$(@:.bin=.map)"' -o $@ $<

# A static init for whole-system Linux traces (tests/e2e/linux_trace.t).
$(BUILD)/guest-stub/linux/yield: guest-stub/linux/yield.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -Werror -O2 -static -o $@ $<

deps:
	@tests/deps.sh

# The benchmark tools too, so that they cannot rot unseen.
tests: all $(BUILD)/tests/unit-tests $(BUILD)/bench/sockbench

test: deps
	$(MAKE) tests
	@BUILD=$(BUILD) tests/run

check: deps
	$(MAKE) BUILD=build-san SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" CFLAGS="-O1 -g" tests
	@BUILD=build-san tests/run

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

$(BUILD)/bench/sockbench: $(BUILD)/bench/sockbench.o $(BUILD)/libvmm.a $(BUILD)/libvbtsdecode.a
	$(CC) $(REQ_LDFLAGS) $(LDFLAGS) $(SANFLAGS) -o $@ $^ -lZydis -lelf

# Fuzz the control protocol server (fuzz/fuzz_proto.c) for FUZZ_TIME seconds
# with libFuzzer (clang); a crash or a malformed reply fails the target.
FUZZ_TIME ?= 60
FUZZ_CC   ?= clang
FUZZ_SRC  := fuzz/fuzz_proto.c vmm/export/proto.c vmm/export/ring.c $(wildcard vmm/export/server/*.c) \
             vmm/core/error.c vmm/core/clock.c decoder/lib/dest.c
$(BUILD)/fuzz/fuzz_proto: $(FUZZ_SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 -g -O1 -pthread -Iinclude -Ivmm -Idecoder/include -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_SRC)

fuzz: $(BUILD)/fuzz/fuzz_proto
	@rm -rf $(BUILD)/fuzz/corpus && mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/fuzz_proto -max_total_time=$(FUZZ_TIME) -max_len=2048 -timeout=10 \
		-print_final_stats=1 $(BUILD)/fuzz/corpus fuzz/corpus

install: $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/vbts $(BUILD)/vbts-decode $(BUILD)/vbts-ctl $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 0644 decoder/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 decoder/man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/

clean:
	rm -rf build build-san

.PHONY: all stubs deps tests test check demo bench fuzz install clean linux-guest lab
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
