// The streaming operations' rules (contract/README.md "Streaming"), free of
// any I/O: the limits and the checks of a subscription's and a poll's
// request, the feed's schedule and events, a poll's page and an upload's
// summary. The clock is the caller's (a time is passed in).
#ifndef PROTOBENCH_CPP_GRPC_FEED_H_
#define PROTOBENCH_CPP_GRPC_FEED_H_

#include <cstdint>
#include <string>

#include "ops.h"
#include "protobench/v1/stream.pb.h"

namespace pbserver {

// The contract's limits.
constexpr uint32_t kMaxFeedCount = 1000000;       // events of one feed
constexpr uint32_t kMaxFeedItems = 1395;          // items of one event
constexpr uint32_t kMaxFeedRate = 1000000;        // events per second
constexpr uint32_t kMaxPageEvents = 1000;         // a poll's max
constexpr uint32_t kMaxPageItems = 16384;         // items in one poll page
constexpr uint32_t kMaxStreamMessages = 1000000;  // client messages on one stream

// Why a subscription's request is refused ("count is 0, expected
// 1..=1000000"), or "" when it is valid.
std::string CheckSubscribe(const pb::SubscribeRequest& r);

// Why a poll's request is refused, or "" when it is valid.
std::string CheckPoll(const pb::PollRequest& r);

// When event seq is due after the feed's start: floor((seq - 1) * 1e9 /
// rate) ns; 0 at rate 0.
int64_t OffsetNs(uint32_t seq, uint32_t rate);

// Event seq of a feed with `items` items per event, stamped scheduled_ns:
// the dataset's items ((seq - 1) * items + j) mod 1395, j = 0..items.
void FillEvent(const Data& data, uint32_t seq, uint32_t items, int64_t scheduled_ns, pb::FeedEvent* out);

// The page a (valid) poll gets at now_ns: the due events after `after`, at
// most `max` and at most kMaxPageItems items in all (at least one event).
void FillPage(const Data& data, const pb::PollRequest& r, int64_t now_ns, pb::FeedPage* out);

// The wall clock (CLOCK_REALTIME) in ns since the Unix epoch.
int64_t NowNs();

// 32-bit FNV-1a of bytes, continued from hash (start at kFnvOffset).
constexpr uint32_t kFnvOffset = 0x811C9DC5u;
uint32_t Fnv1a32(uint32_t hash, const std::string& bytes);

// An upload's running summary.
class Tally {
 public:
  // Counts one payload; false (nothing counted) past kMaxStreamMessages.
  bool Add(const std::string& payload);
  pb::UploadSummary Summary() const;

 private:
  uint32_t count_ = 0;
  uint64_t bytes_ = 0;
  uint32_t checksum_ = kFnvOffset;
};

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_FEED_H_
