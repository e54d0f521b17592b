# sphsim: `make` builds build/sphsim; `make test` runs every test; `make bench` the benchmarks.
# `make MPI=1` builds build-mpi/sphsim on MPI (mpicc; docs/mpi.md): `mpirun -np 4 build-mpi/sphsim ...`.
CC ?= cc
MPI ?= 0
PREFIX ?= /usr/local
# HDF5 by its explicit pkg-config name: with Debian's serial and Open MPI -dev packages both
# installed, the plain name `hdf5` follows the alternatives system (the MPI one wins), so the
# default build asks for hdf5-serial and the MPI build for hdf5-openmpi (parallel HDF5,
# libhdf5-openmpi-dev: the ranks write each snapshot collectively, docs/mpi.md). Systems
# without those names fall back to `hdf5`.
ifeq ($(MPI),1)
HDF5_PKG := $(shell pkg-config --exists hdf5-openmpi && echo hdf5-openmpi || echo hdf5)
else
HDF5_PKG := $(shell pkg-config --exists hdf5-serial && echo hdf5-serial || echo hdf5)
endif
PKGS := $(HDF5_PKG) libcjson OpenCL
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) $(CFLAGS) \
              -DSPHSIM_VERSION='"$(VERSION)"' $(PKG_CFLAGS) -Isrc
LIBS := $(PKG_LIBS) -lm -lpthread

B := build
ifeq ($(MPI),1)
CC := mpicc
B := build-mpi
ALL_CFLAGS += -DSPHSIM_MPI
endif
KERNEL_FILES := $(sort $(wildcard kernels/*.h kernels/*.cl))
LIB_SRC := $(filter-out src/main.c,$(sort $(wildcard src/*.c)))
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/%.o) $(B)/kernels_embedded.o
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/%)
TEST_HELPERS := $(sort $(wildcard tests/ref_*.c tests/testutil.c tests/output_fault.c))

.PHONY: all run test sanitize unit-tests bench clean install format meshes mpi
all: $(B)/sphsim meshes

# The triangle meshes the shipped scenes and tests use, generated (scripts/make_meshes.py).
MESH_STAMP := scenes/meshes/.made
meshes: $(MESH_STAMP)
$(MESH_STAMP): scripts/make_meshes.py
	python3 scripts/make_meshes.py && touch $@

# The quick start's main job: the default scene on whatever OpenCL device is there.
run: $(B)/sphsim meshes
	$(B)/sphsim scenes/default.json -o out.h5 --overwrite

$(B):
	mkdir -p $(B)

$(B)/%.o: src/%.c $(wildcard src/*.h) $(wildcard kernels/*.h) | $(B)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/kernels_embedded.c: $(KERNEL_FILES) scripts/embed-kernels.sh | $(B)
	sh scripts/embed-kernels.sh $@ $(KERNEL_FILES)

$(B)/kernels_embedded.o: $(B)/kernels_embedded.c
	$(CC) -std=c11 $(CFLAGS) -c $< -o $@

$(B)/libsphsim.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/sphsim: $(B)/main.o $(B)/libsphsim.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/test_%: tests/test_%.c $(TEST_HELPERS) $(wildcard tests/*.h) $(B)/libsphsim.a
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< $(TEST_HELPERS) $(B)/libsphsim.a $(LIBS) -lcmocka $(LDFLAGS)

# Every test: cmocka unit and device tests, then command-line and Python end-to-end tests,
# then the unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer, and sphsim's
# threads (time loop, snapshot writer) under ThreadSanitizer.
test: all $(TEST_BIN) mpi
	sh tests/run-all.sh $(TEST_BIN)
	$(MAKE) sanitize

SAN := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# PoCL and LLVM keep compiler state until exit: their allocations are not ours to report.
sanitize:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	$(MAKE) B=build-asan CFLAGS="$(SAN)" LDFLAGS="-fsanitize=address,undefined" unit-tests
	$(MAKE) B=build-tsan CFLAGS="-O1 -g -fsanitize=thread" LDFLAGS="-fsanitize=thread" build-tsan/sphsim
	sh tests/tsan-run.sh build-tsan/sphsim

# The MPI build beside the default one (tests/python/test_mpi.py runs it on 1 to 3 ranks), and
# its twin with the writer's test hook (tests/mpi_fault.c), which fails a snapshot on one rank.
mpi:
	$(MAKE) MPI=1 build-mpi/sphsim build-mpi/sphsim-fault

$(B)/sphsim-fault: $(B)/main.o tests/mpi_fault.c $(B)/libsphsim.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

unit-tests: $(TEST_BIN)
	sh tests/run-all.sh --unit-only $(TEST_BIN)

bench: all
	sh scripts/bench.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(B)/sphsim $(DESTDIR)$(PREFIX)/bin/sphsim
	install -m 644 docs/sphsim.1 $(DESTDIR)$(PREFIX)/share/man/man1/sphsim.1

format:
	clang-format -i src/*.c src/*.h tests/*.c tests/*.h tests/fuzz/*.c kernels/*.cl kernels/*.h

clean:
	rm -rf $(B) build-asan build-tsan scenes/meshes
