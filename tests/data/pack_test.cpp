// cifar_pack's packing path end to end on an archive (and a folder) that the
// test generates in the official binary layout; see pack_check.hpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fstream>
#include <iterator>
#include <tuple>

#include "data/cifar_schema.hpp"
#include "pack/cifar_binary.hpp"
#include "pack/packer.hpp"
#include "pack_check.hpp"
#include "test_files.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {
using test::expect_pack_matches_bins;
using test::extract_with_tar;

TEST(Pack, GeneratedArchiveMatchesItsBinFiles) {
  test::TempDir dir;
  const std::string archive = dir.file("synthetic-cifar-10-binary.tar.gz");
  write_cifar10_binary(make_synthetic_cifar(50000, 10000, 11), archive);
  extract_with_tar(archive, dir.file("extracted"));
  const std::string bins = paths::join(dir.file("extracted"), schema::kBatchesFolder);
  // The archive is not the official one: accepted after the structure check, with a note.
  expect_pack_matches_bins(archive, bins, dir, "archive");
  // The extracted folder packs to the same data.
  expect_pack_matches_bins(dir.file("extracted"), bins, dir, "folder");
}

// The gzip trailer's CRC-32 (libarchive does not compare it): one byte
// changed in the middle of the archive (random pixels compress little, so it
// lies in a stored deflate block and decompresses without an error) or in
// the trailer itself is refused as damage, before anything is packed.
TEST(Pack, AnArchiveWithAChangedByteIsRefusedAsDamaged) {
  test::TempDir dir;
  const std::string archive = dir.file("release.tar.gz");
  write_cifar10_binary(make_synthetic_cifar(50000, 10000, 13), archive);
  std::ifstream in(archive, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const size_t at : {good.size() / 2, good.size() - 6}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    const std::string path = dir.file("damaged.tar.gz");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    try {
      read_cifar10_binary(path);
      ADD_FAILURE() << "a changed byte at " << at << " was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("archive '" + path +
                                           "' is damaged (changed after it was written): its "
                                           "decompressed bytes have CRC-32 "),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Pack, RejectsAWrongStructure) {
  test::TempDir dir;
  write_cifar10_binary(make_synthetic_cifar(50000, 10000, 12), dir.file("layout"));
  const std::string bins = paths::join(dir.file("layout"), schema::kBatchesFolder);
  test::resize_file(paths::join(bins, "data_batch_3.bin"), 30730000 - 3073);
  try {
    pack_cifar10(dir.file("layout"), dir.file("x.h5"));
    FAIL() << "a short batch file was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_3.bin has 30726927 bytes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(paths::exists(dir.file("x.h5")));
}

// A regression input of the cifar_binary fuzz harness: a 101-byte .tar.gz
// whose only header claims a 4 GiB data_batch_1.bin. The claim is refused,
// naming the entry and its size, before anything is allocated for it.
TEST(Pack, RefusesAnArchiveEntryClaimingMoreThanABatchFile) {
  const std::string archive =
      std::string(CIFAR_TEST_DATA_DIR) + "/../fuzz/regression/cifar_binary/archive-entry-claims-4GiB.tar.gz";
  try {
    read_cifar10_binary(archive);
    FAIL() << "the archive was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_1.bin claims 4294967296 bytes"), std::string::npos) << e.what();
  }
}

// A ustar header for a regular file `name` that claims `size` bytes, and no
// data: what a hostile archive of a hundred bytes holds.
std::string tar_header(const std::string& name, unsigned long long size) {
  std::string h(512, '\0');
  auto put = [&](size_t offset, const std::string& value) { h.replace(offset, value.size(), value); };
  put(0, name);
  put(100, "0000644");
  put(108, "0000000");
  put(116, "0000000");
  put(124, strprintf("%011llo", size));
  put(136, "00000000000");
  h[156] = '0';  // a regular file
  put(257, std::string("ustar\0"
                       "00",
                       8));
  put(148, "        ");  // the checksum counts its own field as spaces
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put(148, strprintf("%06o", sum));
  h[154] = '\0';
  return h;
}

// Sizes in an archive's headers are checked against what the release allows
// before anything is allocated: a 4 GiB claim used to allocate 4.3 GB.
TEST(Pack, MemberSizesBeyondTheReleaseAreRefusedBeforeReading) {
  test::TempDir dir;
  for (const auto& [name, size, expected] :
       {std::tuple<std::string, unsigned long long, std::string>{
            "cifar-10-batches-bin/data_batch_1.bin", 4ull << 30,
            "data_batch_1.bin claims 4294967296 bytes, more than the 30730000 of a CIFAR-10 batch file"},
        {"cifar-10-batches-bin/batches.meta.txt", 1ull << 20,
         "batches.meta.txt claims 1048576 bytes, more than the 65536 a class-name list may have"}}) {
    const std::string archive = dir.file("hostile.tar");
    std::ofstream(archive, std::ios::binary) << tar_header(name, size);
    try {
      read_cifar10_binary(archive);
      FAIL() << "accepted " << name;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("refused before reading it"), std::string::npos) << e.what();
    }
  }
}

// A class-name list that is present but not ten printable names is refused,
// never replaced by the default names in silence.
TEST(Pack, AClassNameListThatIsNotTenNamesIsRefused) {
  test::TempDir dir;
  write_cifar10_binary(make_synthetic_cifar(50000, 10000, 14), dir.file("layout"));
  const std::string meta = paths::join(paths::join(dir.file("layout"), schema::kBatchesFolder), schema::kMetaFile);
  for (const auto& [text, expected] :
       {std::pair<std::string, std::string>{"garbage\n", "holds 1 line(s), not the 10"},
        {std::string("a\nb\nc\nd\ne\nf\ng\nh\ni\n\x01j\n"), "holds 10 line(s) with unprintable bytes"}}) {
    std::ofstream(meta, std::ios::trunc) << text;
    try {
      read_cifar10_binary(dir.file("layout"));
      ADD_FAILURE() << "accepted " << text;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("batches.meta.txt " + expected), std::string::npos) << e.what();
    }
  }
}

// A member stored as a hard link (GNU tar stores a second name of one file
// that way) holds its target's bytes.
TEST(Pack, AHardLinkedMemberHoldsItsTargetsBytes) {
  test::TempDir dir;
  write_cifar10_binary(make_synthetic_cifar(50000, 10000, 15), dir.file("layout"));
  const std::string bins = paths::join(dir.file("layout"), schema::kBatchesFolder);
  const std::string test_batch = paths::join(bins, "test_batch.bin");
  ASSERT_EQ(std::remove(test_batch.c_str()), 0);
  ASSERT_EQ(::link(paths::join(bins, "data_batch_5.bin").c_str(), test_batch.c_str()), 0);
  const std::string archive = dir.file("linked.tar.gz");
  ASSERT_EQ(std::system(("tar -czf " + archive + " -C " + dir.file("layout") + " " + schema::kBatchesFolder).c_str()),
            0);
  const CifarData data = read_cifar10_binary(archive);
  ASSERT_EQ(data.test.count(), 10000);
  const size_t batch_bytes = 10000 * schema::kImageBytes;
  EXPECT_TRUE(std::equal(data.test.images.begin(), data.test.images.end(),
                         data.train.images.end() - static_cast<std::ptrdiff_t>(batch_bytes)));
}

}  // namespace
}  // namespace cifar
