// Stress tests of the session file's breadcrumb rings, in C against the real ccr_session.c (run
// by tools/test-session-rings). Each scenario ends with an invariant that fails when writes are
// lost or torn: every completed append adds exactly 1 to exactly one ring's `next`.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "ccr_session.h"

static char directory[512];
static int failures;

#define CHECK(condition, ...) do { if (!(condition)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void log_text(const char *text) { ccr_breadcrumb_append(1, 0, NULL, 0, text, strlen(text), NULL, 0); }

static uint64_t total(void) { return ccr_session_breadcrumbs_written(ccr_session); }

static void open_session(const char *name) {
    char path[700], error[256];
    snprintf(path, sizeof path, "%s/%s.session", directory, name);
    if (ccr_session_open(path, name, "com.example.rings", "1.0", error, sizeof error) != 0) {
        printf("cannot open the session: %s\n", error);
        exit(2);
    }
}

// 1. A thread's other key destructor logs after its ring went back to the pool and another
//    thread took it: those breadcrumbs must go to ring 0, not into the new owner's ring.
static pthread_key_t late_key;
static atomic_int taken_over;
enum { LATE = 100000 };
static void late_destructor(void *value) {
    (void)value;
    for (int waited = 0; !atomic_load(&taken_over) && waited < 50000; waited++) usleep(100);
    for (int i = 0; i < LATE; i++) log_text("late, from a destructor");
}
static void *exiting_thread(void *unused) {
    (void)unused;
    log_text("first");
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}
static void *taking_thread(void *unused) {
    (void)unused;
    for (int i = 1; i < CCR_BREADCRUMB_RINGS; i++) {   // wait (at most 5 s) for the exit's release
        for (int waited = 0; atomic_load(&ccr_session->rings[i].owner) != 0 && waited < 100000; waited++) usleep(50);
        CHECK(atomic_load(&ccr_session->rings[i].owner) == 0, "late logging: ring %d still owned by %u", i, atomic_load(&ccr_session->rings[i].owner));
    }
    log_text("taker first");
    atomic_store(&taken_over, 1);
    for (int i = 0; i < LATE; i++) log_text("taker");
    return NULL;
}
static void late_logging_after_release(void) {
    // The process's own thread keeps no ring here: all four are free to be claimed.
    pthread_key_create(&late_key, late_destructor);   // created after the ring key: runs after it
    pthread_t a, b;
    uint64_t before = total();
    pthread_create(&a, NULL, exiting_thread, NULL);
    pthread_create(&b, NULL, taking_thread, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(total() - before == 2 + 2 * LATE, "late logging: %llu appends counted, %d made",
          (unsigned long long)(total() - before), 2 + 2 * LATE);
}

// 2. A fork before any thread logged: the child's breadcrumb goes to ring 0 and claims nothing.
static void fork_before_first_breadcrumb(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        log_text("from the child");
        _exit(0);
    }
    waitpid(child, NULL, 0);
    for (int i = 1; i < CCR_BREADCRUMB_RINGS; i++)
        CHECK(atomic_load(&ccr_session->rings[i].owner) == 0, "fork: ring %d owned by %u after the child's exit", i,
              atomic_load(&ccr_session->rings[i].owner));
    CHECK(atomic_load(&ccr_session->rings[0].next) == 1, "fork: ring 0 has %llu", (unsigned long long)atomic_load(&ccr_session->rings[0].next));
}

// 3. A thread owning a ring forks; the child's copy of that thread exits: the parent's ring
//    stays the parent thread's.
static void *forking_thread(void *unused) {
    (void)unused;
    log_text("owner");
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    int mine = -1;
    for (int i = 1; i < CCR_BREADCRUMB_RINGS; i++) if (atomic_load(&ccr_session->rings[i].owner) == tid) mine = i;
    CHECK(mine > 0, "fork: the thread owns no ring");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        log_text("child of an owner");
        pthread_exit(NULL);   // the child's only thread: runs its key destructors, then the process exits
    }
    waitpid(child, NULL, 0);
    if (mine > 0) CHECK(atomic_load(&ccr_session->rings[mine].owner) == tid, "fork: the child gave the parent's ring %d back", mine);
    return NULL;
}
static void fork_of_an_owner(void) {
    pthread_t t;
    pthread_create(&t, NULL, forking_thread, NULL);
    pthread_join(t, NULL);
}

// 4. Exports of the live file while its owner overwrites the oldest slots: every exported
//    breadcrumb is whole (its message is one repeated letter, its metadata names the letter and
//    the length).
static atomic_int stop_writer;
static void *consistent_writer(void *unused) {
    (void)unused;
    char message[600], metadata[64];
    for (unsigned i = 0; !atomic_load(&stop_writer); i++) {
        char letter = (char)('a' + i % 26);
        size_t length = 1 + (i * 37) % 500;
        memset(message, letter, length);
        int m = snprintf(metadata, sizeof metadata, "{\"c\":\"%c\",\"n\":\"%zu\"}", letter, length);
        ccr_breadcrumb_append(1, 0, NULL, 0, message, length, metadata, (size_t)m);
        // ~0.5 M a second: busy, but not lapping the ring several times during one export
        // (then all of its 500 are newer than what the export picked, and none is exported).
        if (i % 32 == 31) usleep(1);
    }
    return NULL;
}
static int check_line(const char *line) {
    const char *m = strstr(line, "\"message\":\"");
    const char *d = strstr(line, "\"metadata\":{\"c\":\"");
    if (!m || !d) return 0;
    m += strlen("\"message\":\"");
    char letter = *m;
    size_t length = 0;
    while (m[length] == letter) length++;
    if (m[length] != '"') return 0;
    d += strlen("\"metadata\":{\"c\":\"");
    size_t stated = 0;
    return d[0] == letter && sscanf(d + 1, "\",\"n\":\"%zu\"}", &stated) == 1 && stated == length;
}
static void export_while_writing(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.session", directory, "rings");
    pthread_t writer;
    pthread_create(&writer, NULL, consistent_writer, NULL);
    usleep(20000);
    int lines = 0, torn = 0;
    for (int round = 0; round < 200; round++) {
        FILE *out = tmpfile();
        int status = ccr_session_export(path, fileno(out));
        CHECK(status == 0, "export: status %d", status);
        rewind(out);
        char line[4096];
        while (fgets(line, sizeof line, out)) {
            if (!strstr(line, "\"type\":\"breadcrumb\"") || !strstr(line, "\"metadata\":{\"c\"")) continue;
            lines++;
            if (!check_line(line)) torn++;
        }
        fclose(out);
    }
    atomic_store(&stop_writer, 1);
    pthread_join(writer, NULL);
    CHECK(lines > 10000, "export: only %d breadcrumb lines read", lines);
    CHECK(torn == 0, "export: %d of %d exported breadcrumbs were torn", torn, lines);
}

// 5. A signal handler logs on a thread that is in the middle of an append to its own ring.
static atomic_long from_handler;
static void handler(int signal) {
    (void)signal;
    log_text("from a signal handler");
    atomic_fetch_add(&from_handler, 1);
}
static void *signalled_thread(void *unused) {
    (void)unused;
    log_text("claims a ring");
    return NULL;
}
static void signal_during_append(void) {
    uint64_t before = total();
    signal(SIGALRM, handler);
    struct itimerval every = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &every, NULL);
    enum { N = 2000000 };
    for (int i = 0; i < N; i++) log_text("from the thread");
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    long handled = atomic_load(&from_handler);
    CHECK(handled > 100, "signal: only %ld handler breadcrumbs", handled);
    CHECK(total() - before == (uint64_t)N + (uint64_t)handled, "signal: %llu appends counted, %llu made",
          (unsigned long long)(total() - before), (unsigned long long)N + (unsigned long long)handled);
    (void)signalled_thread;
}

// 6. Every message length from 0 to 200 comes back byte for byte (the short-text copy covers
//    8…64 bytes with two overlapping copies; a wrong offset would show here).
static void exact_texts(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.session", directory, "rings");
    enum { LENGTHS = 201 };
    char message[LENGTHS + 1];
    for (int length = 0; length < LENGTHS; length++) {
        for (int i = 0; i < length; i++) message[i] = (char)('A' + (i * 7 + length) % 26);
        ccr_breadcrumb_append(1, 0, "len", 3, message, (size_t)length, NULL, 0);
    }
    FILE *out = tmpfile();
    ccr_session_export(path, fileno(out));
    rewind(out);
    char line[8192];
    int checked = 0;
    while (fgets(line, sizeof line, out)) {
        const char *m = strstr(line, "\"tag\":\"len\",\"message\":\"");
        if (!m) continue;
        m += strlen("\"tag\":\"len\",\"message\":\"");
        const char *end = strchr(m, '"');
        int length = (int)(end - m);
        int ok = 1;
        for (int i = 0; i < length; i++) ok &= m[i] == (char)('A' + (i * 7 + length) % 26);
        CHECK(ok, "exact: a message of %d bytes came back as %.*s", length, length, m);
        CHECK(length == checked, "exact: lengths out of order (%d after %d)", length, checked - 1);
        checked++;
    }
    fclose(out);
    CHECK(checked == LENGTHS, "exact: %d of %d messages exported", checked, LENGTHS);
}

// 6b. Every tag length from 0 to 64 comes back byte for byte, before a message (the tag comes
//     first in a slot's text, version 7), and a kind with the fields bit set (0x80, which only
//     ccr_breadcrumb_http sets) is kept without it: 0x81 comes back as "screen", with its message.
static void tags_and_kinds(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.session", directory, "rings");
    char tag[65];
    for (int length = 0; length <= 64; length++) {
        for (int i = 0; i < length; i++) tag[i] = (char)('a' + (i * 5 + length) % 26);
        ccr_breadcrumb_append(1, 2, tag, (size_t)length, "after the tag", 13, NULL, 0);
    }
    ccr_breadcrumb_append(1, 0x81, "kinds", 5, "not an http breadcrumb", 22, NULL, 0);
    FILE *out = tmpfile();
    ccr_session_export(path, fileno(out));
    rewind(out);
    char line[8192];
    int checked = 0, kinds = 0;
    while (fgets(line, sizeof line, out)) {
        if (strstr(line, "\"tag\":\"kinds\"")) {
            kinds++;
            CHECK(strstr(line, "\"kind\":\"screen\",\"tag\":\"kinds\",\"message\":\"not an http breadcrumb\"}") != NULL,
                  "kinds: %s", line);
            continue;
        }
        const char *t = strstr(line, "\"kind\":\"action\",\"tag\":\"");
        if (!t || !strstr(line, "\"message\":\"after the tag\"}")) continue;
        t += strlen("\"kind\":\"action\",\"tag\":\"");
        int length = (int)(strchr(t, '"') - t);
        int ok = length == checked;
        for (int i = 0; ok && i < length; i++) ok &= t[i] == (char)('a' + (i * 5 + length) % 26);
        CHECK(ok, "tags: tag %d came back as %.*s", checked, length, t);
        checked++;
    }
    fclose(out);
    CHECK(checked == 65, "tags: %d of 65 tags exported", checked);
    CHECK(kinds == 1, "kinds: %d exported", kinds);
}

// 7. A session file laid out by hand at the offsets version 7 documents (rings of 1056064 bytes
//    from offset 71808, slots of 2112 bytes, order at 16, request tie at 24, from 40 the tag, then
//    the message), as a process killed before its next launch leaves it: read, its rings merged by
//    order, then by request tie for two even orders, not by time (all four have the same
//    coarse-clock time, and ring 0 comes before ring 1 and ring 2). An "http" breadcrumb kept as
//    its fields (kind bit 0x80, Decision 0060: after the tag, status and duration as 8 bytes each, five
//    2-byte lengths, has_trace, has_span, 4 bytes of padding, then the texts) is read as its
//    message and metadata; one whose lengths do not add up, one whose length is over the slot's
//    and one whose fields would format to more than 1 KiB are each listed as unreadable. Another
//    version, a file cut short and a size field that disagrees with the file are refused, not read.
enum { FILE_SIZE = 5352128, RINGS_AT = 71808, RING_SIZE = 1056064, SLOT_SIZE = 2112 };
static void put_breadcrumb(char *file, int ring, uint64_t n, uint64_t order, uint64_t tie, const char *message) {
    char *slot = file + RINGS_AT + (size_t)ring * RING_SIZE + 64 + (size_t)(n % 500) * SLOT_SIZE;
    uint64_t seq = 2 * n + 2, time = 1000;
    memcpy(slot, &seq, 8);
    memcpy(slot + 8, &time, 8);
    memcpy(slot + 16, &order, 8);
    memcpy(slot + 24, &tie, 8);
    slot[32] = 2;   // warning
    slot[33] = 1;   // screen
    uint16_t tag_length = 3, message_length = (uint16_t)strlen(message), metadata_length = 0;
    memcpy(slot + 34, &tag_length, 2);
    memcpy(slot + 36, &message_length, 2);
    memcpy(slot + 38, &metadata_length, 2);
    memcpy(slot + 40, "old", 3);
    memcpy(slot + 43, message, message_length);
    uint64_t next = n + 1;
    memcpy(file + RINGS_AT + (size_t)ring * RING_SIZE, &next, 8);
}
static void put_http_breadcrumb(char *file, int ring, uint64_t n, uint64_t order, int64_t status, int64_t tenths,
                                const char *texts[5], int has_trace, int has_span, int extra_length) {
    put_breadcrumb(file, ring, n, order, 0, "");
    char *slot = file + RINGS_AT + (size_t)ring * RING_SIZE + 64 + (size_t)(n % 500) * SLOT_SIZE;
    slot[32] = 1;      // info
    slot[33] = (char)0x80;   // kind log, as fields
    memcpy(slot + 40, "http", 4);
    uint16_t tag_length = 4, total = 32;
    memcpy(slot + 34, &tag_length, 2);
    char *fields = slot + 44;
    memcpy(fields, &status, 8);
    memcpy(fields + 8, &tenths, 8);
    for (int i = 0; i < 5; i++) {
        uint16_t length = (uint16_t)strlen(texts[i]);
        memcpy(fields + 16 + 2 * i, &length, 2);
        memcpy(fields + total, texts[i], length);
        total += length;
    }
    fields[26] = (char)has_trace;
    fields[27] = (char)has_span;
    total += (uint16_t)extra_length;
    memcpy(slot + 36, &total, 2);
}
static int write_file(const char *path, const char *bytes, size_t size) {
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    size_t written = fwrite(bytes, 1, size, f);
    return fclose(f) == 0 && written == size ? 0 : -1;
}
static void documented_layout(void) {
    CHECK(sizeof(ccr_session_file) == FILE_SIZE && offsetof(ccr_session_file, rings) == RINGS_AT
              && sizeof(ccr_breadcrumb_ring) == RING_SIZE && sizeof(ccr_breadcrumb_slot) == SLOT_SIZE,
          "layout: the file's layout changed without a new version (%zu bytes)", sizeof(ccr_session_file));
    char *file = calloc(1, FILE_SIZE);
    ccr_session_file *h = (ccr_session_file *)(void *)file;   // the header fields
    h->magic = CCR_SESSION_MAGIC;
    h->version = 7;
    h->size = FILE_SIZE;
    h->breadcrumb_capacity = 500;
    h->breadcrumb_rings = 5;
    h->pid = 12345;
    atomic_store(&h->state, CCR_SESSION_RUNNING);
    strcpy(h->session_id, "by-hand");
    // An ordinary append's odd order, two request breadcrumbs that read the same counter (even
    // order 8; the one in ring 1 read the clock first), an ordinary append that followed them.
    put_breadcrumb(file, 2, 0, 7, 999999, "first, ring 2");
    put_breadcrumb(file, 0, 0, 8, 500, "third, ring 0");
    put_breadcrumb(file, 1, 0, 8, 400, "second, ring 1");
    put_breadcrumb(file, 2, 1, 9, 0, "fourth, ring 2");
    const char *request[5] = {"GET", "/users/{id}", "req-7", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"};
    const char *escaped[5] = {"PUT", "/a \"b\"", "id\n", "", ""};
    put_http_breadcrumb(file, 1, 1, 11, 503, 1234, request, 1, 1, 0);
    put_http_breadcrumb(file, 1, 2, 13, 200, 7, escaped, 0, 0, 0);
    put_http_breadcrumb(file, 1, 3, 15, 200, 7, escaped, 0, 0, 1);   // one byte more than its texts
    put_http_breadcrumb(file, 1, 4, 17, 200, 7, escaped, 0, 0, 2000);   // longer than a slot's text
    char quotes[1901];
    memset(quotes, '"', 1900);
    quotes[1900] = 0;
    const char *long_route[5] = {"GET", quotes, "", "", ""};   // 3800 bytes once escaped
    put_http_breadcrumb(file, 1, 5, 19, 200, 7, long_route, 0, 0, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/by-hand.session", directory);
    CHECK(write_file(path, file, FILE_SIZE) == 0, "layout: cannot write %s", path);
    ccr_session_info info;
    int status = ccr_session_inspect(path, &info);
    CHECK(status == 0 && info.state == CCR_SESSION_RUNNING && info.pid == 12345 && info.breadcrumbs_written == 9
              && strcmp(info.session_id, "by-hand") == 0,
          "layout: inspect %d, state %d, pid %d, %llu written, id %s", status, info.state, info.pid,
          (unsigned long long)info.breadcrumbs_written, info.session_id);
    FILE *out = tmpfile();
    status = ccr_session_export(path, fileno(out));
    CHECK(status == 0, "layout: export status %d", status);
    rewind(out);
    char line[4096];
    const char *expected[] = {"first, ring 2", "second, ring 1", "third, ring 0", "fourth, ring 2"};
    const char *http_expected[] = {
        "\"level\":\"info\",\"kind\":\"log\",\"tag\":\"http\",\"message\":\"GET /users/{id} 503\",\"metadata\":{\"method\":\"GET\","
        "\"route\":\"/users/{id}\",\"status\":\"503\",\"duration_ms\":\"123.4\",\"request_id\":\"req-7\","
        "\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\",\"span_id\":\"00f067aa0ba902b7\"}}",
        "\"level\":\"info\",\"kind\":\"log\",\"tag\":\"http\",\"message\":\"PUT /a \\\"b\\\" 200\",\"metadata\":{\"method\":\"PUT\","
        "\"route\":\"/a \\\"b\\\"\",\"status\":\"200\",\"duration_ms\":\"0.7\",\"request_id\":\"id\\n\"}}",
        "\"level\":\"info\",\"kind\":\"log\",\"tag\":\"http\",\"message\":\"(an http breadcrumb whose fields could not be read)\"}",
        "\"level\":\"info\",\"kind\":\"log\",\"tag\":\"http\",\"message\":\"(an http breadcrumb whose fields could not be read)\"}",
        "\"level\":\"info\",\"kind\":\"log\",\"tag\":\"http\",\"message\":\"(an http breadcrumb whose fields could not be read)\"}",
    };
    int seen = 0;
    while (fgets(line, sizeof line, out)) {
        if (!strstr(line, "\"type\":\"breadcrumb\"")) continue;
        char wanted[512];
        if (seen < 4) {
            snprintf(wanted, sizeof wanted, "\"level\":\"warning\",\"kind\":\"screen\",\"tag\":\"old\",\"message\":\"%s\"}", expected[seen]);
        } else {
            snprintf(wanted, sizeof wanted, "%s", seen < 9 ? http_expected[seen - 4] : "?");
        }
        CHECK(strstr(line, wanted) != NULL, "layout: breadcrumb %d is %s", seen, line);
        seen++;
    }
    fclose(out);
    CHECK(seen == 9, "layout: %d of 9 breadcrumbs exported", seen);

    h->version = 6;   // never released: no reader for it (its slots had no fields form)
    CHECK(write_file(path, file, FILE_SIZE) == 0 && ccr_session_inspect(path, &info) == -2, "layout: version 6 not refused");
    h->version = 7;   // cut short: the last ring missing
    CHECK(write_file(path, file, FILE_SIZE - RING_SIZE) == 0 && ccr_session_inspect(path, &info) == -2
              && ccr_session_export(path, fileno(stdout)) == -2, "layout: a file cut short not refused");
    h->size = FILE_SIZE - 100000;   // the header's size disagrees with this version's
    CHECK(write_file(path, file, FILE_SIZE) == 0 && ccr_session_inspect(path, &info) == -2, "layout: a wrong size field not refused");
    unlink(path);
    free(file);
}

// 8. Two threads with rings of their own take turns (a handoff through an atomic, as a request
//    answered on one event loop and the next one begun on another): the export lists their
//    breadcrumbs in the turns' order, though all of them fall within a few coarse-clock ticks.
// 9. The same turns with a server's request breadcrumbs (ccr_breadcrumb_request, and the http one
//    with a start), which read the session's counter instead of adding to it (Decision 0058):
//    three turns in four are request breadcrumbs, so most neighbours read the same counter and
//    only their clock reads order them; every fourth is an ordinary append. The request
//    breadcrumbs leave the counter as it was. Then again with the clock taken for one that can
//    repeat a value (ccr_session_test_coarse_request_clock): request breadcrumbs take the add.
enum { TURNS = 200 };
static atomic_int turn;
static int requests_taking_turns;   // 8: 0, 9: 1 and 2
static const char *turn_tag;        // "turns", "rturns", "cturns": the export still holds the earlier runs
static void *taking_turns(void *argument) {
    int me = (int)(intptr_t)argument;
    char text[32];
    for (int i = me; i < TURNS; i += 2) {
        while (atomic_load(&turn) != i) {}
        snprintf(text, sizeof text, "%s %d", turn_tag, i);
        if (!requests_taking_turns || i % 4 == 3) {
            ccr_breadcrumb_append(1, 1, turn_tag, strlen(turn_tag), text, strlen(text), NULL, 0);
        } else if (i % 4 == 1) {
            int64_t tenths = -1;
            CHECK(ccr_breadcrumb_http("GET", 3, text, strlen(text), 200, 0, 1, "id", 2, NULL, 0, 0, NULL, 0, 0, 1000, &tenths) == 1
                      && tenths > 0,
                  "request turns: the http breadcrumb of turn %d not written (duration %lld)", i, (long long)tenths);
        } else {
            CHECK(ccr_breadcrumb_request(1, 1, turn_tag, strlen(turn_tag), text, strlen(text)) != 0, "request turns: no clock read");
        }
        atomic_store(&turn, i + 1);
    }
    return NULL;
}
/// mode 0: ordinary appends; 1: request breadcrumbs; 2: the same with a clock that may repeat.
static void turns_across_rings(int mode) {
    const char *names[] = {"turns", "request turns", "request turns, coarse clock"}, *tags[] = {"turns", "rturns", "cturns"};
    const char *name = names[mode];
    pthread_t a, b;
    atomic_store(&turn, 0);
    requests_taking_turns = mode != 0;
    turn_tag = tags[mode];
    if (mode == 2) ccr_session_test_coarse_request_clock();
    uint64_t counter_before = atomic_load(&ccr_session->breadcrumb_order);
    pthread_create(&a, NULL, taking_turns, (void *)(intptr_t)0);
    pthread_create(&b, NULL, taking_turns, (void *)(intptr_t)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    uint64_t added = atomic_load(&ccr_session->breadcrumb_order) - counter_before;
    CHECK(added == (uint64_t)(mode == 1 ? TURNS / 4 : TURNS), "%s: the counter moved by %llu", name, (unsigned long long)added);
    char path[700];
    snprintf(path, sizeof path, "%s/%s.session", directory, "rings");
    FILE *out = tmpfile();
    ccr_session_export(path, fileno(out));
    rewind(out);
    char line[8192];
    int expected = 0, rings_seen[CCR_BREADCRUMB_RINGS] = {0};
    // A turn's number: in the message of its breadcrumb, or of its http one (the route).
    char ordinary[64], http[64];
    snprintf(ordinary, sizeof ordinary, "\"tag\":\"%s\",\"message\":\"%s ", turn_tag, turn_tag);
    snprintf(http, sizeof http, "\"tag\":\"http\",\"message\":\"GET %s ", turn_tag);
    while (fgets(line, sizeof line, out)) {
        const char *m = strstr(line, ordinary), *h = strstr(line, http);
        if (!m && !h) continue;
        int value = m ? atoi(m + strlen(ordinary)) : atoi(h + strlen(http));
        const char *ring = strstr(line, "\"ring\":");
        if (ring) { int r = atoi(ring + 7); if (r >= 0 && r < CCR_BREADCRUMB_RINGS) rings_seen[r] = 1; }
        CHECK(value == expected, "%s: turn %d listed where turn %d belongs", name, value, expected);
        expected = value + 1;
    }
    fclose(out);
    int rings = 0;
    for (int r = 0; r < CCR_BREADCRUMB_RINGS; r++) rings += rings_seen[r];
    CHECK(expected == TURNS, "%s: %d of %d exported", name, expected, TURNS);
    CHECK(rings == 2, "%s: the two threads wrote to %d ring(s), not two of their own", name, rings);
}

// 0. (Its own process: `residency`.) The first breadcrumb into the sparse session file costs the
//    page it writes, not the file: ~2.3 ms and every page of the ~5 MB file in the page cache
//    when the kernel's read-ahead fills the holes around the first store (measured), ~15 µs and a
//    few pages with MADV_RANDOM on the mapping.
static int resident_pages(void) {
    size_t pages = (sizeof(ccr_session_file) + 4095) / 4096;
    static unsigned char vector[(sizeof(ccr_session_file) + 4095) / 4096];
    if (mincore((void *)ccr_session, sizeof(ccr_session_file), vector) != 0) return -1;
    int resident = 0;
    for (size_t i = 0; i < pages; i++) resident += vector[i] & 1;
    return resident;
}
/// Whether the page holding `address` is in the page cache.
static int page_resident(const void *address) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char v = 0;
    if (mincore((void *)((uintptr_t)address & ~(uintptr_t)(page - 1)), 1, &v) != 0) return -1;
    return v & 1;
}
static int residency(void) {
    open_session("residency");
    int before = resident_pages();
    log_text("first");
    log_text("second");
    int after = resident_pages();
    int total_pages = (int)((sizeof(ccr_session_file) + 4095) / 4096);
    CHECK(before >= 0 && after >= 0 && after <= 8, "residency: %d of %d pages in the page cache after two breadcrumbs (%d before)",
          after, total_pages, before);
    printf("residency: %d of %d pages after two breadcrumbs (%d before)\n", after, total_pages, before);
    // Each append prefetches its ring's next slot for writing (Decision 0062): the second one, the
    // third slot. A prefetch brings no page of the sparse file in. Checked where that slot's first
    // lines are on a page of their own, which neither append wrote.
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    const ccr_breadcrumb_ring *ring = NULL;
    for (int r = 1; r < CCR_BREADCRUMB_RINGS; r++) {
        if (atomic_load(&ccr_session->rings[r].owner) == tid) ring = &ccr_session->rings[r];
    }
    CHECK(ring != NULL && atomic_load(&ring->next) == 2, "residency: the two breadcrumbs are not in a ring of this thread's own");
    if (ring != NULL) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t third = (uintptr_t)&ring->slots[2], written_end = (uintptr_t)&ring->slots[1] + 128;
        if (third / (uintptr_t)page > written_end / (uintptr_t)page) {
            int resident = page_resident((const void *)third);
            CHECK(resident == 0, "residency: the page of the slot the second append prefetched is in the page cache (%d)", resident);
            printf("residency: the prefetched slot's page is %s\n", resident == 0 ? "not resident" : "resident");
        } else {
            printf("residency: the prefetched slot shares a page with the written ones; not checked\n");
        }
    }
    printf("%s: %d failure(s)\n", failures ? "session residency FAILED" : "session residency passed", failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    snprintf(directory, sizeof directory, "%s", argc > 1 ? argv[1] : "/tmp");
    if (argc > 2 && strcmp(argv[2], "residency") == 0) return residency();
    open_session("rings");
    fork_before_first_breadcrumb();   // first: no thread has logged yet
    late_logging_after_release();
    fork_of_an_owner();
    export_while_writing();
    signal_during_append();           // the main thread claims a ring here
    exact_texts();                    // after: the last 500 of the main thread's ring
    tags_and_kinds();                 // the same ring: 66 more
    documented_layout();
    turns_across_rings(0);   // after: two new threads take the free rings
    turns_across_rings(1);   // two more, once those have given theirs back
    turns_across_rings(2);   // last: the clock's check stays off
    printf("%s: %d failure(s)\n", failures ? "session rings FAILED" : "session rings passed", failures);
    return failures ? 1 : 0;
}
