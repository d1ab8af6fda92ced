#include "serve/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace quill::serve {

namespace {
bool address_of(const sockaddr_storage& ss, std::string* addr, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  *addr = buf;
  return true;
}
}  // namespace

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end) continue;
    struct stat st;
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, local{};
    socklen_t pl = sizeof(peer), ll = sizeof(local);
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    std::string pa, la;
    int pp = 0, lp = 0;
    if (!address_of(peer, &pa, &pp) || !address_of(local, &la, &lp)) continue;
    if (pp == remote_port && lp == local_port && pa == remote_addr) {
      found = int(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool peer_hung_up(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace quill::serve
