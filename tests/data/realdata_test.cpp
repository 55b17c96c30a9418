// The real CIFAR-10 archive ($CIFAR_REAL_DATA, else the default path below;
// label `realdata`): packs it and checks every class count (5000 per class in
// train, 1000 in test) and per-channel pixel sums against its .bin files.
#include <gtest/gtest.h>

#include <cstdlib>

#include "data/cifar_schema.hpp"
#include "data/hdf5_dataset.hpp"
#include "pack_check.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

TEST(RealData, PackedArchiveMatchesItsBinFiles) {
  // CIFAR_REAL_DATA names the archive; without it, data/ of the source tree.
  const char* override_path = std::getenv("CIFAR_REAL_DATA");
  const std::string archive =
      override_path ? override_path : std::string(CIFAR_SOURCE_DIR) + "/data/cifar-10-binary.tar.gz";
  ASSERT_TRUE(paths::exists(archive)) << "the real archive " << archive
                                      << " is missing; put cifar-10-binary.tar.gz there "
                                      << "(tools/download_cifar10.sh) or set CIFAR_REAL_DATA to its path";
  test::TempDir dir;
  test::extract_with_tar(archive, dir.file("extracted"));
  const std::string bins = paths::join(dir.file("extracted"), schema::kBatchesFolder);
  test::expect_pack_matches_bins(archive, bins, dir, "archive");
  const DatasetInfo info = read_dataset_info(dir.file("packed.h5"));
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(info.split("train").class_counts[c], 5000);
    EXPECT_EQ(info.split("test").class_counts[c], 1000);
  }
}

}  // namespace
}  // namespace cifar
