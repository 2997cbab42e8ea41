// memcpy for the short texts the app's threads write on every request or breadcrumb (a method, a
// route pattern, an id, a tag, a short message), without a call: memmove was a sixth of the http
// breadcrumb's samples in tools/profile-middleware (Decision 0058), and ~0.1 points of the
// middleware's share under its request's begin (Decision 0060).
#ifndef CCR_COPY_H
#define CCR_COPY_H

#include <stdint.h>
#include <string.h>

/// Copies `n` bytes: up to 64 by two overlapping unaligned copies (or, below 8, byte by byte),
/// which never read past the source's end; more by memcpy. `from` may be NULL when `n` is 0.
static inline __attribute__((always_inline)) void ccr_copy_short(char *to, const char *from, size_t n) {
    if (n >= 8 && n <= 16) {
        uint64_t a, b; __builtin_memcpy(&a, from, 8); __builtin_memcpy(&b, from + n - 8, 8);
        __builtin_memcpy(to, &a, 8); __builtin_memcpy(to + n - 8, &b, 8);
    } else if (n > 16 && n <= 32) {
        char a[16], b[16]; __builtin_memcpy(a, from, 16); __builtin_memcpy(b, from + n - 16, 16);
        __builtin_memcpy(to, a, 16); __builtin_memcpy(to + n - 16, b, 16);
    } else if (n > 32 && n <= 64) {
        char a[32], b[32]; __builtin_memcpy(a, from, 32); __builtin_memcpy(b, from + n - 32, 32);
        __builtin_memcpy(to, a, 32); __builtin_memcpy(to + n - 32, b, 32);
    } else if (n < 8) {
        for (size_t i = 0; i < n; i++) to[i] = from[i];
    } else {
        memcpy(to, from, n);
    }
}

#endif
