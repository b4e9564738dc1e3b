// libpq (Debian's libpq-dev) for the Postgres module. Nothing here leaves that module.
// libpq has no variadic entry points; the shims name what Swift cannot: the diagnostic
// fields are character macros (PG_DIAG_*), and the binary formats of results and
// parameters are plain ints libpq documents as 0 (text) and 1 (binary).
#ifndef CPOSTGRES_SHIM_H
#define CPOSTGRES_SHIM_H

#include <libpq-fe.h>

/// The SQLSTATE of an error result (five characters), or NULL.
static inline const char *pq_shim_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

/// The primary message of an error result, without libpq's "ERROR:  " prefix, or NULL.
static inline const char *pq_shim_primary_message(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

/// The detail line of an error result (which key a unique violation hit), or NULL.
static inline const char *pq_shim_detail(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL);
}

/// Quiets libpq's default notice processor (it prints NOTICEs to stderr, e.g. for
/// `CREATE TABLE IF NOT EXISTS` on an existing table).
static void pq_shim_ignore_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void pq_shim_quiet_notices(PGconn *connection) {
    PQsetNoticeProcessor(connection, pq_shim_ignore_notice, NULL);
}

#endif
