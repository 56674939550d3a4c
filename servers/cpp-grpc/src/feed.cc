#include "feed.h"

#include <time.h>

#include <algorithm>

namespace pbserver {
namespace {

std::string CheckFeed(uint32_t count, uint32_t items, uint32_t rate) {
  if (count < 1 || count > kMaxFeedCount) {
    return "count is " + std::to_string(count) + ", expected 1..=" + std::to_string(kMaxFeedCount);
  }
  if (items > kMaxFeedItems) {
    return "items is " + std::to_string(items) + ", expected 0..=" + std::to_string(kMaxFeedItems);
  }
  if (rate > kMaxFeedRate) {
    return "rate is " + std::to_string(rate) + ", expected 0 (as fast as possible) ..=" +
           std::to_string(kMaxFeedRate);
  }
  return "";
}

}  // namespace

std::string CheckSubscribe(const pb::SubscribeRequest& r) { return CheckFeed(r.count(), r.items(), r.rate()); }

std::string CheckPoll(const pb::PollRequest& r) {
  std::string err = CheckFeed(r.count(), r.items(), r.rate());
  if (!err.empty()) return err;
  if (r.max() < 1 || r.max() > kMaxPageEvents) {
    return "max is " + std::to_string(r.max()) + ", expected 1..=" + std::to_string(kMaxPageEvents);
  }
  if (r.after() > r.count()) {
    return "after is " + std::to_string(r.after()) + ", beyond the feed's count " + std::to_string(r.count());
  }
  if (r.start_ns() < 0 || (r.rate() > 0 && r.start_ns() == 0)) {
    return "startNs is " + std::to_string(r.start_ns()) +
           ", expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)";
  }
  return "";
}

int64_t OffsetNs(uint32_t seq, uint32_t rate) {
  if (rate == 0 || seq == 0) return 0;
  // At most 999999 * 1e9 < 2^63: exact in 64-bit integers.
  return static_cast<int64_t>((uint64_t{seq} - 1) * 1000000000ULL / rate);
}

void FillEvent(const Data& data, uint32_t seq, uint32_t items, int64_t scheduled_ns, pb::FeedEvent* out) {
  out->Clear();
  out->set_seq(seq);
  out->set_scheduled_ns(scheduled_ns);
  const auto& all = data.items.items();
  const uint64_t n = static_cast<uint64_t>(all.size());
  if (n == 0) return;
  const uint64_t first = (uint64_t{std::max<uint32_t>(seq, 1)} - 1) * items;
  out->mutable_items()->Reserve(static_cast<int>(items));
  for (uint64_t j = 0; j < items; j++) *out->add_items() = all[static_cast<int>((first + j) % n)];
}

void FillPage(const Data& data, const pb::PollRequest& r, int64_t now_ns, pb::FeedPage* out) {
  out->Clear();
  const uint32_t by_items = r.items() == 0 ? UINT32_MAX : std::max<uint32_t>(kMaxPageItems / r.items(), 1);
  const uint64_t last = std::min<uint64_t>(r.count(), uint64_t{r.after()} + std::min(r.max(), by_items));
  uint32_t sent = 0;
  for (uint64_t s = uint64_t{r.after()} + 1; s <= last; s++) {
    const uint32_t seq = static_cast<uint32_t>(s);
    int64_t stamp = now_ns;
    if (r.rate() > 0) {
      const int64_t offset = OffsetNs(seq, r.rate());
      stamp = r.start_ns() > INT64_MAX - offset ? INT64_MAX : r.start_ns() + offset;
      if (stamp > now_ns) break;
    }
    FillEvent(data, seq, r.items(), stamp, out->add_events());
    sent = seq;
  }
  out->set_done(sent == r.count() || r.after() == r.count());
}

int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint32_t Fnv1a32(uint32_t hash, const std::string& bytes) {
  for (unsigned char b : bytes) {
    hash ^= b;
    hash *= 0x01000193u;
  }
  return hash;
}

bool Tally::Add(const std::string& payload) {
  if (count_ >= kMaxStreamMessages) return false;
  count_++;
  bytes_ += payload.size();
  checksum_ = Fnv1a32(checksum_, payload);
  return true;
}

pb::UploadSummary Tally::Summary() const {
  pb::UploadSummary s;
  s.set_count(count_);
  s.set_bytes(bytes_);
  s.set_checksum(checksum_);
  return s;
}

}  // namespace pbserver
