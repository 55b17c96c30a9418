// Known answers of check_torch_archive() (src/integrity/torch_archive.hpp): the
// archives torch writes pass (pickle_save's, and an optimiser state's
// TorchScript archive with its deflated records); every size LibTorch 1.13
// would allocate from, patched into such a file, is refused naming the entry
// and what is wrong; every optimiser's state has source files of the shape
// check_module_sources() accepts, and a damaged line is refused. Every
// entry's bytes are checked against its CRC-32: a byte changed in any entry
// of the committed checkpoints (every format version) and of a Python-written
// model file is refused naming the entry. The size and pickle checks behind
// the CRC-32 check are tested on damaged files whose CRC-32s were repaired
// (tests/support/zip_crcs.hpp), as a writer of those bytes would have them.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "integrity/torch_archive.hpp"
#include "model/model.hpp"
#include "optim/optimizer.hpp"
#include "support/zip_crcs.hpp"
#include "util/crc32.hpp"

namespace cifar {
namespace {

// {"w": 12 floats}: one storage of 48 bytes, "archive/data/0".
std::vector<char> pickled_dict() {
  c10::Dict<std::string, at::Tensor> d;
  d.insert("w", torch::arange(12, torch::kFloat));
  return torch::pickle_save(c10::IValue(d));
}

// An Adam state as the checkpoint holds it: a TorchScript archive.
std::string optimizer_archive() {
  torch::manual_seed(3);
  auto fc = torch::nn::Linear(4, 3);
  torch::optim::Adam adam(fc->parameters());
  adam.zero_grad();
  fc->forward(torch::randn({2, 4})).sum().backward();
  adam.step();
  torch::serialize::OutputArchive archive;
  adam.save(archive);
  std::ostringstream os;
  archive.save_to(os);
  return os.str();
}

size_t find(const std::vector<char>& b, const std::string& s, size_t from = 0) {
  const auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(), s.begin(), s.end());
  EXPECT_NE(it, b.end()) << "no '" << s << "' in the archive";
  return static_cast<size_t>(it - b.begin());
}

// The central directory header of entry `name`.
size_t central_entry(const std::vector<char>& b, const std::string& name) {
  return find(b, name, find(b, "PK\x01\x02")) - 46;
}

void put(std::vector<char>& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// check_torch_archive's refusal of the bytes as they are, or "" when it accepts them.
std::string raw_refusal(const std::vector<char>& b) {
  try {
    check_torch_archive(b.data(), b.size());
  } catch (const ArchiveError& e) {
    return e.what();
  }
  return "";
}
// ... of the bytes with their CRC-32s repaired: the checks behind the CRC-32 check.
std::string refusal(const std::vector<char>& b) { return raw_refusal(test::with_zip_crcs_restored(b)); }

void expect_refusal(const std::vector<char>& b, const std::vector<std::string>& parts) {
  const std::string why = refusal(b);
  ASSERT_FALSE(why.empty()) << "accepted";
  for (const auto& p : parts) EXPECT_NE(why.find(p), std::string::npos) << why;
}

TEST(ArchiveCheck, ArchivesAsTorchWritesThemPass) {
  EXPECT_EQ(refusal(pickled_dict()), "");
  const std::string state = optimizer_archive();
  const std::vector<char> bytes(state.begin(), state.end());
  EXPECT_EQ(refusal(bytes), "");
  // It has deflated records (source files, source-range pickles over 200 bytes).
  bool deflated = false;
  const std::string sig = "PK\x01\x02";
  for (auto it = bytes.begin(); (it = std::search(it, bytes.end(), sig.begin(), sig.end())) != bytes.end(); ++it)
    if (bytes.end() - it >= 46 && it[10] == 8) deflated = true;
  EXPECT_TRUE(deflated);
}

TEST(ArchiveCheck, ZipEntrySizesPastTheFileAreRefused) {
  const std::vector<char> good = pickled_dict();
  const size_t entry = central_entry(good, "archive/data/0");
  std::vector<char> b = good;  // both sizes 4 GB: LibTorch would malloc that much
  put(b, entry + 20, 0xFFFFFFF0u, 4);
  put(b, entry + 24, 0xFFFFFFF0u, 4);
  expect_refusal(b, {"zip entry 'archive/data/0' claims 4,294,967,280 bytes at byte ", "past the archive's data"});
  b = good;  // stored, with an uncompressed size of its own
  put(b, entry + 24, 0x40000000, 4);
  expect_refusal(b,
                 {"zip entry 'archive/data/0' is stored, but claims 1,073,741,824 bytes uncompressed and 48 stored"});
  b = good;  // "deflated" 48 bytes claiming 1 GB
  put(b, entry + 10, 8, 2);
  put(b, entry + 24, 0x40000000, 4);
  expect_refusal(b, {"zip entry 'archive/data/0' claims 1,073,741,824 bytes uncompressed from 48 deflated, more than "
                     "deflate can expand"});
  b = good;  // the zip64 end record (torch writes one) placing the central directory at the file's end
  const size_t zip64_end = b.size() - 22 - 20 - 56;
  ASSERT_EQ(std::string(&b[zip64_end], 4), "PK\x06\x06");
  put(b, zip64_end + 48, b.size(), 8);
  expect_refusal(b, {"zip central directory of ", "reaches past the file's "});
}

TEST(ArchiveCheck, PickleSizesPastThePickleAreRefused) {
  const std::vector<char> good = pickled_dict();
  const size_t key = find(good, std::string("X\x01\x00\x00\x00w", 6));  // BINUNICODE "w"
  std::vector<char> b = good;  // a 2 GB string: LibTorch would allocate it before reading
  put(b, key + 1, 0x7FFFFFFF, 4);
  expect_refusal(b,
                 {"pickle 'archive/data.pkl' (byte ", "BINUNICODE claims a string of 2,147,483,647 bytes, but only "});
  b = good;  // a memo index out of order: LibTorch grows its memo table to it (16 bytes an entry)
  ASSERT_EQ(b[key + 6], 'q');
  put(b, key + 7, 200, 1);
  expect_refusal(b, {"pickle 'archive/data.pkl' (byte ", "memo index 200 stored after only "});
  b = good;  // a storage of 255 floats in a record of 48 bytes
  const size_t cpu = find(good, "cpu");
  ASSERT_EQ(b[cpu + 3], 'q');
  ASSERT_EQ(b[cpu + 5], 'K');
  ASSERT_EQ(b[cpu + 6], 12);
  put(b, cpu + 6, 255, 1);
  expect_refusal(b, {"storage '0' claims 255 elements of 4 bytes, more than its record 'archive/data/0' holds (48 "
                     "bytes)"});
  b = good;  // an opcode LibTorch does not read
  put(b, key, 'V', 1);
  expect_refusal(b, {"opcode 0x56, which LibTorch's unpickler does not read"});
}

std::string source_refusal(std::string b) {
  b = test::with_zip_crcs_restored(b);
  try {
    check_torch_archive(b.data(), b.size());
    check_module_sources(b.data(), b.size());
  } catch (const ArchiveError& e) {
    return e.what();
  }
  return "";
}

TEST(ArchiveCheck, EveryOptimisersStateHasTheSourcesTorchWritesForAttributes) {
  torch::manual_seed(4);
  const auto model = make_model("convnet");
  for (const std::string& name : optimizer_names()) {
    for (const bool fused : {false, true}) {
      if (fused && name != "adam" && name != "sgd") continue;
      OptimConfig config;
      config.optimizer = name;
      config.fused = fused;
      Optimizer optimizer(config, model->parameter_groups());
      optimizer.zero_grad();
      model->forward(torch::randn({2, 3, 32, 32})).square().mean().backward();
      optimizer.step();
      torch::serialize::OutputArchive archive;
      optimizer.torch_optimizer().save(archive);
      std::ostringstream os;
      archive.save_to(os);
      EXPECT_EQ(source_refusal(os.str()), "") << name << (fused ? " (fused)" : "");
    }
  }
}

// The checkpoint fuzz finding: "__parameters__" damaged into "__annotations_",
// a class constant without a type, on which LibTorch 1.13's compiler crashed.
TEST(ArchiveCheck, ASourceLineTorchDoesNotWriteIsRefused) {
  std::string b = optimizer_archive();
  const std::string line = "  __parameters__ = []\n  __buffers__ = []\n  step : int";
  const size_t at = b.find(line);
  ASSERT_NE(at, std::string::npos);
  b.replace(at + 2, 14, "__annotations_");
  const std::string why = source_refusal(b);
  for (const char* part : {"source 'archive/code/__torch__/___torch_mangle_",
                           ".py' line 2 is not one torch writes for a "
                           "module of attributes: '  __annotations_ = []'"})
    EXPECT_NE(why.find(part), std::string::npos) << why;
}

// The zip's entries as (name, data offset, length, method), read the simple
// way (torch's files: no zip64 sizes below 4 GB): the central directory the
// end record points to, walked entry by entry. Searching the whole file for
// the central directory's signature instead could also find it inside an
// entry's bytes.
struct TestEntry {
  std::string name;
  size_t data, length;
  int method;
};
std::vector<TestEntry> entries_of(const std::vector<char>& b) {
  auto le = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
    return static_cast<size_t>(v);
  };
  std::vector<TestEntry> out;
  const std::string end_sig = "PK\x05\x06";
  const auto end = std::find_end(b.begin(), b.end(), end_sig.begin(), end_sig.end());
  EXPECT_NE(end, b.end()) << "no end record";
  if (end == b.end()) return out;
  const size_t e = static_cast<size_t>(end - b.begin());
  size_t c = le(e + 16, 4);
  for (size_t i = 0, count = le(e + 10, 2); i < count; ++i) {
    EXPECT_EQ(std::string(&b[c], 4), "PK\x01\x02") << "central directory entry " << i;
    const size_t header = le(c + 42, 4);
    EXPECT_EQ(std::string(&b[header], 4), "PK\x03\x04") << "local header of entry " << i;
    out.push_back({std::string(&b[c + 46], le(c + 28, 2)), header + 30 + le(header + 26, 2) + le(header + 28, 2),
                   le(c + 20, 4), static_cast<int>(le(c + 10, 2))});
    c += 46 + le(c + 28, 2) + le(c + 30, 2) + le(c + 32, 2);
  }
  return out;
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Entry `name`'s bytes as LibTorch's zip reader gives them (inflated).
std::string record_of(const std::vector<char>& b, const std::string& name) {
  std::istringstream in(std::string(b.begin(), b.end()));
  caffe2::serialize::PyTorchStreamReader reader(&in);
  const auto record = reader.getRecord(name.substr(name.find('/') + 1));
  return {static_cast<const char*>(std::get<0>(record).get()), std::get<1>(record)};
}

// A byte changed in the middle of any entry, stored or deflated, is refused
// naming that entry, unless it changes nothing the archive holds: a deflate
// stream has bits that decoding does not read, and a changed one leaves the
// entry's inflated bytes (which its CRC-32 covers) as they were. The CRC-32
// field itself changed is refused too.
void expect_every_entry_checked(const std::vector<char>& good, const std::string& what) {
  ASSERT_EQ(raw_refusal(good), "") << what;
  const auto entries = entries_of(good);
  ASSERT_GE(entries.size(), 3u) << what;
  for (const TestEntry& e : entries) {
    if (e.length == 0) continue;
    std::vector<char> b = good;
    b[e.data + e.length / 2] ^= 0x5A;
    const std::string why = raw_refusal(b);
    if (why.empty() && e.method == 8) {
      EXPECT_EQ(record_of(b, e.name), record_of(good, e.name)) << what << ": '" << e.name << "' accepted, changed";
      continue;
    }
    const std::string where = what + ", entry '" + e.name + "' (method " + std::to_string(e.method) + ", byte " +
                              std::to_string(e.data + e.length / 2) + " changed): ";
    EXPECT_NE(why.find("zip entry '" + e.name + "'"), std::string::npos) << where << why;
    EXPECT_TRUE(why.find("does not match its CRC-32") != std::string::npos ||
                (e.method == 8 && why.find("does not inflate") != std::string::npos))
        << where << why;
  }
}

TEST(ArchiveCheck, ZipCrc32IsTheStandardOne) {
  // What torch's miniz writes in every entry's header: crc32("123456789").
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  const std::vector<char> b = pickled_dict();
  const auto entries = entries_of(b);
  const auto data =
      std::find_if(entries.begin(), entries.end(), [](const TestEntry& e) { return e.name == "archive/data/0"; });
  ASSERT_NE(data, entries.end());
  const at::Tensor w = torch::arange(12, torch::kFloat);
  EXPECT_EQ(crc32(w.data_ptr(), 48), crc32(&b[data->data], data->length));
}

TEST(ArchiveCheck, AByteChangedInAnyEntryIsRefusedNamingIt) {
  expect_every_entry_checked(pickled_dict(), "pickle_save's dict");
  const std::string state = optimizer_archive();
  expect_every_entry_checked(std::vector<char>(state.begin(), state.end()), "an Adam state (with deflated entries)");
  for (int version = 1; version <= 3; ++version) {
    const std::string path = std::string(CIFAR_CHECKPOINT_FORMATS_DIR) + "/format-" + std::to_string(version) + ".pt";
    expect_every_entry_checked(file_bytes(path), path);
  }
  // The CRC-32 recorded in data/0's central directory entry, changed.
  std::vector<char> b = pickled_dict();
  b[central_entry(b, "archive/data/0") + 16] ^= 1;
  EXPECT_EQ(refusal(b), "");  // repaired: the bytes are as written
  EXPECT_NE(raw_refusal(b).find("zip entry 'archive/data/0' does not match its CRC-32"), std::string::npos)
      << raw_refusal(b);
}

// unpickle_zip (checkpoints and model files) checks before LibTorch reads:
// the damage is reported as such, naming the entry.
TEST(ArchiveCheck, DamagedTensorBytesAreRefusedBeforeAnyTensorIsBuilt) {
  std::vector<char> b = pickled_dict();
  const auto entries = entries_of(b);
  for (const TestEntry& e : entries)
    if (e.name == "archive/data/0") std::memset(&b[e.data + 8], 0x7F, 4);  // a float turned NaN
  try {
    unpickle_zip(b);
    ADD_FAILURE() << "a damaged tensor was decoded";
  } catch (const DamagedArchiveError& e) {
    EXPECT_EQ(e.entry(), "archive/data/0");
  }
}

}  // namespace
}  // namespace cifar
