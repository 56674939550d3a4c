// What the operations share: the data loaded at start-up, the failure draw,
// and the contract's per-operation rules (validation, reversal, cloning).
#ifndef PROTOBENCH_CPP_GRPC_OPS_H_
#define PROTOBENCH_CPP_GRPC_OPS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "protobench/v1/protobench.pb.h"

namespace pbserver {

namespace pb = ::protobench::v1;

// CloneText's limits.
constexpr int32_t kMaxCloneTimes = 100000;
constexpr int64_t kMaxCloneBytes = int64_t{64} << 20;

// The contract's mixing function (64-bit wrapping arithmetic).
inline uint64_t Splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Request k fails when the top 53 bits of splitmix64(seed + k), as an exact
// double in [0, 1), are below rate.
inline bool Fails(uint64_t seed, uint64_t k, double rate) {
  return static_cast<double>(Splitmix64(seed + k) >> 11) * 0x1p-53 < rate;
}

// s reversed by Unicode scalar values (s is valid UTF-8: protobuf refuses a
// proto3 string that is not; a stray byte would be kept as one unit).
std::string ReverseUtf8(const std::string& s);

// The contract's file of n bytes: byte i is (i * 131 + 7) mod 251.
std::string MakeFile(size_t n);

// The data every response is built from, loaded once at start-up into
// protobuf messages (never kept encoded).
struct Data {
  pb::InventoryStatus inventory;
  pb::DeviceList devices;
  pb::ItemList items;
  pb::ObjectList people;
  pb::IntegerList integers;  // 0..9999
  pb::FileContent file_455k;
  pb::FileContent file_3m4;

  // Reads dataset.json at path with protobuf's JSON parser; builds the
  // integers and files. False with *err on failure.
  bool Load(const std::string& path, std::string* err);

  // The named file, or nullptr.
  const pb::FileContent* File(const std::string& name) const;
};

// Finds contract/<rel> by walking up from the working directory, then from
// the executable's directory. Empty if not found.
std::string FindContractFile(const std::string& rel);

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_OPS_H_
