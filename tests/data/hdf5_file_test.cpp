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
#include "pack/hdf5_writer.hpp"
#include "test_files.hpp"
#include "util/error.hpp"
#include "util/md5.hpp"
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
  EXPECT_TRUE(torch::equal(train.images.flatten(), torch::from_blob(const_cast<uint8_t*>(data.train.images.data()),
                                                                    {300 * 3072}, torch::kUInt8)));
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

// A PackedFile checks the file and opens it once: both splits come from the
// file it opened, even if cifar_pack replaces the file (write, then rename)
// between the reads -- a run never mixes two packings, and never pays for a
// second checksum pass over the file.
TEST(Hdf5File, APackedFileReadsEverySplitFromTheFileItOpened) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir, 40, 30, /*seed=*/1);
  const Split first_train = read_split(path, "train"), first_test = read_split(path, "test");
  const PackedFile file(path);
  write_cifar_h5(path, make_synthetic_cifar(40, 30, /*seed=*/2));  // the other packing, renamed over the path
  ASSERT_FALSE(torch::equal(read_split(path, "train").images, first_train.images));
  const Split train = file.split("train"), test = file.split("test"), shard = file.split("train", 10, 5);
  EXPECT_TRUE(torch::equal(train.images, first_train.images));
  EXPECT_TRUE(torch::equal(train.labels, first_train.labels));
  EXPECT_TRUE(torch::equal(test.images, first_test.images));
  EXPECT_TRUE(torch::equal(shard.images, first_train.images.narrow(0, 10, 5)));
  EXPECT_EQ(file.info().split("train").count, 40);
  EXPECT_EQ(file.info().path, path);
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
    test::reseal(path);
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
    test::reseal(path);
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
  // The checksum header refuses the whole file first (FlippedByteAnywhere...);
  // resealed, the damage is left to the chunk's own Fletcher32 checksum.
  test::reseal(path);
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
  test::reseal(path);
}

// A chunk that was never written reads back as zeros without a word; the
// reader refuses the dataset instead, naming it.
TEST(Hdf5File, UnwrittenChunksAreRefusedNamingTheDataset) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);  // 300 training samples
  replace_dataset(path, "/train/images", {300, 3, 32, 32}, 100, 100, true);
  const std::string msg = data_error_of([&] { read_split(path, "train"); });
  EXPECT_NE(msg.find("dataset /train/images: declares 3 chunk(s) of data but only 1 were ever written"),
            std::string::npos)
      << msg;
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
    test::reseal(path);
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

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string repack_command(const std::string& path) {
  return "`cifar_pack --input cifar-10-binary.tar.gz --output " + path +
         "` (a synthetic file: the `cifar_pack --synthetic` command that made it)";
}

// The header, known answer: the documented text, the file's size and the MD5
// of every byte after the first 512, then NUL bytes; HDF5 starts at byte 512.
TEST(Hdf5File, PackedFileStartsWithItsChecksumHeader) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  const std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 512u);
  Md5 md5;
  md5.update(bytes.data() + 512, bytes.size() - 512);
  std::string expected = "cifar_mpi packed CIFAR-10, HDF5 from byte 512\nsize " + std::to_string(bytes.size()) +
                         "\nmd5 " + md5.hex_digest() + "\n";
  expected.resize(512, '\0');
  EXPECT_EQ(bytes.substr(0, 512), expected);
  EXPECT_EQ(bytes.substr(512, 8), "\x89HDF\r\n\x1a\n");  // HDF5's signature, where HDF5 and h5py look next
  EXPECT_EQ(read_dataset_info(path).splits.at("train").count, 300);
}

// One flipped byte anywhere after the header -- a chunk of images, or the
// global heap holding the class names, which has no checksum of HDF5's own --
// and the file is refused before HDF5 opens it, naming the file and the fix.
TEST(Hdf5File, FlippedByteAnywhereIsRefusedBeforeHdf5ReadsTheFile) {
  TempDir dir;
  const std::string path = test::write_small_h5(dir);
  const std::string good = read_bytes(path);
  for (const size_t at : {good.size() - 1000, good.find("GCOL") + 20, size_t{512}}) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    write_bytes(path, bytes);
    const std::string msg = data_error_of([&] { read_dataset_info(path); });
    EXPECT_NE(msg.find("HDF5 file '" + path + "': damaged: the MD5 of its bytes after the header is "),
              std::string::npos)
        << "byte " << at << ": " << msg;
    EXPECT_NE(msg.find("; repack it with " + repack_command(path)), std::string::npos) << msg;
  }
  // The header itself: a digit of the MD5 that is no hex digit; a file cut short or grown.
  std::string bytes = good;
  bytes[good.find("\nmd5 ") + 5] = 'X';
  write_bytes(path, bytes);
  EXPECT_NE(data_error_of([&] {
              read_split(path, "test");
            }).find("': its checksum header (the first 512 bytes) is damaged; repack it with "),
            std::string::npos);
  write_bytes(path, good + "x");
  EXPECT_NE(data_error_of([&] {
              read_split(path, "test");
            }).find(": is " + std::to_string(good.size() + 1) + " bytes long, 1 more than cifar_pack wrote"),
            std::string::npos);
  write_bytes(path, good.substr(0, 600));
  EXPECT_NE(data_error_of([&] {
              read_split(path, "test");
            }).find(": truncated: cifar_pack wrote " + std::to_string(good.size()) + " bytes, 600 are left"),
            std::string::npos);
  write_bytes(path, good);
  EXPECT_NO_THROW(read_split(path, "test"));
}

// A file of the layout before the checksum header (the fuzz seed that
// `make_synthetic_cifar(2, 1, 2)` packed then) is refused with the command
// that repacks it; packed again, the same data reads back as the old file
// holds it (read here with HDF5 itself).
TEST(Hdf5File, FileWithoutTheChecksumHeaderIsRefusedWithTheRepackCommand) {
  const std::string old_path = std::string(CIFAR_TEST_DATA_DIR) + "/old-layout-synthetic-2-1.h5";
  const std::string msg = data_error_of([&] { read_dataset_info(old_path); });
  EXPECT_EQ(msg, "HDF5 file '" + old_path +
                     "': has no checksum header (it was packed by a cifar_pack older than the header, or written by "
                     "another program), so it cannot be checked before HDF5 reads it; repack it with " +
                     repack_command(old_path) + " (tools/main_job.sh repacks data/cifar10.h5 by itself)");

  std::vector<uint8_t> old_images(2 * schema::kImageBytes), old_labels(2);
  {
    hid_t f = H5Fopen(old_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t images = H5Dopen2(f, "/train/images", H5P_DEFAULT), labels = H5Dopen2(f, "/train/labels", H5P_DEFAULT);
    ASSERT_GE(H5Dread(images, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, old_images.data()), 0);
    ASSERT_GE(H5Dread(labels, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, old_labels.data()), 0);
    H5Dclose(labels);
    H5Dclose(images);
    H5Fclose(f);
  }
  TempDir dir;
  const std::string path = test::write_small_h5(dir, 2, 1, 2);
  const Split train = read_split(path, "train");
  ASSERT_EQ(train.size(), 2);
  const auto* pixels = train.images.data_ptr<uint8_t>();
  EXPECT_TRUE(std::equal(old_images.begin(), old_images.end(), pixels));
  EXPECT_EQ(train.labels[0].item<int64_t>(), old_labels[0]);
  EXPECT_EQ(train.labels[1].item<int64_t>(), old_labels[1]);
}

// Every input the hdf5 fuzz harness found to crash or hang HDF5 (a
// use-after-free in H5Aexists, an overflow in H5Aopen, a SEGV in H5Aread, an
// endless global heap walk, gigabyte allocations) is a damaged file without
// the checksum header: one DataError naming it, before HDF5 parses it.
TEST(Hdf5File, FuzzRegressionInputsAreRefusedBeforeHdf5ParsesThem) {
  const std::string folder = std::string(CIFAR_TEST_DATA_DIR) + "/../fuzz/regression/hdf5";
  const std::vector<std::string> names = paths::list(folder);
  EXPECT_GE(names.size(), 6u);
  for (const std::string& name : names) {
    const std::string path = paths::join(folder, name);
    const std::string msg = data_error_of([&] { read_split(path, "train"); });
    EXPECT_NE(msg.find("HDF5 file '" + path + "': has no checksum header"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace cifar
