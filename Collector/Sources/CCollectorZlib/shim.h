// The system's zlib, to gunzip request bodies sent with Content-Encoding: gzip.
#include <zlib.h>
