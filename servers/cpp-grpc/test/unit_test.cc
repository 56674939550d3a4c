// Unit tests of the server's own code: configuration parsing, the failure
// draw, UTF-8 reversal, the contract's files, the dataset loader and the
// streaming rules (limits, schedule, feed, poll pages, upload summary). Prints
// one line per failed check and `check: N passed, M failed`; exits 1 on any
// failure.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "config.h"
#include "feed.h"
#include "ops.h"

namespace {

using namespace pbserver;

int g_passed = 0, g_failed = 0;

#define CHECK(cond, what)                                                \
  do {                                                                   \
    if (cond) {                                                          \
      g_passed++;                                                        \
    } else {                                                             \
      g_failed++;                                                        \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, std::string(what).c_str()); \
    }                                                                    \
  } while (0)

// Parses a configuration from the given variables (plus a grpc address
// unless the map sets one).
bool Parse(std::map<std::string, std::string> vars, Config* cfg, std::string* err) {
  if (vars.count("PROTOBENCH_GRPC_ADDR") == 0) vars["PROTOBENCH_GRPC_ADDR"] = "127.0.0.1:0";
  Env env = [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return ParseConfig(env, 3, cfg, err);
}

void TestDefaults() {
  Config c;
  std::string err;
  CHECK(Parse({}, &c, &err), err);
  CHECK(c.grpc_addr == "127.0.0.1:0", c.grpc_addr);
  CHECK(c.workers == 3, "workers default to the CPUs given");
  CHECK(!c.tls(), "no TLS by default");
  CHECK(c.failure_rate == 0 && c.failure_seed == 1, "failure defaults");
  CHECK(c.service_kind == ServiceKind::kNone, "no service time by default");
  CHECK(c.max_request_bytes == 8388608, "max request bytes default");
  CHECK(c.idle_timeout == std::chrono::seconds(60), "idle timeout default 60s");
  CHECK(c.max_streams == 1000, "max streams default 1000");
  CHECK(AvailableCpus() >= 1, "at least one CPU");
}

void TestValues() {
  Config c;
  std::string err;
  CHECK(Parse({{"PROTOBENCH_WORKERS", "4"},
               {"PROTOBENCH_FAILURE_RATE", "0.25"},
               {"PROTOBENCH_FAILURE_SEED", "18446744073709551615"},
               {"PROTOBENCH_SERVICE_TIME", "spin:250us"},
               {"PROTOBENCH_MAX_REQUEST_BYTES", "99999999999"},
               {"PROTOBENCH_IDLE_TIMEOUT", "1500ms"},
               {"PROTOBENCH_READ_TIMEOUT", "5s"},
               {"PROTOBENCH_MAX_STREAMS", "7"},
               {"PROTOBENCH_TLS_CERT", "c.pem"},
               {"PROTOBENCH_TLS_KEY", "k.pem"},
               {"PROTOBENCH_DATASET", "/d.json"},
               {"PROTOBENCH_GRPC_ADDR", "[::1]:8080"}},
              &c, &err),
        err);
  CHECK(c.workers == 4, "workers");
  CHECK(c.failure_rate == 0.25, "rate");
  CHECK(c.failure_seed == 18446744073709551615ULL, "seed up to 2^64-1");
  CHECK(c.service_kind == ServiceKind::kSpin && c.service_time == std::chrono::microseconds(250), "spin:250us");
  CHECK(c.max_request_bytes == 2147483647, "max request bytes capped at INT_MAX");
  CHECK(c.idle_timeout == std::chrono::milliseconds(1500), "idle 1500ms");
  CHECK(c.max_streams == 7, "max streams");
  CHECK(c.tls() && c.tls_cert == "c.pem" && c.tls_key == "k.pem", "tls");
  CHECK(c.dataset_path == "/d.json", "dataset");
  CHECK(Parse({{"PROTOBENCH_SERVICE_TIME", "sleep:2s"}}, &c, &err) && c.service_kind == ServiceKind::kSleep &&
            c.service_time == std::chrono::seconds(2),
        "sleep:2s");
  CHECK(Parse({{"PROTOBENCH_FAILURE_RATE", "1"}}, &c, &err) && c.failure_rate == 1, "rate 1");
  CHECK(Parse({{"PROTOBENCH_FAILURE_RATE", "0"}}, &c, &err) && c.failure_rate == 0, "rate 0");
  CHECK(Parse({{"PROTOBENCH_WORKERS", ""}}, &c, &err) && c.workers == 3, "empty = unset");
  CHECK(Parse({{"PROTOBENCH_GRPC_ADDR", "localhost:50051"}}, &c, &err), "host name address");
}

void TestBadValues() {
  // Each bad value is refused with a message naming its variable.
  const std::pair<const char*, const char*> bad[] = {
      {"PROTOBENCH_WORKERS", "0"},
      {"PROTOBENCH_WORKERS", "-1"},
      {"PROTOBENCH_WORKERS", "two"},
      {"PROTOBENCH_WORKERS", "2x"},
      {"PROTOBENCH_WORKERS", "1025"},
      {"PROTOBENCH_FAILURE_RATE", "2"},
      {"PROTOBENCH_FAILURE_RATE", "-0.1"},
      {"PROTOBENCH_FAILURE_RATE", "nan"},
      {"PROTOBENCH_FAILURE_RATE", "inf"},
      {"PROTOBENCH_FAILURE_RATE", "0.2x"},
      {"PROTOBENCH_FAILURE_RATE", " 0.2"},
      {"PROTOBENCH_FAILURE_SEED", "-1"},
      {"PROTOBENCH_FAILURE_SEED", "18446744073709551616"},
      {"PROTOBENCH_FAILURE_SEED", "1.5"},
      {"PROTOBENCH_SERVICE_TIME", "nap:1ms"},
      {"PROTOBENCH_SERVICE_TIME", "sleep"},
      {"PROTOBENCH_SERVICE_TIME", "sleep:"},
      {"PROTOBENCH_SERVICE_TIME", "sleep:5"},
      {"PROTOBENCH_SERVICE_TIME", "sleep:1m"},
      {"PROTOBENCH_SERVICE_TIME", "sleep:1.5ms"},
      {"PROTOBENCH_SERVICE_TIME", "sleep:-1ms"},
      {"PROTOBENCH_SERVICE_TIME", "spin:ms"},
      {"PROTOBENCH_SERVICE_TIME", "spin:99999999999999999999s"},
      {"PROTOBENCH_MAX_REQUEST_BYTES", "0"},
      {"PROTOBENCH_MAX_REQUEST_BYTES", "x"},
      {"PROTOBENCH_MAX_REQUEST_BYTES", "1e6"},
      {"PROTOBENCH_IDLE_TIMEOUT", "0s"},
      {"PROTOBENCH_IDLE_TIMEOUT", "500us"},
      {"PROTOBENCH_IDLE_TIMEOUT", "60"},
      {"PROTOBENCH_IDLE_TIMEOUT", "1h"},
      {"PROTOBENCH_IDLE_TIMEOUT", "3000000s"},
      {"PROTOBENCH_READ_TIMEOUT", "soon"},
      {"PROTOBENCH_READ_TIMEOUT", "0s"},
      {"PROTOBENCH_MAX_STREAMS", "0"},
      {"PROTOBENCH_MAX_STREAMS", "2147483648"},
      {"PROTOBENCH_MAX_STREAMS", "many"},
      {"PROTOBENCH_GRPC_ADDR", "127.0.0.1"},
      {"PROTOBENCH_GRPC_ADDR", "127.0.0.1:65536"},
      {"PROTOBENCH_GRPC_ADDR", "127.0.0.1:http"},
      {"PROTOBENCH_GRPC_ADDR", ":8080"},
      {"PROTOBENCH_GRPC_ADDR", "::1:8080"},
      {"PROTOBENCH_REST_ADDR", "127.0.0.1:0"},
      {"PROTOBENCH_SOAP_ADDR", "127.0.0.1:0"},
      {"PROTOBENCH_REST_H2_ADDR", "127.0.0.1:0"},
  };
  for (const auto& [name, value] : bad) {
    Config c;
    std::string err;
    bool ok = Parse({{name, value}}, &c, &err);
    CHECK(!ok, std::string("accepted ") + name + "=" + value);
    CHECK(err.find(name) != std::string::npos, std::string("message for ") + name + "=" + value + " is: " + err);
  }
  Config c;
  std::string err;
  CHECK(!Parse({{"PROTOBENCH_TLS_CERT", "c.pem"}}, &c, &err) && err.find("PROTOBENCH_TLS_KEY") != std::string::npos,
        "cert without key refused: " + err);
  Env none = [](const char*) -> const char* { return nullptr; };
  CHECK(!ParseConfig(none, 1, &c, &err) && err.find("PROTOBENCH_GRPC_ADDR") != std::string::npos,
        "no grpc address refused: " + err);
}

void TestDuration() {
  std::chrono::nanoseconds d;
  CHECK(ParseDuration("200ns", &d) && d.count() == 200, "200ns");
  CHECK(ParseDuration("10us", &d) && d == std::chrono::microseconds(10), "10us");
  CHECK(ParseDuration("50ms", &d) && d == std::chrono::milliseconds(50), "50ms");
  CHECK(ParseDuration("60s", &d) && d == std::chrono::seconds(60), "60s");
  CHECK(ParseDuration("0ms", &d) && d.count() == 0, "0ms");
  for (const char* bad : {"", "s", "5", "5m", "5h", "5 ms", "+5ms", "5.0ms", "5msx", "9223372037s"}) {
    CHECK(!ParseDuration(bad, &d), std::string("accepted duration ") + bad);
  }
}

void TestDraw() {
  // The reference SplitMix64 generator seeded with 0 outputs splitmix64(0),
  // splitmix64(0x9E3779B97F4A7C15), splitmix64(2 * 0x9E3779B97F4A7C15), ...
  const uint64_t want[] = {0xe220a8397b1dcdafULL, 0x6e789e6aa1b965f4ULL, 0x06c45d188009454fULL};
  uint64_t x = 0;
  for (uint64_t w : want) {
    CHECK(Splitmix64(x) == w, "splitmix64 reference output");
    x += 0x9E3779B97F4A7C15ULL;
  }
  CHECK(Splitmix64(1) == 0x910a2dec89025cc1ULL, "splitmix64(1)");
  // Fails is exactly "top 53 bits < rate * 2^53" (both sides exact).
  int n = 0, mismatches = 0;
  for (uint64_t k = 0; k < 100000; k++) {
    bool f = Fails(20240601, k, 0.2);
    n += f;
    double top = static_cast<double>(Splitmix64(20240601 + k) >> 11);
    mismatches += f != (top < std::ldexp(0.2, 53));
  }
  CHECK(mismatches == 0, "Fails matches the 53-bit formula");
  CHECK(n > 19500 && n < 20500, "about 20% fail at 0.2: " + std::to_string(n));
  // Wrapping seed + k.
  CHECK(Fails(UINT64_MAX, 1, 1) && Fails(UINT64_MAX, 1, 0.5) == (Splitmix64(0) >> 63 == 0), "seed + k wraps");
  bool never = true, always = true;
  for (uint64_t k = 0; k < 1000; k++) {
    never = never && !Fails(7, k, 0);
    always = always && Fails(7, k, 1);
  }
  CHECK(never && always, "rate 0 never fails, rate 1 always");
}

void TestReverse() {
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"abc", "cba"},
      {"a\xc3\xb1\xf0\x9f\x98\x80z", "z\xf0\x9f\x98\x80\xc3\xb1" "a"},  // añ😀z
      {"\xc3\x86r\xc3\xb8sk\xc3\xb8" "bing", "gnib\xc3\xb8ks\xc3\xb8r\xc3\x86"},  // Ærøskøbing
      {"\xe2\x82\xac\xe2\x82\xac!", "!\xe2\x82\xac\xe2\x82\xac"},
  };
  for (const auto& [in, want] : cases) CHECK(ReverseUtf8(in) == want, "reverse of " + in);
  // Reversing twice is the identity, also for long input.
  std::string s;
  for (int i = 0; i < 10000; i++) s += (i % 3 == 0) ? "\xc3\xa9" : (i % 3 == 1) ? "x" : "\xf0\x9f\x98\x80";
  CHECK(ReverseUtf8(ReverseUtf8(s)) == s, "reverse twice is identity");
}

void TestFilesAndData(const char* dataset) {
  std::string f = MakeFile(455000);
  CHECK(f.size() == 455000, "file size");
  bool ok = true;
  for (size_t i = 0; i < f.size(); i++) ok = ok && static_cast<unsigned char>(f[i]) == (i * 131 + 7) % 251;
  CHECK(ok, "file bytes (i*131+7) mod 251");

  Data d;
  std::string err;
  CHECK(d.Load(dataset, &err), err);
  CHECK(d.devices.devices_size() == 480, "480 devices");
  CHECK(d.items.items_size() == 1395, "1395 items");
  CHECK(d.people.people_size() == 16, "16 people");
  CHECK(d.inventory.active_device_count() == 480, "inventory status");
  CHECK(d.integers.values_size() == 10000 && d.integers.values(9999) == 9999, "integers 0..9999");
  CHECK(d.File("file-455k") != nullptr && d.File("file-455k")->content().size() == 455000, "file-455k");
  CHECK(d.File("file-3m4") != nullptr && d.File("file-3m4")->content().size() == 3400000, "file-3m4");
  CHECK(d.File("nope") == nullptr && d.File("") == nullptr, "unknown file");
  Data bad;
  CHECK(!bad.Load("/nonexistent/dataset.json", &err), "missing dataset refused");
}


void TestFeed(const char* dataset) {
  pb::SubscribeRequest sub;
  sub.set_count(1);
  CHECK(CheckSubscribe(sub).empty(), "count 1 accepted");
  sub.set_count(1000000);
  sub.set_items(1395);
  sub.set_rate(1000000);
  CHECK(CheckSubscribe(sub).empty(), "the upper bounds accepted");
  sub.set_count(0);
  CHECK(CheckSubscribe(sub) == "count is 0, expected 1..=1000000", CheckSubscribe(sub));
  sub.set_count(4000000000u);
  CHECK(CheckSubscribe(sub) == "count is 4000000000, expected 1..=1000000", CheckSubscribe(sub));
  sub.set_count(1);
  sub.set_items(1396);
  CHECK(CheckSubscribe(sub) == "items is 1396, expected 0..=1395", CheckSubscribe(sub));
  sub.set_items(0);
  sub.set_rate(1000001);
  CHECK(CheckSubscribe(sub) == "rate is 1000001, expected 0 (as fast as possible) ..=1000000", CheckSubscribe(sub));

  pb::PollRequest poll;
  poll.set_count(10);
  poll.set_max(1000);
  CHECK(CheckPoll(poll).empty(), "a rate-0 poll needs no start");
  poll.set_max(0);
  CHECK(CheckPoll(poll) == "max is 0, expected 1..=1000", CheckPoll(poll));
  poll.set_max(1);
  poll.set_after(11);
  CHECK(CheckPoll(poll) == "after is 11, beyond the feed's count 10", CheckPoll(poll));
  poll.set_after(10);
  CHECK(CheckPoll(poll).empty(), "after = count accepted");
  poll.set_rate(1);
  CHECK(CheckPoll(poll).find("startNs is 0") == 0, CheckPoll(poll));
  poll.set_start_ns(-5);
  poll.set_rate(0);
  CHECK(CheckPoll(poll).find("startNs is -5") == 0, CheckPoll(poll));

  CHECK(OffsetNs(1, 1000) == 0 && OffsetNs(5, 0) == 0, "event 1 and rate 0 are due at once");
  CHECK(OffsetNs(2, 3) == 333333333, "floor(1e9 / 3)");
  CHECK(OffsetNs(1000000, 1) == 999999LL * 1000000000LL, "the largest offset, exact");
  CHECK(OffsetNs(1000000, 7) == 999999LL * 1000000000LL / 7, "floor in 64-bit integers");

  Data d;
  std::string err;
  CHECK(d.Load(dataset, &err), err);
  pb::FeedEvent e;
  FillEvent(d, 2, 700, 42, &e);
  CHECK(e.seq() == 2 && e.scheduled_ns() == 42 && e.items_size() == 700, "event 2 of 700 items");
  // Items (2 - 1) * 700 + j mod 1395: j = 0 is item 700, j = 695 item 0, j = 699 item 4.
  CHECK(e.items(0).id() == d.items.items(700).id() && e.items(695).id() == d.items.items(0).id() &&
            e.items(699).id() == d.items.items(4).id(),
        "the feed's items wrap mod 1395");
  FillEvent(d, 3, 700, 42, &e);
  CHECK(e.items(0).id() == d.items.items(5).id(), "event 3 starts at item 1400 mod 1395 = 5");
  FillEvent(d, 1, 0, 7, &e);
  CHECK(e.seq() == 1 && e.items_size() == 0, "an event of no items (a reused message is cleared)");

  pb::FeedPage page;
  poll.Clear();
  poll.set_count(4);
  poll.set_items(1);
  poll.set_rate(10);  // every 100 ms
  poll.set_start_ns(1000000000);
  poll.set_max(10);
  FillPage(d, poll, 1000000000 + 150000000, &page);  // events 1 and 2 are due
  CHECK(page.events_size() == 2 && page.events(1).seq() == 2 && page.events(1).scheduled_ns() == 1100000000 &&
            !page.done(),
        "a page holds the due events only");
  poll.set_after(2);
  FillPage(d, poll, 2000000000, &page);
  CHECK(page.events_size() == 2 && page.events(0).seq() == 3 && page.done(), "the last page is done");
  poll.set_after(4);
  FillPage(d, poll, 2000000000, &page);
  CHECK(page.events_size() == 0 && page.done(), "a poll after the end is done");
  poll.Clear();
  poll.set_count(100);
  poll.set_items(1395);
  poll.set_max(1000);
  FillPage(d, poll, 5, &page);
  CHECK(page.events_size() == 11 && page.events(0).scheduled_ns() == 5, "16384 items: 11 events of 1395, stamped now");
  poll.set_items(1395);
  poll.set_max(3);
  FillPage(d, poll, 5, &page);
  CHECK(page.events_size() == 3, "max bounds a page");

  CHECK(Fnv1a32(kFnvOffset, "") == 0x811c9dc5u && Fnv1a32(kFnvOffset, "a") == 0xe40c292cu &&
            Fnv1a32(kFnvOffset, "foobar") == 0xbf9cf968u,
        "FNV-1a 32 reference values");
  CHECK(Fnv1a32(Fnv1a32(kFnvOffset, "foo"), "bar") == 0xbf9cf968u, "FNV-1a continues across payloads");
  Tally t;
  CHECK(t.Add("foo") && t.Add("bar") && t.Add(""), "three payloads");
  pb::UploadSummary s = t.Summary();
  CHECK(s.count() == 3 && s.bytes() == 6 && s.checksum() == 0xbf9cf968u, s.ShortDebugString());
  Tally full;
  bool all = true;
  for (uint32_t i = 0; i < kMaxStreamMessages; i++) all = full.Add("") && all;
  CHECK(all && !full.Add("x") && full.Summary().count() == 1000000 && full.Summary().bytes() == 0,
        "the 1000001st message is refused and not counted");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: unit_test DATASET_JSON\n");
    return 2;
  }
  TestDefaults();
  TestValues();
  TestBadValues();
  TestDuration();
  TestDraw();
  TestReverse();
  TestFilesAndData(argv[1]);
  TestFeed(argv[1]);
  std::printf("check: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
