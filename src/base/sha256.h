/*
 * sha256: FIPS 180-4 SHA-256, for the digests of a plan's inputs.
 */
#ifndef HX_SHA256_H
#define HX_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* OUT gets "sha256:" and 64 lower-case hex digits (71 characters + NUL). */
void hx_sha256_hex(const void *data, size_t len, char out[72]);

#endif
