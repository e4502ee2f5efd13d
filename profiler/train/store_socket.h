// The sockets of the rendezvous: the store's listening socket, opened by
// memprof rather than by c10d's TCPStore (Note [Store socket]), and the
// local address Gloo listens on (Note [Gloo address]).
#pragma once

#include <stdexcept>
#include <string>

namespace memprof {

// The rendezvous port is taken on this host.
class PortBusy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct StoreSocket {
  int fd = -1;  // listening; close-on-exec is off (the launcher hands it on)
  int port = 0;
};

// Listens on `address` (an IPv4 literal: "127.0.0.1" for a local job,
// "0.0.0.0" for peers on other machines) at `port`, or at a free port when
// `port` is 0. Throws PortBusy when the port is taken, std::runtime_error
// on any other failure.
StoreSocket ListenForStore(const std::string& address, int port);

// True for the loopback names a local job uses.
bool IsLoopback(const std::string& host);

// Throws InputError naming MASTER_ADDR=`host` when it does not resolve to
// an IPv4 address (bad input: exit 2, not a failed run).
void RequireResolvable(const std::string& host);

// The IPv4 address of this host's interface that routes to `host` (a name
// or an address): the address peers can reach this rank at. Throws
// InputError as RequireResolvable, and std::runtime_error naming `host`
// when it has no route.
std::string LocalAddressTowards(const std::string& host);

}  // namespace memprof
