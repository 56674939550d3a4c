#include "call.h"

#include <chrono>

namespace pbserver {

using grpc::Status;
using grpc::StatusCode;

void Call::Proceed(bool ok) {
  if (linked_) Unlink();  // an alarm of this call completed
  switch (state_) {
    case State::kRequested:
      if (!ok) {  // the server is shutting down
        delete this;
        return;
      }
      // Keep one call of this method requested on this queue.
      Spawn();
      worker_.active.fetch_add(1, std::memory_order_relaxed);
      Start();
      return;
    case State::kSleeping:
      if (!ok) {  // cancelled: the drain deadline passed
        Fail(Status(StatusCode::UNAVAILABLE, "the server is shutting down"));
        return;
      }
      Admit();
      return;
    case State::kRunning:
      Step(ok);
      return;
    case State::kFinishing:
      worker_.active.fetch_sub(1, std::memory_order_release);
      delete this;
      return;
  }
}

void Call::Start() {
  Status st = Accept();
  if (!st.ok()) {
    Fail(st);
    return;
  }
  const Config& cfg = app_.cfg;
  if (cfg.service_kind == ServiceKind::kSleep) {
    state_ = State::kSleeping;
    SleepUntil(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                            gpr_time_from_nanos(cfg.service_time.count(), GPR_TIMESPAN)));
    return;
  }
  if (cfg.service_kind == ServiceKind::kSpin) {
    // Burns this handling thread for the duration.
    const auto end = std::chrono::steady_clock::now() + cfg.service_time;
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  Admit();
}

// After the service time: the failure draw, then the operation.
void Call::Admit() {
  const Config& cfg = app_.cfg;
  if (cfg.failure_rate > 0) {
    uint64_t k = app_.counter.fetch_add(1, std::memory_order_relaxed);
    if (Fails(cfg.failure_seed, k, cfg.failure_rate)) {
      Fail(Status(StatusCode::UNAVAILABLE, "injected failure"));
      return;
    }
  }
  state_ = State::kRunning;
  Run();
}

void Call::SleepUntil(gpr_timespec deadline) {
  if (worker_.drained) {
    Fail(Status(StatusCode::UNAVAILABLE, "the server is shutting down"));
    return;
  }
  Link();
  alarm_.Set(cq(), deadline, this);
}

void Call::Link() {
  linked_ = true;
  next_ = worker_.sleeping;
  if (next_ != nullptr) next_->prev_ = this;
  worker_.sleeping = this;
}

void Call::Unlink() {
  linked_ = false;
  if (prev_ != nullptr) prev_->next_ = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  if (worker_.sleeping == this) worker_.sleeping = next_;
  prev_ = next_ = nullptr;
}

}  // namespace pbserver
