// zlib for gzip'ing upload bodies (the system's libz, which libdw and libcurl already load).
#include <zlib.h>
