// The streams hold at most one message per direction: the echo reads the
// next message once the previous reply is written, the subscription builds
// the next event once the previous one is written, the upload reads one
// message at a time. A message over PROTOBENCH_MAX_REQUEST_BYTES is refused
// by grpc itself (the server's max receive size), which ends the call with
// RESOURCE_EXHAUSTED.
#include "streams.h"

#include <string>

#include "feed.h"

namespace pbserver {
namespace {

using grpc::ByteBuffer;
using grpc::Status;
using grpc::StatusCode;

Status TooMany() {
  return Status(StatusCode::RESOURCE_EXHAUSTED,
                "more than " + std::to_string(kMaxStreamMessages) + " messages on one stream");
}

Status Undecodable(uint64_t n) {
  return Status(StatusCode::INVALID_ARGUMENT,
                "message " + std::to_string(n) + " is not a valid protobench.v1.StreamMessage message");
}

// A write or read on the call failed: the client went away or the call was
// cancelled. The final status will not reach the client; it ends the call.
Status Broken() { return Status(StatusCode::CANCELLED, "the call ended"); }

// EchoStream: send the response headers, then read a message, write it
// back, read the next; the client's half-close ends the stream with OK. The
// headers go first because a client may wait for them before it sends
// (grpc++ would send them with the first reply only).
class EchoCall final : public Call {
 public:
  EchoCall(App& app, StreamsService& service, Worker& worker)
      : Call(app, worker), service_(service), stream_(&ctx_) {
    service_.RequestEchoStream(&ctx_, &stream_, cq(), cq(), this);
  }

 private:
  enum class Phase { kHead, kReading, kWriting };

  void Spawn() override { new EchoCall(app_, service_, worker_); }
  void Run() override {
    phase_ = Phase::kHead;
    stream_.SendInitialMetadata(this);
  }
  void Step(bool ok) override {
    if (!ok) {  // reading: the client's half-close (or a refused message); else the call broke
      Finishing();
      stream_.Finish(phase_ == Phase::kReading ? Status::OK : Broken(), this);
      return;
    }
    if (phase_ != Phase::kReading) {
      phase_ = Phase::kReading;
      stream_.Read(&in_, this);
      return;
    }
    if (!Decode(&in_, &message_)) {
      Fail(Undecodable(uint64_t{count_} + 1));
      return;
    }
    if (count_ >= kMaxStreamMessages) {
      Fail(TooMany());
      return;
    }
    count_++;
    if (!Encode(message_, &out_).ok()) {
      Fail(Status(StatusCode::INTERNAL, "the reply could not be encoded"));
      return;
    }
    phase_ = Phase::kWriting;
    stream_.Write(out_, this);
  }
  void FinishWithError(const Status& st) override { stream_.Finish(st, this); }

  StreamsService& service_;
  grpc::ServerAsyncReaderWriter<ByteBuffer, ByteBuffer> stream_;
  ByteBuffer in_;
  ByteBuffer out_;
  pb::StreamMessage message_;
  uint32_t count_ = 0;
  Phase phase_ = Phase::kHead;
};

// Subscribe: `count` events, each built when it is due and written once the
// previous one has been; at rate > 0 an event is due at the schedule's time
// (a grpc::Alarm on the queue waits for it, never less), stamped with that
// time even when sent late; at rate 0 it is stamped when it is built.
class SubscribeCall final : public Call {
 public:
  SubscribeCall(App& app, StreamsService& service, Worker& worker)
      : Call(app, worker), service_(service), writer_(&ctx_) {
    service_.RequestSubscribe(&ctx_, &request_, &writer_, cq(), cq(), this);
  }

 private:
  void Spawn() override { new SubscribeCall(app_, service_, worker_); }
  Status Accept() override {
    if (!Decode(&request_, &req_)) {
      return Status(StatusCode::INVALID_ARGUMENT, "the request is not a valid protobench.v1.SubscribeRequest message");
    }
    std::string err = CheckSubscribe(req_);
    return err.empty() ? Status::OK : Status(StatusCode::INVALID_ARGUMENT, err);
  }
  void Run() override {
    // The schedule's anchor: a monotonic time to wait on, the wall clock
    // for the stamps.
    start_ = gpr_now(GPR_CLOCK_MONOTONIC);
    start_ns_ = NowNs();
    Next();
  }
  void Step(bool ok) override {
    if (waiting_) {
      if (!ok) {
        Fail(Status(StatusCode::UNAVAILABLE, "the server is shutting down"));
        return;
      }
      Next();  // checks the clock again: an alarm never sends early
      return;
    }
    if (!ok) {
      Finishing();
      writer_.Finish(Broken(), this);
      return;
    }
    seq_++;
    Next();
  }
  void FinishWithError(const Status& st) override { writer_.Finish(st, this); }

  // Sends event seq_ if it is due, else waits for it; after the last, ends.
  void Next() {
    waiting_ = false;
    if (seq_ > req_.count()) {
      Finishing();
      writer_.Finish(Status::OK, this);
      return;
    }
    int64_t stamp;
    if (req_.rate() == 0) {
      stamp = NowNs();
    } else {
      const int64_t offset = OffsetNs(seq_, req_.rate());
      const gpr_timespec due = gpr_time_add(start_, gpr_time_from_nanos(offset, GPR_TIMESPAN));
      if (gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), due) < 0) {
        waiting_ = true;
        SleepUntil(due);
        return;
      }
      stamp = start_ns_ + offset;
    }
    FillEvent(app_.data, seq_, req_.items(), stamp, &event_);
    if (!Encode(event_, &out_).ok()) {
      Fail(Status(StatusCode::INTERNAL, "the event could not be encoded"));
      return;
    }
    writer_.Write(out_, this);
  }

  StreamsService& service_;
  ByteBuffer request_;
  grpc::ServerAsyncWriter<ByteBuffer> writer_;
  pb::SubscribeRequest req_;
  pb::FeedEvent event_;
  ByteBuffer out_;
  gpr_timespec start_{};
  int64_t start_ns_ = 0;
  uint32_t seq_ = 1;
  bool waiting_ = false;
};

// Upload: read messages one at a time, tallying them; the client's
// half-close is answered with the summary.
class UploadCall final : public Call {
 public:
  UploadCall(App& app, StreamsService& service, Worker& worker)
      : Call(app, worker), service_(service), reader_(&ctx_) {
    service_.RequestUpload(&ctx_, &reader_, cq(), cq(), this);
  }

 private:
  void Spawn() override { new UploadCall(app_, service_, worker_); }
  void Run() override { reader_.Read(&in_, this); }
  void Step(bool ok) override {
    if (!ok) {  // the client's half-close (or a refused message)
      if (!Encode(tally_.Summary(), &out_).ok()) {
        Fail(Status(StatusCode::INTERNAL, "the summary could not be encoded"));
        return;
      }
      Finishing();
      reader_.Finish(out_, Status::OK, this);
      return;
    }
    if (!Decode(&in_, &message_)) {
      Fail(Undecodable(uint64_t{received_} + 1));
      return;
    }
    if (!tally_.Add(message_.payload())) {
      Fail(TooMany());
      return;
    }
    received_++;
    reader_.Read(&in_, this);
  }
  void FinishWithError(const Status& st) override { reader_.FinishWithError(st, this); }

  StreamsService& service_;
  grpc::ServerAsyncReader<ByteBuffer, ByteBuffer> reader_;
  ByteBuffer in_;
  ByteBuffer out_;
  pb::StreamMessage message_;
  Tally tally_;
  uint32_t received_ = 0;
};

}  // namespace

void RequestStreams(App& app, StreamsService& service, Worker& worker) {
  new EchoCall(app, service, worker);
  new SubscribeCall(app, service, worker);
  new UploadCall(app, service, worker);
}

}  // namespace pbserver
