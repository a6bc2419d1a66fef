// Finding out whether an HTTP client has gone away while its request is still being worked on.
// cpp-httplib 0.11 does not hand the socket to a handler, so the connection's descriptor is
// looked up by its address pair (local and peer address:port, unique per TCP connection) among
// this process's sockets; then a non-blocking poll tells whether the peer has closed it.
// Linux-specific (/proc/self/fd, POLLRDHUP).
#pragma once

#include <string>

namespace ringlm::server {

// The descriptor of the accepted connection local_addr:local_port <-> remote_addr:remote_port,
// or -1 if none is found. The descriptor stays valid while the request is being handled.
int find_connection_fd(const std::string& local_addr, int local_port, const std::string& remote_addr,
                       int remote_port);

// Tells find_connection_fd which descriptor this thread is serving (it is still checked
// against the address pair), so that the /proc scan is not needed.
void note_connection_fd(int fd);

// True if the peer has closed or reset the connection (data waiting to be read is not a close).
bool peer_closed(int fd);

}  // namespace ringlm::server
