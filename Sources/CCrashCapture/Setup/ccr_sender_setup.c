// Delivery at crash time: the settings the handler uses to start the sender (see
// Shared/ccr_sender.h). Not async-signal-safe; called by start() before a crash can read them.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "ccr_sender.h"

extern char **environ;

int ccr_sender_configure(const char *sender_path, const char *config_path, int wait_ms, char *error, size_t capacity) {
    ccr_sender.enabled = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (strlen(sender_path) >= sizeof ccr_sender.path || strlen(config_path) >= sizeof ccr_sender.config) {
        snprintf(error, capacity, "the crash-sender path or its configuration path is longer than %d bytes", CCR_PATH_MAX - 1);
        return 1;
    }
    if (access(sender_path, X_OK) != 0) {
        snprintf(error, capacity, "the crash-sender %s is not an executable file", sender_path);
        return 2;
    }
    memcpy(ccr_sender.path, sender_path, strlen(sender_path) + 1);
    memcpy(ccr_sender.config, config_path, strlen(config_path) + 1);
    ccr_sender.wait_ms = wait_ms > 0 ? wait_ms : 5000;
    // The environment as it is now (proxy and CA settings for the sender's HTTP client): copied,
    // since setenv() on another thread may change environ's array while a crash reads it.
    size_t used = 0;
    int count = 0;
    for (char **variable = environ; variable && *variable && count < CCR_SENDER_ENV_MAX; variable++) {
        size_t length = strlen(*variable) + 1;
        if (used + length > sizeof ccr_sender.env_bytes) break;
        memcpy(ccr_sender.env_bytes + used, *variable, length);
        ccr_sender.envp[count++] = ccr_sender.env_bytes + used;
        used += length;
    }
    ccr_sender.envp[count] = NULL;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ccr_sender.enabled = 1;
    return 0;
}
