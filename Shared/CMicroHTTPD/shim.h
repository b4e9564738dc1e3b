// Fixed-arity wrappers around libmicrohttpd's variadic entry points, which Swift
// cannot call directly. Nothing here leaves the MicroHTTP module.
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

#include <string.h>

/// Leaves the URL and query arguments exactly as they arrived: MicroHTTP decodes them
/// itself so that encoded "/" and ".." are seen for what they are.
static size_t mhd_shim_no_unescape(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls; (void)connection;
    return strlen(s);
}

/// Starts a daemon bound to `address` (a sockaddr_in or sockaddr_in6 matching `flags`)
/// with a thread pool, per-connection memory limit (it bounds the request header size),
/// idle timeout, the access handler and the completion callback.
static inline struct MHD_Daemon *mhd_shim_start(unsigned int flags,
                                                const struct sockaddr *address,
                                                unsigned int thread_pool_size,
                                                size_t connection_memory_limit,
                                                unsigned int connection_timeout,
                                                unsigned int listen_backlog,
                                                MHD_AccessHandlerCallback access_handler,
                                                void *access_cls,
                                                MHD_RequestCompletedCallback completed,
                                                void *completed_cls,
                                                const char *tls_key_pem,
                                                const char *tls_cert_pem,
                                                const char *tls_priorities) {
    uint16_t port = 0;
    if (address->sa_family == AF_INET) {
        port = ntohs(((const struct sockaddr_in *)address)->sin_port);
    } else if (address->sa_family == AF_INET6) {
        port = ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    }
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, (void *)address },
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)thread_pool_size, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, (intptr_t)listen_backlog, NULL },
        // With MHD_USE_TLS: the PEM key and certificate chain (leaf first), copied by GnuTLS at start,
        // and the GnuTLS priority string (protocol versions, cipher suites, the server's order);
        // without a key the array ends here.
        { tls_key_pem != NULL ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, (void *)tls_key_pem },
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)tls_cert_pem },
        { tls_priorities != NULL ? MHD_OPTION_HTTPS_PRIORITIES : MHD_OPTION_END, 0, (void *)tls_priorities },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, NULL, NULL, access_handler, access_cls,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_UNESCAPE_CALLBACK, mhd_shim_no_unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_END);
}

/// Whether this libmicrohttpd was built with TLS (GnuTLS).
static inline int mhd_shim_supports_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/// The port the daemon is bound to (useful after binding port 0), or 0.
static inline uint16_t mhd_shim_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *mhd_shim_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

#endif
