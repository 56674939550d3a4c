// One call's state machine on a worker's completion queue, shared by the
// unary methods (server.cc) and the streams (streams.cc): a call is
// requested, arrives, is checked (Accept), then admitted like every call of
// the contract (the injected service time, then the failure draw, once per
// call or stream), then runs its operation (Run, then Step per completion)
// and finishes. Every event of a call arrives on its worker's queue, which
// only that worker's thread reads: a call's state needs no lock.
#ifndef PROTOBENCH_CPP_GRPC_CALL_H_
#define PROTOBENCH_CPP_GRPC_CALL_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include <grpc/support/time.h>
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "config.h"
#include "ops.h"

namespace pbserver {

// Process-wide state the handlers read (and the failure counter).
struct App {
  Config cfg;
  Data data;
  std::atomic<uint64_t> counter{0};
};

// Encodes m with the SerializationTraits grpc++ uses for a typed method,
// replacing what *out held (grpc++ asserts on encoding a large message into
// a buffer that is not empty).
template <class M>
grpc::Status Encode(const M& m, grpc::ByteBuffer* out) {
  out->Clear();
  bool own;
  return grpc::SerializationTraits<M>::Serialize(m, out, &own);
}

// Decodes a raw message; false if it is not a valid M.
template <class M>
bool Decode(grpc::ByteBuffer* in, M* m) {
  return grpc::SerializationTraits<M>::Deserialize(in, m).ok();
}

// A completion-queue tag.
class Tag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~Tag() = default;
};

class Call;

// One worker thread and its completion queue, with the calls waiting on an
// alarm there (an intrusive list touched only by this thread).
struct Worker {
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  Call* sleeping = nullptr;
  // Set on this worker's thread at the drain deadline: from then on a call
  // that would wait on an alarm ends instead (an alarm outliving the queue
  // would start an operation on a shut-down queue, which grpc aborts on).
  bool drained = false;
  // Calls accepted and not yet finished (read by the main thread at
  // shutdown: its queue may be shut down only once this is 0).
  std::atomic<int> active{0};
};

class Call : public Tag {
 public:
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  void Proceed(bool ok) final;

  // Cancels the alarm the call waits on (at the drain deadline): it then
  // proceeds with ok = false.
  void CancelSleep() { alarm_.Cancel(); }
  Call* next_sleeping() const { return next_; }

 protected:
  Call(App& app, Worker& worker) : app_(app), worker_(worker) {}
  virtual ~Call() = default;

  // Requests the next call of the same method on this worker's queue (a new
  // object, whose constructor asks grpc for it).
  virtual void Spawn() = 0;
  // Decodes and checks the request, if the call has one before it runs; a
  // non-OK status is the answer, with no service time and no draw.
  virtual grpc::Status Accept() { return grpc::Status::OK; }
  // Runs the admitted operation: starts one operation tagged `this` (or
  // calls Fail), then each completion comes to Step.
  virtual void Run() = 0;
  virtual void Step(bool ok) = 0;
  // Starts the final operation that answers st (tagged `this`).
  virtual void FinishWithError(const grpc::Status& st) = 0;

  // The call's final operation is about to start: its completion deletes
  // the call.
  void Finishing() { state_ = State::kFinishing; }
  // Ends the call with st.
  void Fail(const grpc::Status& st) {
    Finishing();
    FinishWithError(st);
  }
  // Waits until deadline (GPR_CLOCK_MONOTONIC) on this worker's queue, so
  // the thread serves other calls meanwhile; then Step (or admission)
  // proceeds, ok = false when cancelled at the drain deadline. After that
  // deadline the call ends at once with UNAVAILABLE instead.
  void SleepUntil(gpr_timespec deadline);

  grpc::ServerCompletionQueue* cq() { return worker_.cq.get(); }

  App& app_;
  Worker& worker_;
  grpc::ServerContext ctx_;

 private:
  enum class State { kRequested, kSleeping, kRunning, kFinishing };

  void Start();
  void Admit();
  void Link();
  void Unlink();

  grpc::Alarm alarm_;
  bool linked_ = false;
  Call* prev_ = nullptr;  // in worker_.sleeping while linked_
  Call* next_ = nullptr;
  State state_ = State::kRequested;
};

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_CALL_H_
