// The server's whole configuration, read only from the PROTOBENCH_*
// environment of contract/README.md (and the limits of issue 14).
#ifndef PROTOBENCH_CPP_GRPC_CONFIG_H_
#define PROTOBENCH_CPP_GRPC_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace pbserver {

enum class ServiceKind { kNone, kSleep, kSpin };

struct Config {
  std::string grpc_addr;  // host:port as given
  int workers = 0;        // completion-queue threads
  std::string tls_cert;   // paths; both set = TLS
  std::string tls_key;
  double failure_rate = 0;
  uint64_t failure_seed = 1;
  ServiceKind service_kind = ServiceKind::kNone;
  std::chrono::nanoseconds service_time{0};
  int max_request_bytes = 8 << 20;
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(60);
  int max_streams = 1000;
  std::string dataset_path;  // empty = search contract/data/dataset.json

  bool tls() const { return !tls_cert.empty(); }
};

// Looks up an environment variable; nullptr when unset.
using Env = std::function<const char*(const char*)>;

// Fills *cfg from env. On an invalid value returns false with *err naming
// the variable and what it accepts. default_workers is used when
// PROTOBENCH_WORKERS is unset.
bool ParseConfig(const Env& env, int default_workers, Config* cfg, std::string* err);

// `<integer><unit>` with unit ns, us, ms or s (PROTOBENCH_SERVICE_TIME's
// duration syntax); false if malformed or out of range.
bool ParseDuration(const std::string& s, std::chrono::nanoseconds* out);

// The CPUs this process may run on (its affinity mask), at least 1.
int AvailableCpus();

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_CONFIG_H_
