#include "ops.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "dataset.pb.h"

namespace pbserver {

std::string ReverseUtf8(const std::string& s) {
  const size_t n = s.size();
  std::string out(n, '\0');
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (len > n - i) len = 1;
    // The scalar at [i, i+len) lands at the mirrored position, bytes in order.
    s.copy(&out[n - i - len], len, i);
    i += len;
  }
  return out;
}

std::string MakeFile(size_t n) {
  std::string b(n, '\0');
  for (size_t i = 0; i < n; i++) b[i] = static_cast<char>((i * 131 + 7) % 251);
  return b;
}

bool Data::Load(const std::string& path, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = "cannot read the dataset " + path + " (PROTOBENCH_DATASET)";
    return false;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  protobench::cppserver::Dataset ds;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(buf.str(), &ds, opts);
  if (!st.ok()) {
    *err = "cannot parse the dataset " + path + ": " + std::string(st.message());
    return false;
  }
  inventory.Swap(ds.mutable_inventory_status());
  devices.mutable_devices()->Swap(ds.mutable_devices());
  items.mutable_items()->Swap(ds.mutable_items());
  people.mutable_people()->Swap(ds.mutable_people());

  integers.mutable_values()->Reserve(10000);
  for (int32_t i = 0; i < 10000; i++) integers.add_values(i);
  file_455k.set_name("file-455k");
  file_455k.set_content(MakeFile(455000));
  file_3m4.set_name("file-3m4");
  file_3m4.set_content(MakeFile(3400000));
  return true;
}

const pb::FileContent* Data::File(const std::string& name) const {
  if (name == file_455k.name()) return &file_455k;
  if (name == file_3m4.name()) return &file_3m4;
  return nullptr;
}

namespace {

bool Exists(const std::string& p) { return access(p.c_str(), R_OK) == 0; }

std::string SearchUp(std::string dir, const std::string& rel) {
  while (!dir.empty()) {
    std::string p = dir + "/contract/" + rel;
    if (Exists(p)) return p;
    size_t slash = dir.rfind('/');
    if (slash == std::string::npos || dir == "/") break;
    dir = slash == 0 ? "/" : dir.substr(0, slash);
  }
  return "";
}

}  // namespace

std::string FindContractFile(const std::string& rel) {
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) != nullptr) {
    std::string p = SearchUp(buf, rel);
    if (!p.empty()) return p;
  }
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    std::string exe(buf);
    std::string p = SearchUp(exe.substr(0, exe.rfind('/')), rel);
    if (!p.empty()) return p;
  }
  return "";
}

}  // namespace pbserver
