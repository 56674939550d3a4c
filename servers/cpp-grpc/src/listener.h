// The listening socket and its accept loop. grpc 1.51's own listener stops
// accepting for good after accept() fails with EMFILE/ENFILE (grpc issue
// 20418; later versions retry), so the server binds the address itself and
// hands every accepted connection to grpc through grpc++'s external
// connection acceptor; when accept() fails for lack of descriptors (or any
// other reason) the loop sleeps 50 ms and retries.
#ifndef PROTOBENCH_CPP_GRPC_LISTENER_H_
#define PROTOBENCH_CPP_GRPC_LISTENER_H_

#include <chrono>
#include <string>
#include <thread>

#include <grpcpp/server_builder.h>

namespace pbserver {

// How long the accept loop waits after a failed accept() before retrying.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(50);

class Listener {
 public:
  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener();

  // Binds and listens on host:port (port 0 = any free port). False with
  // *err on failure.
  bool Bind(const std::string& addr, std::string* err);

  // The bound address as ip:port ([ip]:port for IPv6).
  const std::string& addr() const { return addr_; }

  // Starts the accept loop, handing connections to acceptor (which must
  // outlive Stop()).
  void Start(grpc::experimental::ExternalConnectionAcceptor* acceptor);

  // Stops the accept loop and closes the listening socket: new connections
  // are refused from here on.
  void Stop();

 private:
  void Loop(grpc::experimental::ExternalConnectionAcceptor* acceptor);

  int fd_ = -1;
  int stop_fd_ = -1;  // eventfd that wakes and ends the loop
  std::string addr_;
  std::thread thread_;
};

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_LISTENER_H_
