// The system's SQLite (libsqlite3-dev), imported into Swift by the CSQLite module.
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import:
// bind calls pass this instead so SQLite copies the bytes before the Swift buffer goes away.
static inline sqlite3_destructor_type csqlite_transient(void) { return (sqlite3_destructor_type)-1; }
