// Whether the client of a waiting request has gone. cpp-httplib 0.11 (Debian 12) gives a handler
// no access to its connection, so the server finds the connection's socket by its address pair
// (Linux: the process's socket descriptors, matched with getpeername / getsockname) and polls it
// for the peer's hang-up while it waits for a line.
#pragma once

#include <string>

namespace quill::serve {

// -1 when no socket of this process has this remote and local address.
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);
// The peer closed or reset the connection (POLLRDHUP / POLLHUP / POLLERR); never blocks.
bool peer_hung_up(int fd);

}  // namespace quill::serve
