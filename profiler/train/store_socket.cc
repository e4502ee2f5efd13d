#include "profiler/train/store_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "profiler/base/errors.h"

namespace memprof {

// Note [Store socket]
// c10d's TCPStore, left to itself, listens on every interface and finds a
// taken port only after logging about it. memprof opens the listening
// socket itself and hands it to the store (TCPStoreOptions::masterListenFd):
// - a local job (`--world-size N`, or one rank) listens on 127.0.0.1 only,
//   at a port the kernel picks: the launcher opens the socket before it
//   forks and rank 0 inherits it (MEMPROF_STORE_FD), so no other process
//   can take the port between choosing and listening;
// - rank 0 of a job from torchrun, srun or mpirun listens on every
//   interface at MASTER_PORT (its peers are on other machines); a taken
//   port is a clear error (exit 2) before anything else runs.
StoreSocket ListenForStore(const std::string& address, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error("cannot listen on '" + address +
                             "': not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  }
  // As TCPStore does: a port in TIME_WAIT from an earlier run is free.
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  socklen_t length = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const int error = errno;
    ::close(fd);
    const std::string where = address + ":" + std::to_string(port);
    if (error == EADDRINUSE) throw PortBusy(where + " is in use");
    throw std::runtime_error("cannot listen on " + where + ": " +
                             std::strerror(error));
  }
  return {fd, ntohs(addr.sin_port)};
}

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost";
}

// Note [Gloo address]
// Each rank's Gloo device listens on one address, which every peer must be
// able to reach. Gloo's default is the address this host's name resolves
// to, which inside a container or a network namespace is often one no
// peer can reach. memprof asks the kernel instead which local address it
// would send from to reach MASTER_ADDR (a UDP socket connected there sends
// nothing): a local job gets 127.0.0.1, a rank on another machine the
// address of the interface that faces rank 0. GLOO_SOCKET_IFNAME, when set,
// still wins (ddp_engine.cc).
namespace {

// The IPv4 addresses of `host`; the caller frees them.
addrinfo* Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  if (resolved != 0) {
    throw InputError("MASTER_ADDR=" + host + " does not resolve (" +
                     ::gai_strerror(resolved) +
                     "); export the IPv4 address or host name of rank 0's "
                     "machine");
  }
  return found;
}

}  // namespace

void RequireResolvable(const std::string& host) {
  ::freeaddrinfo(Resolve(host));
}

std::string LocalAddressTowards(const std::string& host) {
  addrinfo* found = Resolve(host);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t length = sizeof local;
  const bool ok =
      fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  const int error = errno;
  ::freeaddrinfo(found);
  if (fd >= 0) ::close(fd);
  if (!ok) {
    throw std::runtime_error("MASTER_ADDR=" + host +
                             ": no route from this host (" +
                             std::strerror(error) + ")");
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

}  // namespace memprof
