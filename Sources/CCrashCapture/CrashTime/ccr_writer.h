// A buffered JSON Lines writer for crash time: formats numbers and strings itself and writes with
// write(2). No stdio, no allocation, no locks; the buffer belongs to the caller.
#ifndef CCR_WRITER_H
#define CCR_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ccr_writer {
    int fd;
    int failed;          // set once a write(2) fails for good; later output is dropped
    size_t used;
    size_t capacity;
    char *buffer;
} ccr_writer;

/// Async-signal-safe.
void ccr_writer_init(ccr_writer *w, int fd, char *buffer, size_t capacity);
/// Writes what is buffered. Async-signal-safe: write(2) only, retried on EINTR and short writes.
void ccr_writer_flush(ccr_writer *w);
/// Appends bytes as they are. Async-signal-safe.
void ccr_writer_raw(ccr_writer *w, const char *bytes, size_t length);
/// Appends a NUL-terminated literal as it is. Async-signal-safe.
void ccr_writer_text(ccr_writer *w, const char *text);
/// Appends a JSON string (quotes included) of at most `max_bytes` input bytes; control characters
/// are escaped and invalid UTF-8 becomes U+FFFD so the line always parses. Async-signal-safe.
void ccr_writer_json_string(ccr_writer *w, const char *text, size_t max_bytes);
/// Writes `value` in decimal (at most 20 bytes) / lower-case hex without "0x" (at most 16) at
/// `out`; returns how many bytes. For lines made whole in a stack buffer. Async-signal-safe.
size_t ccr_format_uint(char *out, uint64_t value);
size_t ccr_format_hex(char *out, uint64_t value);
/// Appends a decimal integer. Async-signal-safe.
void ccr_writer_int(ccr_writer *w, int64_t value);
void ccr_writer_uint(ccr_writer *w, uint64_t value);
/// Appends `"0x…"` (quoted, lower-case hex) so 64-bit addresses survive JSON number parsing.
/// Async-signal-safe.
void ccr_writer_hex(ccr_writer *w, uint64_t value);
/// Appends `"…"` with the bytes as lower-case hex digits (build-ids). Async-signal-safe.
void ccr_writer_hex_bytes(ccr_writer *w, const uint8_t *bytes, size_t length);
/// Appends `,"key":` (or `"key":` when `first`). Async-signal-safe.
void ccr_writer_key(ccr_writer *w, const char *key, int first);

#endif
