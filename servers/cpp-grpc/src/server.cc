// protobench reference server for C++: grpc++ (the async completion-queue
// API, one completion queue per worker thread) serving protobench.v1.Bench
// and helloworld.Greeter, configured only by the PROTOBENCH_* environment.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include "call.h"
#include "config.h"
#include "feed.h"
#include "helloworld/helloworld.grpc.pb.h"
#include "listener.h"
#include "ops.h"
#include "protobench/v1/protobench.grpc.pb.h"
#include "streams.h"

namespace pbserver {
namespace {

using grpc::ByteBuffer;
using grpc::Status;
using grpc::StatusCode;

// Requests in flight may finish for this long after SIGTERM/SIGINT.
constexpr auto kDrainTimeout = std::chrono::seconds(10);

// Every method is registered "raw" (ByteBuffer in, ByteBuffer out): the
// handler decodes the request itself, so an undecodable message can be
// answered INVALID_ARGUMENT (grpc++ answers INTERNAL for a typed method),
// and encodes the response with the same SerializationTraits grpc++ uses.
using B = pb::Bench;
using BenchService = B::WithRawMethod_GetInventoryXs<B::WithRawMethod_GetInventoryS<B::WithRawMethod_GetInventoryM<
    B::WithRawMethod_GetInventoryL<B::WithRawMethod_EchoProduct<B::WithRawMethod_ModifyProduct<
        B::WithRawMethod_CloneText<B::WithRawMethod_GetInteger<B::WithRawMethod_GetIntegers<
            B::WithRawMethod_GetObjects<B::WithRawMethod_GetFile<B::WithRawMethod_Echo<B::Service>>>>>>>>>>>>;
using GreeterService = helloworld::Greeter::WithRawMethod_SayHello<helloworld::Greeter::Service>;

struct Services {
  BenchService bench;
  GreeterService greeter;
  StreamsService streams;
};

// One call's request and the two steps of its operation. Accept decodes and
// validates; a non-OK status is the answer and the call gets no service time
// and no draw. Answer runs the operation and encodes the response.
class Work {
 public:
  virtual ~Work() = default;
  virtual Status Accept(ByteBuffer* in) = 0;
  virtual Status Answer(ByteBuffer* out) = 0;
};

template <class Req>
class TypedWork final : public Work {
 public:
  using CheckFn = Status (*)(const App&, const Req&);
  using AnswerFn = Status (*)(const App&, Req&, ByteBuffer*);
  TypedWork(const App& app, CheckFn check, AnswerFn answer) : app_(app), check_(check), answer_(answer) {}

  Status Accept(ByteBuffer* in) override {
    if (!Decode(in, &req_)) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "the request is not a valid " + Req::descriptor()->full_name() + " message");
    }
    return check_ == nullptr ? Status::OK : check_(app_, req_);
  }
  Status Answer(ByteBuffer* out) override { return answer_(app_, req_, out); }

 private:
  const App& app_;
  CheckFn check_;
  AnswerFn answer_;
  Req req_;
};

// ---- the operations

Status CheckClone(const App&, const pb::CloneRequest& r) {
  if (r.times() < 0 || r.times() > kMaxCloneTimes) {
    return Status(StatusCode::INVALID_ARGUMENT, "times must be in 0..=100000");
  }
  if (static_cast<int64_t>(r.text().size()) * r.times() > kMaxCloneBytes) {
    return Status(StatusCode::INVALID_ARGUMENT, "the response would exceed 67108864 bytes of text");
  }
  return Status::OK;
}

Status CheckFile(const App& app, const pb::FileRequest& r) {
  if (app.data.File(r.name()) == nullptr) {
    // The name is the client's own input; it is not echoed back.
    return Status(StatusCode::NOT_FOUND, "unknown file: the files are file-455k and file-3m4");
  }
  return Status::OK;
}

Status AnswerXs(const App&, pb::Empty&, ByteBuffer* out) { return Encode(pb::Empty(), out); }
Status AnswerS(const App& a, pb::Empty&, ByteBuffer* out) { return Encode(a.data.inventory, out); }
Status AnswerM(const App& a, pb::Empty&, ByteBuffer* out) { return Encode(a.data.devices, out); }
Status AnswerL(const App& a, pb::Empty&, ByteBuffer* out) { return Encode(a.data.items, out); }
Status AnswerEchoProduct(const App&, pb::Product& p, ByteBuffer* out) { return Encode(p, out); }
Status AnswerModifyProduct(const App&, pb::Product& p, ByteBuffer* out) {
  p.set_description(ReverseUtf8(p.description()));
  return Encode(p, out);
}
Status AnswerClone(const App&, pb::CloneRequest& r, ByteBuffer* out) {
  pb::CloneResponse resp;
  resp.mutable_texts()->Reserve(r.times());
  for (int32_t i = 0; i < r.times(); i++) resp.add_texts(r.text());
  return Encode(resp, out);
}
Status AnswerInteger(const App&, pb::Empty&, ByteBuffer* out) {
  pb::IntegerValue v;
  v.set_value(2147483647);
  return Encode(v, out);
}
Status AnswerIntegers(const App& a, pb::Empty&, ByteBuffer* out) { return Encode(a.data.integers, out); }
Status AnswerObjects(const App& a, pb::Empty&, ByteBuffer* out) { return Encode(a.data.people, out); }
Status AnswerFile(const App& a, pb::FileRequest& r, ByteBuffer* out) { return Encode(*a.data.File(r.name()), out); }
Status AnswerEcho(const App&, pb::EchoMessage& m, ByteBuffer* out) { return Encode(m, out); }
Status AnswerSayHello(const App&, helloworld::HelloRequest& r, ByteBuffer* out) {
  helloworld::HelloReply reply;
  if (r.has_request()) reply.mutable_response()->Swap(r.mutable_request());
  return Encode(reply, out);
}

Status CheckPollRequest(const App&, const pb::PollRequest& r) {
  std::string err = CheckPoll(r);
  return err.empty() ? Status::OK : Status(StatusCode::INVALID_ARGUMENT, err);
}
Status AnswerPoll(const App& a, pb::PollRequest& r, ByteBuffer* out) {
  pb::FeedPage page;
  FillPage(a.data, r, NowNs(), &page);
  return Encode(page, out);
}

// ---- the method table

using Responder = grpc::ServerAsyncResponseWriter<ByteBuffer>;
using RequestFn = void (*)(Services&, grpc::ServerContext*, ByteBuffer*, Responder*, grpc::ServerCompletionQueue*,
                           void*);
using MakeFn = std::unique_ptr<Work> (*)(const App&);

struct Method {
  RequestFn request;
  MakeFn make;
};

#define PB_REQUEST(svc, Name)                                                                       \
  [](Services& s, grpc::ServerContext* ctx, ByteBuffer* req, Responder* resp,                       \
     grpc::ServerCompletionQueue* cq, void* tag) { s.svc.Request##Name(ctx, req, resp, cq, cq, tag); }
#define PB_WORK(Req, check, answer) \
  [](const App& a) -> std::unique_ptr<Work> { return std::make_unique<TypedWork<Req>>(a, check, answer); }

const Method kMethods[] = {
    {PB_REQUEST(bench, GetInventoryXs), PB_WORK(pb::Empty, nullptr, AnswerXs)},
    {PB_REQUEST(bench, GetInventoryS), PB_WORK(pb::Empty, nullptr, AnswerS)},
    {PB_REQUEST(bench, GetInventoryM), PB_WORK(pb::Empty, nullptr, AnswerM)},
    {PB_REQUEST(bench, GetInventoryL), PB_WORK(pb::Empty, nullptr, AnswerL)},
    {PB_REQUEST(bench, EchoProduct), PB_WORK(pb::Product, nullptr, AnswerEchoProduct)},
    {PB_REQUEST(bench, ModifyProduct), PB_WORK(pb::Product, nullptr, AnswerModifyProduct)},
    {PB_REQUEST(bench, CloneText), PB_WORK(pb::CloneRequest, CheckClone, AnswerClone)},
    {PB_REQUEST(bench, GetInteger), PB_WORK(pb::Empty, nullptr, AnswerInteger)},
    {PB_REQUEST(bench, GetIntegers), PB_WORK(pb::Empty, nullptr, AnswerIntegers)},
    {PB_REQUEST(bench, GetObjects), PB_WORK(pb::Empty, nullptr, AnswerObjects)},
    {PB_REQUEST(bench, GetFile), PB_WORK(pb::FileRequest, CheckFile, AnswerFile)},
    {PB_REQUEST(bench, Echo), PB_WORK(pb::EchoMessage, nullptr, AnswerEcho)},
    {PB_REQUEST(greeter, SayHello), PB_WORK(helloworld::HelloRequest, nullptr, AnswerSayHello)},
    {PB_REQUEST(streams, Poll), PB_WORK(pb::PollRequest, CheckPollRequest, AnswerPoll)},
};

// ---- one unary call

class UnaryCall final : public Call {
 public:
  UnaryCall(App& app, Services& services, const Method& method, Worker& worker)
      : Call(app, worker), services_(services), method_(method), responder_(&ctx_) {
    method_.request(services_, &ctx_, &request_, &responder_, cq(), this);
  }

 private:
  void Spawn() override { new UnaryCall(app_, services_, method_, worker_); }
  Status Accept() override {
    work_ = method_.make(app_);
    return work_->Accept(&request_);
  }
  void Run() override {
    if (!work_->Answer(&response_).ok()) {
      Fail(Status(StatusCode::INTERNAL, "the response could not be encoded"));
      return;
    }
    Finishing();
    responder_.Finish(response_, Status::OK, this);
  }
  void Step(bool /*ok*/) override {}  // Run's only operation is the last
  void FinishWithError(const Status& st) override { responder_.FinishWithError(st, this); }

  Services& services_;
  const Method& method_;
  ByteBuffer request_;
  ByteBuffer response_;
  Responder responder_;
  std::unique_ptr<Work> work_;
};

// Fires on a worker's queue at the drain deadline, or is cancelled once the
// server's Shutdown has returned (everything finished, or the deadline
// passed: both happen at the same moment, in either order): either way the
// calls still sleeping there are cancelled, so the server stops within the
// deadline (grpc++ cancels the calls themselves at the same moment) and no
// sleep outlives the queue. A sleep that ended after the queue's shutdown
// would start its reply on a shut-down queue, which grpc aborts on.
class DrainDeadline final : public Tag {
 public:
  explicit DrainDeadline(Worker& worker) : worker_(worker) {}
  void Set(gpr_timespec deadline) { alarm_.Set(worker_.cq.get(), deadline, this); }
  void Cancel() { alarm_.Cancel(); }
  void Proceed(bool /*ok*/) override {
    worker_.drained = true;
    for (Call* c = worker_.sleeping; c != nullptr; c = c->next_sleeping()) c->CancelSleep();
  }

 private:
  Worker& worker_;
  grpc::Alarm alarm_;
};

void Serve(grpc::ServerCompletionQueue* cq) {
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
}

// ---- start-up

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

int Run() {
  // SIGTERM/SIGINT are taken by sigwait below; blocked before any thread
  // starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto app = std::make_unique<App>();
  std::string err;
  if (!ParseConfig(std::getenv, AvailableCpus(), &app->cfg, &err)) {
    std::fprintf(stderr, "protobench-cpp-grpc: %s\n", err.c_str());
    return 2;
  }
  const Config& cfg = app->cfg;
  std::string dataset = cfg.dataset_path.empty() ? FindContractFile("data/dataset.json") : cfg.dataset_path;
  if (dataset.empty()) {
    std::fprintf(stderr, "protobench-cpp-grpc: contract/data/dataset.json not found above the working directory; "
                         "set PROTOBENCH_DATASET\n");
    return 2;
  }
  if (!app->data.Load(dataset, &err)) {
    std::fprintf(stderr, "protobench-cpp-grpc: %s\n", err.c_str());
    return 2;
  }

  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (cfg.tls()) {
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    if (!ReadFile(cfg.tls_cert, &pair.cert_chain) || pair.cert_chain.find("-----BEGIN") == std::string::npos) {
      std::fprintf(stderr, "protobench-cpp-grpc: PROTOBENCH_TLS_CERT=%s: not a readable PEM file\n",
                   cfg.tls_cert.c_str());
      return 2;
    }
    if (!ReadFile(cfg.tls_key, &pair.private_key) || pair.private_key.find("-----BEGIN") == std::string::npos) {
      std::fprintf(stderr, "protobench-cpp-grpc: PROTOBENCH_TLS_KEY=%s: not a readable PEM file\n",
                   cfg.tls_key.c_str());
      return 2;
    }
    grpc::SslServerCredentialsOptions opts(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    opts.pem_key_cert_pairs.push_back(pair);
    creds = grpc::SslServerCredentials(opts);  // ALPN h2 is grpc's own
  }

  // protobuf logs one line per string field with invalid UTF-8 it refuses;
  // requests are not logged, so its handler is silenced from here on.
  google::protobuf::SetLogHandler(nullptr);

  Listener listener;
  if (!listener.Bind(cfg.grpc_addr, &err)) {
    std::fprintf(stderr, "protobench-cpp-grpc: %s\n", err.c_str());
    return 1;
  }

  Services services;
  grpc::ServerBuilder builder;
  // Connections come from our own accept loop (listener.h), not from a
  // listening port of grpc's.
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor =
      builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, creds);
  builder.RegisterService(&services.bench);
  builder.RegisterService(&services.greeter);
  builder.RegisterService(&services.streams);
  builder.SetMaxReceiveMessageSize(cfg.max_request_bytes);
  const int idle_ms =
      static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(cfg.idle_timeout).count());
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, cfg.max_streams);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms);
  // Bounds a connection that never completes its TLS handshake or never
  // sends the HTTP/2 preface and SETTINGS (the idle timer starts after that).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, idle_ms);
  std::vector<Worker> workers(cfg.workers);
  for (Worker& w : workers) w.cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "protobench-cpp-grpc: cannot start the grpc server%s\n",
                 cfg.tls() ? " (check PROTOBENCH_TLS_CERT/PROTOBENCH_TLS_KEY)" : "");
    return 1;
  }

  // grpc core logs an error line per request with a malformed header (e.g. a
  // content-type other than application/grpc) and per failed TLS handshake.
  // Nothing is logged per request, so once the server runs its lines are
  // dropped, unless grpc's own GRPC_VERBOSITY or GRPC_TRACE asks for them.
  if (std::getenv("GRPC_VERBOSITY") == nullptr && std::getenv("GRPC_TRACE") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }

  for (Worker& w : workers) {
    for (const Method& m : kMethods) new UnaryCall(*app, services, m, w);
    RequestStreams(*app, services.streams, w);
  }
  std::vector<std::thread> threads;
  for (Worker& w : workers) threads.emplace_back(Serve, w.cq.get());
  listener.Start(acceptor.get());

  std::printf("listening protocol=grpc addr=%s tls=%s\n", listener.addr().c_str(), cfg.tls() ? "true" : "false");
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  // Stop accepting (the listening socket is closed); calls in flight may
  // finish until the deadline, then the rest are cancelled. The queues are
  // shut down after the server.
  listener.Stop();
  gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                       gpr_time_from_seconds(kDrainTimeout.count(), GPR_TIMESPAN));
  std::vector<std::unique_ptr<DrainDeadline>> drains;
  for (Worker& w : workers) {
    drains.push_back(std::make_unique<DrainDeadline>(w));
    drains.back()->Set(deadline);
  }
  server->Shutdown(deadline);
  for (auto& d : drains) d->Cancel();
  // The queues stay open until their calls have finished (the cancelled
  // sleeps answer UNAVAILABLE and their replies complete, failed, at once);
  // bounded, in case a reply never completes.
  for (Worker& w : workers) {
    for (int i = 0; i < 2000 && w.active.load(std::memory_order_acquire) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (Worker& w : workers) w.cq->Shutdown();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace
}  // namespace pbserver

int main() { return pbserver::Run(); }
