// Crash-time formatting and output. Every function here is async-signal-safe: it touches only the
// caller's buffer and calls write(2).
#include "ccr_writer.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void ccr_writer_init(ccr_writer *w, int fd, char *buffer, size_t capacity) {
    w->fd = fd;
    w->failed = 0;
    w->used = 0;
    w->capacity = capacity;
    w->buffer = buffer;
}

void ccr_writer_flush(ccr_writer *w) {
    size_t done = 0;
    while (done < w->used && !w->failed) {
        ssize_t n = write(w->fd, w->buffer + done, w->used - done);
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            w->failed = 1;
        }
    }
    w->used = 0;
}

void ccr_writer_raw(ccr_writer *w, const char *bytes, size_t length) {
    while (length > 0) {
        if (w->used == w->capacity) ccr_writer_flush(w);
        size_t room = w->capacity - w->used;
        size_t chunk = length < room ? length : room;
        memcpy(w->buffer + w->used, bytes, chunk);
        w->used += chunk;
        bytes += chunk;
        length -= chunk;
    }
}

void ccr_writer_text(ccr_writer *w, const char *text) {
    ccr_writer_raw(w, text, strlen(text));
}

static const char hex_digits[] = "0123456789abcdef";

/// Length of the valid UTF-8 sequence starting at s (at most `left` bytes), or 0 if invalid.
static size_t utf8_sequence_length(const unsigned char *s, size_t left) {
    unsigned char c = s[0];
    size_t n;
    uint32_t min;
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) { n = 2; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 3; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 4; min = 0x10000; }
    else return 0;
    if (n > left) return 0;
    uint32_t cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

void ccr_writer_json_string(ccr_writer *w, const char *text, size_t max_bytes) {
    const unsigned char *s = (const unsigned char *)text;
    size_t length = strnlen(text, max_bytes);
    ccr_writer_raw(w, "\"", 1);
    size_t i = 0;
    while (i < length) {
        // A run of printable ASCII other than '"' and '\\' (paths, names: nearly all of a string)
        // is copied in one piece rather than a byte at a time.
        size_t run = i;
        while (run < length && s[run] >= 0x20 && s[run] < 0x7F && s[run] != '"' && s[run] != '\\') run++;
        if (run > i) {
            ccr_writer_raw(w, (const char *)s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            ccr_writer_raw(w, esc, 2);
            i++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 15]};
            if (c == '\n') ccr_writer_raw(w, "\\n", 2);
            else if (c == '\t') ccr_writer_raw(w, "\\t", 2);
            else if (c == '\r') ccr_writer_raw(w, "\\r", 2);
            else ccr_writer_raw(w, esc, 6);
            i++;
        } else {
            size_t n = utf8_sequence_length(s + i, length - i);
            if (n == 0) {
                ccr_writer_raw(w, "\\ufffd", 6);
                i++;
            } else {
                ccr_writer_raw(w, (const char *)s + i, n);
                i += n;
            }
        }
    }
    ccr_writer_raw(w, "\"", 1);
}

size_t ccr_format_uint(char *out, uint64_t value) {
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - 1 - n] = (char)('0' + value % 10);
        value /= 10;
        n++;
    } while (value != 0);
    memcpy(out, digits + sizeof digits - n, n);
    return n;
}

size_t ccr_format_hex(char *out, uint64_t value) {
    char digits[16];
    size_t n = 0;
    do {
        digits[sizeof digits - 1 - n] = hex_digits[value & 15];
        value >>= 4;
        n++;
    } while (value != 0);
    memcpy(out, digits + sizeof digits - n, n);
    return n;
}

void ccr_writer_uint(ccr_writer *w, uint64_t value) {
    char digits[20];
    ccr_writer_raw(w, digits, ccr_format_uint(digits, value));
}

void ccr_writer_int(ccr_writer *w, int64_t value) {
    if (value < 0) {
        ccr_writer_raw(w, "-", 1);
        ccr_writer_uint(w, (uint64_t)0 - (uint64_t)value);
    } else {
        ccr_writer_uint(w, (uint64_t)value);
    }
}

void ccr_writer_hex(ccr_writer *w, uint64_t value) {
    char text[19] = {'"', '0', 'x'};
    size_t n = 3 + ccr_format_hex(text + 3, value);
    text[n++] = '"';
    ccr_writer_raw(w, text, n);
}

void ccr_writer_hex_bytes(ccr_writer *w, const uint8_t *bytes, size_t length) {
    ccr_writer_raw(w, "\"", 1);
    char digits[64];   // 32 bytes at a time
    for (size_t i = 0; i < length;) {
        size_t n = 0;
        for (; i < length && n < sizeof digits; i++) {
            digits[n++] = hex_digits[bytes[i] >> 4];
            digits[n++] = hex_digits[bytes[i] & 15];
        }
        ccr_writer_raw(w, digits, n);
    }
    ccr_writer_raw(w, "\"", 1);
}

void ccr_writer_key(ccr_writer *w, const char *key, int first) {
    if (!first) ccr_writer_raw(w, ",", 1);
    ccr_writer_raw(w, "\"", 1);
    ccr_writer_text(w, key);
    ccr_writer_raw(w, "\":", 2);
}
