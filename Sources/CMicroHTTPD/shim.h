// libmicrohttpd (LGPL-2.1+), the console's HTTP server (docs/console.md). Its start and information
// calls are variadic, which Swift cannot call: these inline functions make the calls the console needs.
#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

/// Starts a daemon on `address` (loopback: the caller checks), one thread per connection (a
/// server-sent-event stream blocks its thread while it waits for a change), at most 64 connections,
/// idle ones closed after 60 s (a stream sends a comment every 15 s, so it is never idle).
static inline struct MHD_Daemon *livedefaults_mhd_start(
    const struct sockaddr *address, int isIPv6, MHD_AccessHandlerCallback handler, void *context,
    MHD_RequestCompletedCallback completed) {
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (isIPv6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, context, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_NOTIFY_COMPLETED,
        completed, context, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)60, MHD_OPTION_END);
}

/// The port the daemon listens on (the one the system chose for port 0), 0 when unknown.
static inline uint16_t livedefaults_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
