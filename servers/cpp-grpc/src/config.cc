#include "config.h"

#include <sched.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace pbserver {
namespace {

constexpr int kMaxWorkers = 1024;

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A decimal integer in [lo, hi].
bool ParseInt(const std::string& s, long long lo, long long hi, long long* out) {
  if (!AllDigits(s)) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v > static_cast<unsigned long long>(LLONG_MAX)) return false;
  long long n = static_cast<long long>(v);
  if (n < lo || n > hi) return false;
  *out = n;
  return true;
}

std::string Bad(const char* name, const std::string& value, const char* want) {
  return std::string(name) + "=\"" + value + "\": " + want;
}

}  // namespace

bool ParseDuration(const std::string& s, std::chrono::nanoseconds* out) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
  const std::string num = s.substr(0, i), unit = s.substr(i);
  long long scale;
  if (unit == "ns") {
    scale = 1;
  } else if (unit == "us") {
    scale = 1000;
  } else if (unit == "ms") {
    scale = 1000 * 1000;
  } else if (unit == "s") {
    scale = 1000 * 1000 * 1000;
  } else {
    return false;
  }
  long long n;
  if (!ParseInt(num, 0, LLONG_MAX / scale, &n)) return false;
  *out = std::chrono::nanoseconds(n * scale);
  return true;
}

int AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

bool ParseConfig(const Env& env, int default_workers, Config* cfg, std::string* err) {
  // An empty value counts as unset, as in the other stacks.
  auto get = [&env](const char* name) -> std::string {
    const char* v = env(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  *cfg = Config();

  for (const char* other : {"PROTOBENCH_REST_ADDR", "PROTOBENCH_REST_H2_ADDR", "PROTOBENCH_SOAP_ADDR"}) {
    if (!get(other).empty()) {
      *err = std::string(other) + " is set, but this server serves only grpc (PROTOBENCH_GRPC_ADDR)";
      return false;
    }
  }
  cfg->grpc_addr = get("PROTOBENCH_GRPC_ADDR");
  if (cfg->grpc_addr.empty()) {
    *err = "PROTOBENCH_GRPC_ADDR is not set: nothing to serve (this server serves only grpc)";
    return false;
  }
  {
    // host:port or [v6]:port; the port a decimal 0..65535 (0 = any free port).
    const std::string& a = cfg->grpc_addr;
    size_t colon = a.rfind(':');
    long long port;
    bool ok = colon != std::string::npos && colon > 0 && ParseInt(a.substr(colon + 1), 0, 65535, &port);
    if (ok && a[0] == '[') ok = colon >= 3 && a[colon - 1] == ']';
    if (ok && a[0] != '[') ok = a.find(':') == colon;  // bare IPv6 needs brackets
    if (!ok) {
      *err = Bad("PROTOBENCH_GRPC_ADDR", a, "want host:port (IPv6 as [addr]:port), port 0..65535");
      return false;
    }
  }

  std::string v = get("PROTOBENCH_WORKERS");
  if (v.empty()) {
    cfg->workers = default_workers;
  } else {
    long long n;
    if (!ParseInt(v, 1, kMaxWorkers, &n)) {
      *err = Bad("PROTOBENCH_WORKERS", v, "want an integer in 1..1024");
      return false;
    }
    cfg->workers = static_cast<int>(n);
  }

  cfg->tls_cert = get("PROTOBENCH_TLS_CERT");
  cfg->tls_key = get("PROTOBENCH_TLS_KEY");
  if (cfg->tls_cert.empty() != cfg->tls_key.empty()) {
    *err = "PROTOBENCH_TLS_CERT and PROTOBENCH_TLS_KEY must be set together";
    return false;
  }

  v = get("PROTOBENCH_FAILURE_RATE");
  if (!v.empty()) {
    errno = 0;
    char* end = nullptr;
    double r = std::strtod(v.c_str(), &end);
    bool ok = (v[0] >= '0' && v[0] <= '9') || v[0] == '.';  // no sign, space, inf or nan
    if (!ok || errno != 0 || *end != '\0' || !std::isfinite(r) || r < 0 || r > 1) {
      *err = Bad("PROTOBENCH_FAILURE_RATE", v, "want a number in 0..1");
      return false;
    }
    cfg->failure_rate = r;
  }

  v = get("PROTOBENCH_FAILURE_SEED");
  if (!v.empty()) {
    errno = 0;
    char* end = nullptr;
    unsigned long long s = std::strtoull(v.c_str(), &end, 10);
    if (!AllDigits(v) || errno != 0 || *end != '\0') {
      *err = Bad("PROTOBENCH_FAILURE_SEED", v, "want an unsigned 64-bit integer");
      return false;
    }
    cfg->failure_seed = s;
  }

  v = get("PROTOBENCH_SERVICE_TIME");
  if (!v.empty()) {
    size_t colon = v.find(':');
    std::string kind = colon == std::string::npos ? v : v.substr(0, colon);
    bool ok = colon != std::string::npos && (kind == "sleep" || kind == "spin") &&
              ParseDuration(v.substr(colon + 1), &cfg->service_time);
    if (!ok) {
      *err = Bad("PROTOBENCH_SERVICE_TIME", v,
                 "want sleep:<duration> or spin:<duration>, a duration being an integer with ns, us, ms or s");
      return false;
    }
    cfg->service_kind = kind == "sleep" ? ServiceKind::kSleep : ServiceKind::kSpin;
  }

  v = get("PROTOBENCH_MAX_REQUEST_BYTES");
  if (!v.empty()) {
    // gRPC's receive limit is an int: larger values mean "up to INT_MAX".
    long long n;
    if (!ParseInt(v, 1, LLONG_MAX, &n)) {
      *err = Bad("PROTOBENCH_MAX_REQUEST_BYTES", v, "want a positive integer");
      return false;
    }
    cfg->max_request_bytes = n > INT_MAX ? INT_MAX : static_cast<int>(n);
  }

  v = get("PROTOBENCH_IDLE_TIMEOUT");
  if (!v.empty()) {
    // gRPC takes milliseconds as an int.
    std::chrono::nanoseconds d;
    if (!ParseDuration(v, &d) || d < std::chrono::milliseconds(1) || d > std::chrono::milliseconds(INT_MAX)) {
      *err = Bad("PROTOBENCH_IDLE_TIMEOUT", v,
                 "want a duration from 1ms to 2147483647ms: an integer with ns, us, ms or s");
      return false;
    }
    cfg->idle_timeout = d;
  }

  v = get("PROTOBENCH_READ_TIMEOUT");
  if (!v.empty()) {
    // HTTP/1.1 only: checked so that a bad value is refused as everywhere,
    // otherwise unused by this gRPC-only server.
    std::chrono::nanoseconds d;
    if (!ParseDuration(v, &d) || d.count() == 0) {
      *err = Bad("PROTOBENCH_READ_TIMEOUT", v, "want a positive duration: an integer with ns, us, ms or s");
      return false;
    }
  }

  v = get("PROTOBENCH_MAX_STREAMS");
  if (!v.empty()) {
    long long n;
    if (!ParseInt(v, 1, INT_MAX, &n)) {
      *err = Bad("PROTOBENCH_MAX_STREAMS", v, "want an integer in 1..2147483647");
      return false;
    }
    cfg->max_streams = static_cast<int>(n);
  }

  cfg->dataset_path = get("PROTOBENCH_DATASET");
  return true;
}

}  // namespace pbserver
