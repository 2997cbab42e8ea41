// The crash-time sender's settings (see ccr_sender.h).
#include "ccr_sender.h"

ccr_sender_state ccr_sender;
