// A grpc++ client that checks a running protobench gRPC server (used by
// test.sh) on what only this stack is checked on; every workload's vector is
// scripts/verify-servers.sh's (protobench verify, ghz). Prints `ok <name>` / `FAIL <name>: <why>` per check and
// `check: N passed, M failed` last; exits 1 on any failure.
//
//   check --target HOST:PORT [--ca CA.pem] MODE [ARGS]
//
// modes:
//   bad                    edge inputs the probe does not send (it owns the
//                          contract's status codes for bad input)
//   spin MS N              N concurrent calls take >= N x MS (one worker:
//                          spin holds the handling thread)
//   call                   one GetInteger call; prints its status
//   streams MAX_BYTES      protobench.v1.Streams: refused requests and
//                          messages (MAX_BYTES: the server's size limit),
//                          poll pages, the upload's summary, the schedule
//   streams-failure        with PROTOBENCH_FAILURE_RATE=1: every stream
//                          fails UNAVAILABLE before its first message
//   upload-many N          one upload of N one-byte messages; prints
//                          `status <code> "<message>" count <n>`
//   subscribe COUNT RATE   one subscription of COUNT events at RATE/s;
//                          prints `status <code> "<message>" events <n>`
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "helloworld/helloworld.grpc.pb.h"
#include "protobench/v1/protobench.grpc.pb.h"
#include "protobench/v1/stream.grpc.pb.h"

namespace {

namespace pb = ::protobench::v1;
using grpc::ByteBuffer;
using grpc::Status;
using grpc::StatusCode;

int g_passed = 0, g_failed = 0;

void Pass(const std::string& name) {
  g_passed++;
  std::printf("ok   %s\n", name.c_str());
}
void Fail(const std::string& name, const std::string& why) {
  g_failed++;
  std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
}
void Expect(bool cond, const std::string& name, const std::string& why) {
  if (cond) {
    Pass(name);
  } else {
    Fail(name, why);
  }
}

const char* CodeName(StatusCode c) {
  static const char* names[] = {"OK",       "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  int i = static_cast<int>(c);
  return i >= 0 && i <= 16 ? names[i] : "?";
}

std::string Describe(const Status& st) {
  return std::string(CodeName(st.error_code())) + " \"" + st.error_message() + "\"";
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return ByteBuffer(&slice, 1);
}

std::string FromBuffer(const ByteBuffer& bb) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!bb.Dump(&slices).ok()) return out;
  for (auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

class Client {
 public:
  Client(const std::string& target, const std::string& ca) {
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    if (!ca.empty()) {
      grpc::SslCredentialsOptions opts;
      ReadFile(ca, &opts.pem_root_certs);
      creds = grpc::SslCredentials(opts);
      args.SetSslTargetNameOverride("localhost");
    }
    channel_ = grpc::CreateCustomChannel(target, creds, args);
    generic_ = std::make_unique<grpc::GenericStub>(channel_);
  }

  std::shared_ptr<grpc::Channel> channel() { return channel_; }

  // One unary call with raw request bytes; the raw response in *resp.
  Status Raw(const std::string& method, const std::string& req, std::string* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::CompletionQueue cq;
    ByteBuffer in = ToBuffer(req), out;
    Status st;
    auto call = generic_->PrepareUnaryCall(&ctx, method, in, &cq);
    call->StartCall();
    call->Finish(&out, &st, reinterpret_cast<void*>(1));
    void* tag;
    bool ok;
    cq.Next(&tag, &ok);
    if (resp != nullptr) *resp = FromBuffer(out);
    return st;
  }

  // A call whose request stream carries reqs (then the client's end); the
  // responses' count in *responses.
  Status Stream(const std::string& method, const std::vector<std::string>& reqs, int* responses) {
    std::vector<std::string> got;
    Status st = Stream(method, reqs, &got);
    *responses = static_cast<int>(got.size());
    return st;
  }

  // The same, with the responses' bytes in *responses.
  Status Stream(const std::string& method, const std::vector<std::string>& reqs,
                std::vector<std::string>* responses) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::CompletionQueue cq;
    void* tag;
    bool ok;
    auto call = generic_->PrepareCall(&ctx, method, &cq);
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    for (const std::string& r : reqs) {
      if (!ok) break;
      ByteBuffer bb = ToBuffer(r);
      call->Write(bb, reinterpret_cast<void*>(2));
      cq.Next(&tag, &ok);
    }
    if (ok) {
      call->WritesDone(reinterpret_cast<void*>(3));
      cq.Next(&tag, &ok);
    }
    responses->clear();
    for (;;) {
      ByteBuffer out;
      call->Read(&out, reinterpret_cast<void*>(4));
      cq.Next(&tag, &ok);
      if (!ok) break;
      responses->push_back(FromBuffer(out));
    }
    Status st;
    call->Finish(&st, reinterpret_cast<void*>(5));
    cq.Next(&tag, &ok);
    return st;
  }

  Status GetInteger() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    pb::Empty req;
    pb::IntegerValue resp;
    Status st = pb::Bench::NewStub(channel_)->GetInteger(&ctx, req, &resp);
    if (st.ok() && resp.value() != 2147483647) return Status(StatusCode::DATA_LOSS, "wrong value");
    return st;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> generic_;
};

// ---- bad input

void ExpectCode(const Status& st, StatusCode want, const std::string& name, const std::string& want_msg = "") {
  bool ok = st.error_code() == want && (want_msg.empty() || st.error_message() == want_msg);
  Expect(ok, name, "got " + Describe(st) + ", want " + CodeName(want));
}

// The refusals (garbage, truncated and invalid UTF-8 messages, unknown
// methods, services and files, CloneText out of bounds) are the cross-stack
// probe's (contract/tests/probe.sh cpp-grpc, errors phase); these are the
// answers at the edges and the refusals it does not send.
void Bad(Client& c) {
  const std::string bench = "/protobench.v1.Bench/";
  ExpectCode(c.Raw(bench + "ModifyProduct", std::string("\x1a\x01\xff", 3), nullptr), StatusCode::INVALID_ARGUMENT,
             "invalid UTF-8 in ModifyProduct.description -> INVALID_ARGUMENT");
  pb::CloneRequest clone;
  clone.set_text(std::string(1024, 'x'));
  clone.set_times(65536);  // exactly 64 MiB: allowed (65537 is refused: the probe)
  std::string out;
  Status st = c.Raw(bench + "CloneText", clone.SerializeAsString(), &out);
  pb::CloneResponse cr;
  Expect(st.ok() && cr.ParseFromString(out) && cr.texts_size() == 65536 && cr.texts(65535) == clone.text(),
         "CloneText of exactly 64 MiB answered", Describe(st));
  clone.set_text("");
  clone.set_times(0);
  st = c.Raw(bench + "CloneText", clone.SerializeAsString(), &out);
  Expect(st.ok() && cr.ParseFromString(out) && cr.texts_size() == 0, "CloneText times 0 -> no texts", Describe(st));

  // ModifyProduct reverses by Unicode scalar values: 1-, 2-, 3- and 4-byte ones.
  pb::Product p;
  p.set_description("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z");  // a é € 😀 z
  st = c.Raw(bench + "ModifyProduct", p.SerializeAsString(), &out);
  pb::Product got;
  Expect(st.ok() && got.ParseFromString(out) && got.description() == "z\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9" "a",
         "ModifyProduct reverses scalar values", Describe(st) + " " + got.description());

  // SayHello without the message field answers without it.
  st = c.Raw("/helloworld.Greeter/SayHello", "", &out);
  helloworld::HelloReply hr;
  Expect(st.ok() && hr.ParseFromString(out) && !hr.has_response(), "SayHello of an empty request", Describe(st));

  // Unknown fields in a request are skipped, as protobuf does.
  pb::EchoMessage echo;
  echo.set_payload("x");
  std::string with_unknown = echo.SerializeAsString() + std::string("\x78\x01", 2);  // field 15 varint
  st = c.Raw(bench + "Echo", with_unknown, &out);
  Expect(st.ok() && echo.ParseFromString(out) && echo.payload() == "x", "unknown request field ignored",
         Describe(st));

  // A unary call's request stream with one message and with none (two: the
  // probe's grpc phase, a declared deviation of grpc 1.51.1).
  int responses = 0;
  echo.set_payload("one");
  std::string m1 = echo.SerializeAsString();
  st = c.Stream(bench + "Echo", {m1}, &responses);
  Expect(st.ok() && responses == 1, "the same call with one message is OK", Describe(st));
  st = c.Stream(bench + "Echo", {}, &responses);
  Expect(!st.ok(), "unary call with no request message is not OK", Describe(st));
  std::printf("     (no request message: %s)\n", Describe(st).c_str());
}

// ---- spin (the probe checks the service time itself)

double ConcurrentMs(Client& c, int n, int* errors) {
  std::vector<std::thread> ts;
  std::vector<Status> sts(n);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) ts.emplace_back([&c, &sts, i] { sts[i] = c.GetInteger(); });
  for (auto& t : ts) t.join();
  *errors = 0;
  for (auto& st : sts) *errors += st.ok() ? 0 : 1;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void Spin(Client& c, double ms, int n) {
  int errors;
  c.GetInteger();
  double t = ConcurrentMs(c, n, &errors);
  Expect(errors == 0 && t >= n * ms,
         "spin: " + std::to_string(n) + " concurrent calls take >= " + std::to_string(n * ms) +
             " ms (spin holds the one handling thread)",
         std::to_string(t) + " ms, " + std::to_string(errors) + " errors");
}

// ---- streams

const std::string kStreams = "/protobench.v1.Streams/";

std::string Msg(uint32_t seq, const std::string& payload) {
  pb::StreamMessage m;
  m.set_seq(seq);
  m.set_payload(payload);
  return m.SerializeAsString();
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One subscription read to its end: the events in *events, each one's
// arrival (wall clock, ns) in *arrivals.
Status Subscribe(Client& c, const pb::SubscribeRequest& req, std::vector<pb::FeedEvent>* events,
                 std::vector<int64_t>* arrivals = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = pb::Streams::NewStub(c.channel())->Subscribe(&ctx, req);
  pb::FeedEvent e;
  events->clear();
  while (reader->Read(&e)) {
    if (arrivals != nullptr) arrivals->push_back(WallNs());
    events->push_back(e);
  }
  return reader->Finish();
}

// Requests out of range are refused INVALID_ARGUMENT with a message naming
// the value and the range, before any event.
void StreamRefusals(Client& c) {
  struct Case {
    uint32_t count, items, rate;
    std::string want;
  };
  const Case subs[] = {
      {0, 0, 0, "count is 0, expected 1..=1000000"},
      {1000001, 0, 0, "count is 1000001, expected 1..=1000000"},
      {1, 1396, 0, "items is 1396, expected 0..=1395"},
      {1, 0, 1000001, "rate is 1000001, expected 0 (as fast as possible) ..=1000000"},
  };
  for (const Case& k : subs) {
    pb::SubscribeRequest req;
    req.set_count(k.count);
    req.set_items(k.items);
    req.set_rate(k.rate);
    std::vector<pb::FeedEvent> events;
    Status st = Subscribe(c, req, &events);
    ExpectCode(st, StatusCode::INVALID_ARGUMENT, "Subscribe " + k.want + " -> INVALID_ARGUMENT", k.want);
    Expect(events.empty(), "Subscribe refused before any event (" + k.want + ")",
           std::to_string(events.size()) + " events");
  }
  ExpectCode(c.Raw(kStreams + "Subscribe", std::string("\x08", 1), nullptr), StatusCode::INVALID_ARGUMENT,
             "Subscribe of a truncated request -> INVALID_ARGUMENT");
  struct PollCase {
    uint32_t count, rate, after, max;
    int64_t start_ns;
    std::string want;
  };
  const PollCase polls[] = {
      {0, 0, 0, 10, 0, "count is 0, expected 1..=1000000"},
      {10, 0, 0, 0, 0, "max is 0, expected 1..=1000"},
      {10, 0, 0, 1001, 0, "max is 1001, expected 1..=1000"},
      {10, 0, 11, 10, 0, "after is 11, beyond the feed's count 10"},
      {10, 5, 0, 10, 0,
       "startNs is 0, expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)"},
  };
  for (const PollCase& k : polls) {
    pb::PollRequest req;
    req.set_count(k.count);
    req.set_rate(k.rate);
    req.set_after(k.after);
    req.set_max(k.max);
    req.set_start_ns(k.start_ns);
    ExpectCode(c.Raw(kStreams + "Poll", req.SerializeAsString(), nullptr), StatusCode::INVALID_ARGUMENT,
               "Poll " + k.want + " -> INVALID_ARGUMENT", k.want);
  }
}

// A poll's page: due events only, at most max, at most 16384 items.
void PollPages(Client& c) {
  pb::PollRequest req;
  pb::FeedPage page;
  std::string out;
  req.set_count(5);
  req.set_items(2);
  req.set_rate(1);
  req.set_start_ns(1000);  // long ago: every event is due
  req.set_after(1);
  req.set_max(2);
  Status st = c.Raw(kStreams + "Poll", req.SerializeAsString(), &out);
  bool good = st.ok() && page.ParseFromString(out) && page.events_size() == 2 && !page.done() &&
              page.events(0).seq() == 2 && page.events(0).scheduled_ns() == 1000 + 1000000000LL &&
              page.events(1).seq() == 3 && page.events(1).scheduled_ns() == 1000 + 2000000000LL &&
              page.events(1).items_size() == 2;
  Expect(good, "Poll: events 2 and 3 of a past feed, stamped start + (seq-1)/rate, not done",
         Describe(st) + " " + page.ShortDebugString().substr(0, 200));
  req.set_after(3);
  req.set_max(10);
  st = c.Raw(kStreams + "Poll", req.SerializeAsString(), &out);
  Expect(st.ok() && page.ParseFromString(out) && page.events_size() == 2 && page.done() &&
             page.events(1).seq() == 5,
         "Poll: the page holding the last event is done", Describe(st));
  req.set_start_ns(WallNs() + 3600LL * 1000000000LL);  // an hour ahead: nothing due yet
  req.set_after(0);
  st = c.Raw(kStreams + "Poll", req.SerializeAsString(), &out);
  Expect(st.ok() && page.ParseFromString(out) && page.events_size() == 0 && !page.done(),
         "Poll: no event before it is due", Describe(st));
  req.set_count(1000);
  req.set_items(1395);
  req.set_rate(0);
  req.set_start_ns(0);
  req.set_max(1000);
  st = c.Raw(kStreams + "Poll", req.SerializeAsString(), &out);
  Expect(st.ok() && page.ParseFromString(out) && page.events_size() == 11 && page.events(10).items_size() == 1395,
         "Poll: a page stops at 16384 items (11 events of 1395)", Describe(st));
}

// Messages over the size limit, undecodable ones, and the upload's sums.
void StreamMessages(Client& c, int max_bytes) {
  const std::string big = Msg(3, std::string(static_cast<size_t>(max_bytes), 'x'));  // a few bytes over
  std::vector<std::string> got;
  Status st = c.Stream(kStreams + "EchoStream", {Msg(1, "a"), Msg(2, "bc"), big}, &got);
  ExpectCode(st, StatusCode::RESOURCE_EXHAUSTED, "EchoStream: a message over the size limit -> RESOURCE_EXHAUSTED");
  pb::StreamMessage m;
  Expect(got.size() == 2 && m.ParseFromString(got[1]) && m.seq() == 2 && m.payload() == "bc",
         "EchoStream: the messages before it were echoed", std::to_string(got.size()) + " replies");
  st = c.Stream(kStreams + "Upload", {Msg(1, "a"), big}, &got);
  ExpectCode(st, StatusCode::RESOURCE_EXHAUSTED, "Upload: a message over the size limit -> RESOURCE_EXHAUSTED");
  st = c.Stream(kStreams + "EchoStream", {Msg(1, "a"), std::string("\x12\x05xy", 4)}, &got);
  ExpectCode(st, StatusCode::INVALID_ARGUMENT, "EchoStream: a truncated message -> INVALID_ARGUMENT");
  st = c.Stream(kStreams + "Upload", {std::string("\x12\x01\xff", 3)}, &got);
  ExpectCode(st, StatusCode::INVALID_ARGUMENT, "Upload: invalid UTF-8 in a payload -> INVALID_ARGUMENT");

  pb::UploadSummary sum;
  st = c.Stream(kStreams + "Upload", {Msg(1, "a"), Msg(2, "bc"), Msg(3, "")}, &got);
  // FNV-1a of "abc" is 0x1a47e90b.
  Expect(st.ok() && got.size() == 1 && sum.ParseFromString(got[0]) && sum.count() == 3 && sum.bytes() == 3 &&
             sum.checksum() == 0x1a47e90bu,
         "Upload: count 3, bytes 3, checksum FNV-1a(\"abc\")", Describe(st) + " " + sum.ShortDebugString());
  st = c.Stream(kStreams + "Upload", {}, &got);
  Expect(st.ok() && got.size() == 1 && sum.ParseFromString(got[0]) && sum.count() == 0 &&
             sum.checksum() == 0x811c9dc5u,
         "Upload of nothing: count 0, the FNV offset basis", Describe(st) + " " + sum.ShortDebugString());
  st = c.Stream(kStreams + "EchoStream", {}, &got);
  Expect(st.ok() && got.empty(), "EchoStream with no message ends OK", Describe(st));
}

// A feed at 200 events/s: stamps exactly on the schedule, none arrives
// before its stamp (one host, one CLOCK_REALTIME), the items as the contract
// says.
void StreamSchedule(Client& c) {
  pb::SubscribeRequest req;
  req.set_count(20);
  req.set_items(3);
  req.set_rate(200);
  std::vector<pb::FeedEvent> events;
  std::vector<int64_t> arrivals;
  Status st = Subscribe(c, req, &events, &arrivals);
  Expect(st.ok() && events.size() == 20, "Subscribe 20 events at 200/s ends OK", Describe(st));
  if (events.size() != 20) return;
  std::string bad;
  for (size_t i = 0; i < events.size() && bad.empty(); i++) {
    const pb::FeedEvent& e = events[i];
    if (e.seq() != i + 1) bad = "event " + std::to_string(i) + " has seq " + std::to_string(e.seq());
    if (e.scheduled_ns() - events[0].scheduled_ns() != static_cast<int64_t>(i) * 5000000) {
      bad = "event " + std::to_string(i + 1) + " stamped off the schedule";
    }
    if (arrivals[i] < e.scheduled_ns()) {
      bad = "event " + std::to_string(i + 1) + " arrived " + std::to_string(e.scheduled_ns() - arrivals[i]) +
            " ns before its time";
    }
    if (e.items_size() != 3) {
      bad = "event " + std::to_string(i + 1) + " has " + std::to_string(e.items_size()) + " items";
    }
  }
  Expect(bad.empty(), "Subscribe: seq 1..20, stamps 5 ms apart, none before its time", bad);
  req.set_count(2);
  req.set_items(1395);
  req.set_rate(0);
  st = Subscribe(c, req, &events);
  Expect(st.ok() && events.size() == 2 && events[1].items_size() == 1395 &&
             events[1].items(0).id() == events[0].items(0).id() && events[1].scheduled_ns() >= events[0].scheduled_ns(),
         "Subscribe of 1395 items: event 2 starts again at item 0, stamps never decrease", Describe(st));
}

// An upload of n one-byte messages (written with the buffer hint, so that
// grpc coalesces them); the summary's count in *count.
Status UploadMany(Client& c, uint32_t n, uint32_t* count) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  pb::UploadSummary sum;
  auto writer = pb::Streams::NewStub(c.channel())->Upload(&ctx, &sum);
  pb::StreamMessage m;
  m.set_payload("x");
  for (uint32_t i = 1; i <= n; i++) {
    m.set_seq(i);
    if (!writer->Write(m, grpc::WriteOptions().set_buffer_hint())) break;  // the server ended the call
  }
  writer->WritesDone();
  Status st = writer->Finish();
  *count = sum.count();
  return st;
}

void StreamsFailure(Client& c) {
  pb::SubscribeRequest req;
  req.set_count(3);
  std::vector<pb::FeedEvent> events;
  Status st = Subscribe(c, req, &events);
  ExpectCode(st, StatusCode::UNAVAILABLE, "Subscribe: injected failure -> UNAVAILABLE", "injected failure");
  Expect(events.empty(), "Subscribe: no event before the injected failure", std::to_string(events.size()));
  std::vector<std::string> got;
  st = c.Stream(kStreams + "EchoStream", {Msg(1, "a")}, &got);
  ExpectCode(st, StatusCode::UNAVAILABLE, "EchoStream: injected failure -> UNAVAILABLE", "injected failure");
  Expect(got.empty(), "EchoStream: no reply before the injected failure", std::to_string(got.size()));
  st = c.Stream(kStreams + "Upload", {Msg(1, "a")}, &got);
  ExpectCode(st, StatusCode::UNAVAILABLE, "Upload: injected failure -> UNAVAILABLE", "injected failure");
}

}  // namespace

int main(int argc, char** argv) {
  std::string target, ca;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) {
      target = argv[++i];
    } else if (a == "--ca" && i + 1 < argc) {
      ca = argv[++i];
    } else {
      rest.push_back(a);
    }
  }
  if (target.empty() || rest.empty()) {
    std::fprintf(stderr, "usage: check --target HOST:PORT [--ca CA.pem] MODE [ARGS]\n");
    return 2;
  }
  Client c(target, ca);
  const std::string& mode = rest[0];
  if (mode == "bad") {
    Bad(c);
  } else if (mode == "spin" && rest.size() == 3) {
    Spin(c, std::stod(rest[1]), std::stoi(rest[2]));
  } else if (mode == "streams" && rest.size() == 2) {
    StreamRefusals(c);
    PollPages(c);
    StreamMessages(c, std::stoi(rest[1]));
    StreamSchedule(c);
  } else if (mode == "streams-failure") {
    StreamsFailure(c);
  } else if (mode == "upload-many" && rest.size() == 2) {
    uint32_t count = 0;
    Status st = UploadMany(c, static_cast<uint32_t>(std::stoul(rest[1])), &count);
    std::printf("status %s count %u\n", Describe(st).c_str(), count);
    return st.ok() ? 0 : 1;
  } else if (mode == "subscribe" && rest.size() == 3) {
    pb::SubscribeRequest req;
    req.set_count(static_cast<uint32_t>(std::stoul(rest[1])));
    req.set_rate(static_cast<uint32_t>(std::stoul(rest[2])));
    std::vector<pb::FeedEvent> events;
    Status st = Subscribe(c, req, &events);
    std::printf("status %s events %zu\n", Describe(st).c_str(), events.size());
    return st.ok() ? 0 : 1;
  } else if (mode == "call") {
    Status st = c.GetInteger();
    std::printf("status %s\n", Describe(st).c_str());
    return st.ok() ? 0 : 1;
  } else {
    std::fprintf(stderr, "check: unknown mode or arguments\n");
    return 2;
  }
  std::printf("check: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
