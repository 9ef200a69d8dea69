/*
 * fuzz: the driver every loader harness shares.  A harness defines
 * hx_fuzz_one(path), which loads the file at PATH with one loader and
 * releases what it got; the loader must return an error or succeed, never
 * crash, hang or leak.  The bytes reach the loader through a memfd, so the
 * loaders run exactly as they do on users' files (by path).
 *
 * Built with --enable-fuzz (clang), a harness is a libFuzzer target.
 * Otherwise it is a plain program that runs each file named on its command
 * line once (how 'make check' replays the corpus under the sanitizers, and
 * how AFL++ drives it: afl-fuzz -i corpus -o out -- ./fuzz/fuzz_plan @@).
 */
#ifndef HX_FUZZ_H
#define HX_FUZZ_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"

static void hx_fuzz_one(const char *path);

/* Hand DATA to the harness as a file; returns 0. */
static int hx_fuzz_bytes(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];

	if (fd < 0 && (fd = memfd_create("hexplan-fuzz", 0)) < 0) {
		perror("memfd_create");
		abort();
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("memfd");
		abort();
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	hx_fuzz_one(path);
	return 0;
}

#ifdef HX_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return hx_fuzz_bytes(data, size);
}
#else
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		size_t len;
		hx_err err = {0};
		char *text = hx_read_file(argv[i], &len, &err);
		if (!text) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		hx_fuzz_bytes((const uint8_t *)text, len);
		free(text);
	}
	return 0;
}
#endif

#endif
