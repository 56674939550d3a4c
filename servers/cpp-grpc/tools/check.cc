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
//   failure N              N sequential GetInteger calls (with invalid
//                          requests in between, which must not count);
//                          prints `sequence <0|1 per call>` (1 = injected)
//   sleep MS               one call takes >= MS; 8 concurrent calls end
//                          within 2 x MS (sleep blocks no thread)
//   spin MS N              N concurrent calls take >= N x MS (one worker:
//                          spin holds the handling thread)
//   call                   one GetInteger call; prints its status
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

  // A call to a unary method whose request stream carries several messages.
  Status Stream(const std::string& method, const std::vector<std::string>& reqs, int* responses) {
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
    *responses = 0;
    for (;;) {
      ByteBuffer out;
      call->Read(&out, reinterpret_cast<void*>(4));
      cq.Next(&tag, &ok);
      if (!ok) break;
      (*responses)++;
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

// ---- failure injection

void Failure(Client& c, int n) {
  std::string seq;
  int other = 0, refused = 0;
  pb::FileRequest file;
  file.set_name("nope");
  pb::CloneRequest clone;
  clone.set_times(-1);
  for (int i = 0; i < n; i++) {
    if (i % 10 == 5) {
      // Refused requests get no draw: they keep their own codes and do not
      // advance the counter (the sequence printed must still match).
      refused += c.Raw("/protobench.v1.Bench/GetFile", file.SerializeAsString(), nullptr).error_code() ==
                 StatusCode::NOT_FOUND;
      refused += c.Raw("/protobench.v1.Bench/CloneText", clone.SerializeAsString(), nullptr).error_code() ==
                 StatusCode::INVALID_ARGUMENT;
      refused += c.Raw("/protobench.v1.Bench/Echo", std::string("\xff", 1), nullptr).error_code() ==
                 StatusCode::INVALID_ARGUMENT;
    }
    Status st = c.GetInteger();
    if (st.ok()) {
      seq += '0';
    } else if (st.error_code() == StatusCode::UNAVAILABLE && st.error_message() == "injected failure") {
      seq += '1';
    } else {
      other++;
      seq += '?';
      if (other == 1) Fail("failure call " + std::to_string(i), Describe(st));
    }
  }
  std::printf("sequence %s\n", seq.c_str());
  Expect(refused == 3 * ((n + 4) / 10), "failure: invalid requests keep their codes (never injected)",
         std::to_string(refused) + " refused");
  Expect(other == 0, "every call OK or UNAVAILABLE \"injected failure\"", std::to_string(other) + " others");
}

// ---- service time

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

void Sleep(Client& c, double ms) {
  int errors;
  c.GetInteger();  // connect first
  double one = ConcurrentMs(c, 1, &errors);
  Expect(errors == 0 && one >= ms, "sleep: one call takes >= " + std::to_string(ms) + " ms",
         std::to_string(one) + " ms, " + std::to_string(errors) + " errors");
  double eight = ConcurrentMs(c, 8, &errors);
  Expect(errors == 0 && eight >= ms && eight < 2 * ms,
         "sleep: 8 concurrent calls take about " + std::to_string(ms) + " ms (sleep blocks no thread)",
         std::to_string(eight) + " ms, " + std::to_string(errors) + " errors");
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
  } else if (mode == "failure" && rest.size() == 2) {
    Failure(c, std::stoi(rest[1]));
  } else if (mode == "sleep" && rest.size() == 2) {
    Sleep(c, std::stod(rest[1]));
  } else if (mode == "spin" && rest.size() == 3) {
    Spin(c, std::stod(rest[1]), std::stoi(rest[2]));
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
