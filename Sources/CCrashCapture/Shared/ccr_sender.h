// Delivery at crash time (opt-in, Docs/Decisions/0028): what the handler needs to start the
// crash-sender program once the record is durable. Filled by ccr_sender_configure (Setup/) before
// a crash can use it; read lock-free by the handler.
#ifndef CCR_SENDER_H
#define CCR_SENDER_H

#include "ccr_state.h"

#define CCR_SENDER_ENV_MAX 256
#define CCR_SENDER_ENV_BYTES 32768

typedef struct ccr_sender_state {
    int enabled;
    int wait_ms;                           // how long the crashed process waits for the sender
    char path[CCR_PATH_MAX];               // the crash-sender executable
    char config[CCR_PATH_MAX];             // its configuration file, written by start()
    char env_bytes[CCR_SENDER_ENV_BYTES];  // the environment at configure time, copied
    char *envp[CCR_SENDER_ENV_MAX + 1];
} ccr_sender_state;

extern ccr_sender_state ccr_sender;

#endif
