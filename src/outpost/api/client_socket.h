// FindClientSocket — the socket of the HTTP connection a request came on.
//
// cpp-httplib 0.11 (Debian's) does not hand its handlers the connection's
// socket, and its per-connection entry point is private. A request's
// addresses identify the connection, so this looks the socket up among the
// process's open sockets (/proc/self/fd): about one getpeername per open
// socket, done once per locally answered request, off the engine thread. The
// descriptor stays this connection's while its worker is in the handler.
#pragma once

#include <string>

namespace outpost::api {

// The connected socket whose peer is remote_addr:remote_port and whose local
// port is local_port, or -1.
int FindClientSocket(const std::string& remote_addr, int remote_port, int local_port);

}  // namespace outpost::api
