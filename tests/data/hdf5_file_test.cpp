// The HDF5 reader against known data and against every kind of broken file:
// each failure must be one DataError naming the file and the dataset.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>

#include "data/cifar_schema.hpp"
#include "data/hdf5_dataset.hpp"
#include "data/md5.hpp"
#include "test_files.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using test::TempDir;

// Runs `f`, expects a DataError, and returns its message.
template <typename F>
std::string data_error_of(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    std::printf("DataError: %s\n", e.what());  // shown in the test log: the message users see
    return e.what();
  }
  ADD_FAILURE() << "no DataError was thrown";
  return "";
}

TEST(Hdf5File, RoundTripsSyntheticDataWithStatistics) {
  TempDir dir;
  const CifarData data = make_synthetic_cifar(300, 100, 3);
  const std::string path = dir.file("rt.h5");
  write_cifar_h5(path, data, {/*gzip_level=*/4});
  const DatasetInfo info = read_dataset_info(path);
  EXPECT_EQ(info.schema_version, schema::kSchemaVersion);
  EXPECT_EQ(info.class_names, schema::default_class_names());
  EXPECT_EQ(info.source.kind, "synthetic");
  EXPECT_EQ(info.source.md5, data.source.md5);
  const Split train = read_split(path, "train");
  ASSERT_EQ(train.size(), 300);
  EXPECT_TRUE(torch::equal(train.images.flatten(),
                           torch::from_blob(const_cast<uint8_t*>(data.train.images.data()), {300 * 3072}, torch::kUInt8)));
  const auto counts = count_classes(data.train);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train.labels.eq(c).sum().item<int64_t>(), counts[c]);
    EXPECT_EQ(info.split("train").class_counts[c], counts[c]);
  }
  // Stored mean/std equal those of the pixels read back.
  const torch::Tensor px = train.images.to(torch::kDouble).div(255).transpose(0, 1).reshape({3, -1});
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(info.split("train").mean[c], px[c].mean().item<double>(), 1e-9);
    EXPECT_NEAR(info.split("train").std[c], px[c].std(/*unbiased=*/false).item<double>(), 1e-9);
  }
}

TEST(Hdf5File, ReadsARangeWithHyperslabs) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  const Split all = read_split(path, "test");
  const Split part = read_split(path, "test", 37, 25);
  EXPECT_EQ(part.begin, 37);
  EXPECT_TRUE(torch::equal(part.images, all.images.narrow(0, 37, 25)));
  EXPECT_TRUE(torch::equal(part.labels, all.labels.narrow(0, 37, 25)));
  EXPECT_THROW(read_split(path, "test", 90, 20), DataError);
}

TEST(Hdf5File, MissingFileIsOneClearError) {
  const std::string msg = data_error_of([] { read_split("/nonexistent/cifar.h5", "train"); });
  EXPECT_NE(msg.find("/nonexistent/cifar.h5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

TEST(Hdf5File, NonHdf5FileIsOneClearError) {
  TempDir dir;
  const std::string path = dir.file("text.h5");
  std::ofstream(path) << "this is not HDF5\n";
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not an HDF5 file"), std::string::npos) << msg;
}

TEST(Hdf5File, TruncatedFileIsOneClearError) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  test::resize_file(path, test::file_size(path) / 2);
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(Hdf5File, MissingDatasetIsNamed) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Ldelete(f, "/test/labels", H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset /test/labels is missing"), std::string::npos) << msg;
}

TEST(Hdf5File, LabelsOutOfRangeAreNamed) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/train/labels", H5P_DEFAULT);
    hid_t fs = H5Dget_space(d);
    const hsize_t start = 123, one = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &one, nullptr);
    hid_t ms = H5Screate_simple(1, &one, nullptr);
    const uint8_t bad = 12;
    ASSERT_GE(H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, &bad), 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
  }
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find("/train/labels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outside 0..9 (first at sample 123, value 12)"), std::string::npos) << msg;
}

TEST(Hdf5File, FlippedByteInAChunkIsAChecksumErrorNamingTheDataset) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  haddr_t chunk_offset = 0;
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/train/images", H5P_DEFAULT);
    hsize_t chunk_size = 0;
    unsigned filter_mask = 0;
    hsize_t coords[4] = {0, 0, 0, 0};
    ASSERT_GE(H5Dget_chunk_info_by_coord(d, coords, &filter_mask, &chunk_offset, &chunk_size), 0);
    ASSERT_GT(chunk_size, 2000u);
    H5Dclose(d);
    H5Fclose(f);
  }
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(chunk_offset + 1000));
    char byte = 0;
    io.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x01);
    io.seekp(static_cast<std::streamoff>(chunk_offset + 1000));
    io.write(&byte, 1);
  }
  EXPECT_NO_THROW(read_split(path, "test"));  // other datasets stay readable
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("dataset /train/images"), std::string::npos) << msg;
  EXPECT_NE(msg.find("checksum error"), std::string::npos) << msg;
}

// Replaces dataset `name` in `path` by a chunked uint8 dataset of `dims`
// (chunks of `chunk_rows` rows, Fletcher32 when `checksum`) of which only the
// first `rows_written` rows are written, and sets its group's count to
// dims[0]: a file that declares more than it holds.
void replace_dataset(const std::string& path, const std::string& name, std::vector<hsize_t> dims, hsize_t chunk_rows,
                     hsize_t rows_written, bool checksum) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GE(H5Ldelete(f, name.c_str(), H5P_DEFAULT), 0);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  std::vector<hsize_t> chunk = dims;
  chunk[0] = chunk_rows;
  H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  if (checksum) H5Pset_fletcher32(dcpl);
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t d = H5Dcreate2(f, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  count[0] = rows_written;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  hid_t mem = H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr);
  hsize_t bytes = 1;
  for (hsize_t c : count) bytes *= c;
  const std::vector<uint8_t> ones(bytes, 1);  // labels 1, images 1: valid values
  ASSERT_GE(H5Dwrite(d, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, ones.data()), 0);
  const std::string group_name = name.substr(0, name.rfind('/'));
  hid_t group = H5Gopen2(f, group_name.c_str(), H5P_DEFAULT);
  ASSERT_GE(H5Adelete(group, schema::kAttrCount), 0);
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(group, schema::kAttrCount, H5T_NATIVE_INT64, scalar, H5P_DEFAULT, H5P_DEFAULT);
  const int64_t n = static_cast<int64_t>(dims[0]);
  ASSERT_GE(H5Awrite(attr, H5T_NATIVE_INT64, &n), 0);
  H5Aclose(attr);
  H5Sclose(scalar);
  H5Gclose(group);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Fclose(f);
}

// A chunk that was never written reads back as zeros without a word; the
// reader refuses the dataset instead, naming it.
TEST(Hdf5File, UnwrittenChunksAreRefusedNamingTheDataset) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);  // 300 training samples
  replace_dataset(path, "/train/images", {300, 3, 32, 32}, 100, 100, true);
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find("dataset /train/images: declares 3 chunk(s) of data but only 1 were ever written"),
            std::string::npos) << msg;
}

TEST(Hdf5File, DatasetsWithoutTheChecksumFilterAreRefused) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  replace_dataset(path, "/train/labels", {300}, 100, 300, false);
  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  EXPECT_NE(msg.find("dataset /train/labels: has no Fletcher32 checksum filter"), std::string::npos) << msg;
}

// 1.7 million images declared in a file of a few MB: refused from the
// metadata, before the 5.3 GB a rank would allocate for them.
TEST(Hdf5File, ADeclaredSizeTheFileCannotHoldIsRefusedBeforeAllocating) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  replace_dataset(path, "/train/labels", {1700000}, 16384, 16384, true);
  replace_dataset(path, "/train/images", {1700000, 3, 32, 32}, 1024, 1024, true);
  EXPECT_LT(test::file_size(path), 8 << 20);
  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  EXPECT_NE(msg.find("declares 1661 chunk(s) of data but only 1 were ever written"), std::string::npos) << msg;
  EXPECT_NE(data_error_of([&] { read_split(path, "train"); }).find("were ever written"), std::string::npos);
}

// --normalize dataset divides by the stored std: a NaN or a zero there is
// refused when the file is opened.
TEST(Hdf5File, StatisticsOutsideWhatPixelsAllowAreRefused) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  {
    // Through the group: HDF5 1.10 cannot write an attribute opened with H5Aopen_by_name.
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t group = H5Gopen2(f, "/train", H5P_DEFAULT);
    hid_t attr = H5Aopen(group, schema::kAttrStd, H5P_DEFAULT);
    const double bad[3] = {0.25, 0.0, std::numeric_limits<double>::quiet_NaN()};
    ASSERT_GE(H5Awrite(attr, H5T_NATIVE_DOUBLE, bad), 0);
    H5Aclose(attr);
    H5Gclose(group);
    H5Fclose(f);
  }
  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  EXPECT_NE(msg.find("group /train: channel 1 has mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("and std 0; pixel/255 has a mean in [0, 1] and a std in (0, 0.5]"), std::string::npos) << msg;
}

TEST(Hdf5File, WriterRejectsBadLabelsAndLeavesNoFileBehind) {
  TempDir dir;
  CifarData data = make_synthetic_cifar(20, 10, 1);
  data.train.labels[4] = 10;
  const std::string path = dir.file("bad.h5");
  EXPECT_THROW(write_cifar_h5(path, data), DataError);
  EXPECT_TRUE(paths::list(paths::parent(path)).empty());
}

TEST(Md5, MatchesRfc1321Vectors) {
  auto md5 = [](const std::string& s) {
    Md5 h;
    h.update(s.data(), s.size());
    return h.hex_digest();
  };
  EXPECT_EQ(md5(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

// The offset of the free-space object (index 0) in the file's first global
// heap collection ("GCOL"), walked over the used objects before it.
size_t free_space_object_offset(const std::string& bytes) {
  const size_t collection = bytes.find("GCOL");
  EXPECT_NE(collection, std::string::npos);
  size_t p = collection + 16;  // signature, version, reserved, collection size
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
    return v;
  };
  while (static_cast<unsigned char>(bytes[p]) != 0 || bytes[p + 1] != 0) p += 16 + (u64(p + 8) + 7) / 8 * 8;
  return p;
}

// The class names' strings live in a global heap collection without a
// checksum. One whose free-space object has size 0 made HDF5 1.10 loop forever
// reading them (the hdf5 fuzz harness's finding, tests/fuzz/regression/hdf5);
// it is refused, naming the collection and the object.
TEST(Hdf5File, GlobalHeapObjectOfSizeZeroIsRefusedNotReadForever) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t collection = bytes.find("GCOL");
  const size_t object = free_space_object_offset(bytes);
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(object + 8), bytes.begin() + static_cast<std::ptrdiff_t>(object + 16), '\0');
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  const std::string expected = "global heap collection at byte " + std::to_string(collection) + ": damaged: object 0 at byte " +
                               std::to_string(object) + " has size 0, which HDF5 would read forever";
  EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

// The fuzz harness's own input (a mutated synthetic file): the same refusal.
TEST(Hdf5File, FuzzRegressionInputIsRefusedNotReadForever) {
  const std::string path = std::string(CIFAR_TEST_DATA_DIR) + "/../fuzz/regression/hdf5/timeout-global-heap-object-of-size-0.h5";
  const std::string msg = data_error_of([&] { read_dataset_info(path); });
  EXPECT_NE(msg.find("global heap collection at byte 4096: damaged: object 0 at byte 4568 has size 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cifar
