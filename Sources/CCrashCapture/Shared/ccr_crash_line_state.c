// The crash line's switch (see ccr_crash_line.h).
#include "CCrashCapture.h"
#include "ccr_crash_line.h"

int ccr_crash_line_fd = -1;

void ccr_set_crash_line_fd(int fd) {
    ccr_crash_line_fd = fd;
}
