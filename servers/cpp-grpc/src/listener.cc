#include "listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pbserver {

Listener::~Listener() { Stop(); }

bool Listener::Bind(const std::string& addr, std::string* err) {
  const size_t colon = addr.rfind(':');
  std::string host = addr.substr(0, colon), port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  struct addrinfo hints = {}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    *err = "PROTOBENCH_GRPC_ADDR=" + addr + ": cannot resolve the host: " + gai_strerror(rc);
    return false;
  }
  // The first address the host resolves to: only the address given is bound.
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
            // Inherited by accepted sockets, as grpc's own listener does.
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 &&
            bind(fd, res->ai_addr, res->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0;
  freeaddrinfo(res);
  if (!ok) {
    *err = "PROTOBENCH_GRPC_ADDR=" + addr + ": cannot listen: " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return false;
  }
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  char ip[INET6_ADDRSTRLEN] = "", serv[16] = "";
  if (getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len) != 0 ||
      getnameinfo(reinterpret_cast<struct sockaddr*>(&ss), len, ip, sizeof ip, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    *err = "PROTOBENCH_GRPC_ADDR=" + addr + ": cannot read the bound address";
    close(fd);
    return false;
  }
  addr_ = (ss.ss_family == AF_INET6 ? "[" + std::string(ip) + "]" : std::string(ip)) + ":" + serv;
  fd_ = fd;
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    *err = std::string("cannot create an eventfd: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void Listener::Start(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  thread_ = std::thread([this, acceptor] { Loop(acceptor); });
}

void Listener::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    while (write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  if (fd_ >= 0) close(fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  fd_ = stop_fd_ = -1;
}

void Listener::Loop(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  const int backoff_ms = static_cast<int>(kAcceptBackoff.count());
  struct pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno != EINTR) poll(&fds[1], 1, backoff_ms);
      continue;
    }
    if (fds[1].revents != 0) return;
    // Accept everything queued, then wait again.
    for (;;) {
      int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
        p.listener_fd = fd_;
        p.fd = fd;
        acceptor->HandleNewConnection(&p);  // grpc owns fd from here
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM, ...: the connection waits in the
      // backlog; sleep (waking early only to stop), then retry.
      if (poll(&fds[1], 1, backoff_ms) > 0) return;
      break;
    }
  }
}

}  // namespace pbserver
