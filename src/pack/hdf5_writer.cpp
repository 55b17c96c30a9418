// Writes the packed CIFAR-10 HDF5 file (schema v1, see cifar_schema.hpp):
// chunked uint8 datasets guarded by Fletcher32 (optionally deflated), stats
// and provenance as attributes, after a checksum header over the whole file
// (packed_header.hpp), published atomically.
#include <string>
#include <vector>

#include "data/cifar_schema.hpp"
#include "data/hdf5_dataset.hpp"
#include "data/hdf5_errors.hpp"
#include "data/packed_header.hpp"
#include "pack/hdf5_writer.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

H5Handle simple_space(const std::vector<hsize_t>& dims) {
  return {H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr)), H5Sclose};
}

H5Handle utf8_string_type() {
  H5Handle t(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(t.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(t.get(), H5T_CSET_UTF8));
  return t;
}

template <typename T>
void write_numeric_attr(hid_t owner, const char* name, hid_t type, const T* values, hsize_t n) {
  H5Handle space = n == 1 ? H5Handle(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose) : simple_space({n});
  H5Handle attr(H5_CHECK(H5Acreate2(owner, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), type, values));
}

void write_strings_attr(hid_t owner, const char* name, const std::vector<std::string>& values, bool scalar) {
  H5Handle type = utf8_string_type();
  H5Handle space = scalar ? H5Handle(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose)
                          : simple_space({static_cast<hsize_t>(values.size())});
  std::vector<const char*> ptrs;
  for (const std::string& v : values) ptrs.push_back(v.c_str());
  H5Handle attr(H5_CHECK(H5Acreate2(owner, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), type.get(), ptrs.data()));
}

void write_string_attr(hid_t owner, const char* name, const std::string& value) {
  write_strings_attr(owner, name, {value}, /*scalar=*/true);
}

// One chunked uint8 dataset: [n, rest...] with chunks of `chunk_rows` rows.
void write_uint8_dataset(hid_t group, const char* name, const std::vector<hsize_t>& dims, hsize_t chunk_rows,
                         const uint8_t* data, const H5WriteOptions& options) {
  std::vector<hsize_t> chunk = dims;
  chunk[0] = std::min<hsize_t>(chunk_rows, dims[0]);
  H5Handle dcpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
  H5_CHECK(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
  if (options.gzip_level > 0) H5_CHECK(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.gzip_level)));
  // Last in the pipeline: the checksum covers the bytes as stored on disk.
  H5_CHECK(H5Pset_fletcher32(dcpl.get()));
  H5Handle space = simple_space(dims);
  H5Handle dset(H5_CHECK(H5Dcreate2(group, name, H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)),
                H5Dclose);
  H5_CHECK(H5Dwrite(dset.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

void write_split(hid_t file, const std::string& name, const RawSplit& split, const H5WriteOptions& options) {
  CIFAR_CHECK(split.count() > 0, DataError, "cannot pack an empty '" + name + "' split");
  CIFAR_CHECK(static_cast<int64_t>(split.images.size()) == split.count() * schema::kImageBytes, DataError,
              strprintf("split '%s': %zu image bytes for %lld labels", name.c_str(), split.images.size(),
                        static_cast<long long>(split.count())));
  for (int64_t i = 0; i < split.count(); ++i) {
    CIFAR_CHECK(split.labels[static_cast<size_t>(i)] < schema::kNumClasses, DataError,
                strprintf("split '%s': sample %lld has label %d; labels must be 0..9", name.c_str(),
                          static_cast<long long>(i), split.labels[static_cast<size_t>(i)]));
  }
  H5Handle group(H5_CHECK(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
  const auto n = static_cast<hsize_t>(split.count());
  write_uint8_dataset(group.get(), "images", {n, schema::kChannels, schema::kHeight, schema::kWidth},
                      schema::kImagesPerChunk, split.images.data(), options);
  write_uint8_dataset(group.get(), "labels", {n}, schema::kLabelsPerChunk, split.labels.data(), options);

  const ChannelStats stats = compute_channel_stats(split);
  const std::array<int64_t, schema::kNumClasses> classes = count_classes(split);
  const int64_t count = split.count();
  write_numeric_attr(group.get(), schema::kAttrCount, H5T_NATIVE_INT64, &count, 1);
  write_numeric_attr(group.get(), schema::kAttrClassCounts, H5T_NATIVE_INT64, classes.data(), classes.size());
  write_numeric_attr(group.get(), schema::kAttrMean, H5T_NATIVE_DOUBLE, stats.mean.data(), 3);
  write_numeric_attr(group.get(), schema::kAttrStd, H5T_NATIVE_DOUBLE, stats.std.data(), 3);
}

void write_file(const std::string& path, const CifarData& data, const H5WriteOptions& options) {
  // HDF5 starts at byte 512; the checksum header goes before it (sealed below).
  H5Handle fcpl(H5_CHECK(H5Pcreate(H5P_FILE_CREATE)), H5Pclose);
  H5_CHECK(H5Pset_userblock(fcpl.get(), packed_header::kBytes));
  H5Handle file(H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT)), H5Fclose);
  const int version = schema::kSchemaVersion;
  write_numeric_attr(file.get(), schema::kAttrSchemaVersion, H5T_NATIVE_INT32, &version, 1);
  write_strings_attr(file.get(), schema::kAttrClassNames, data.class_names, /*scalar=*/false);
  write_string_attr(file.get(), schema::kAttrSourceKind, data.source.kind);
  write_string_attr(file.get(), schema::kAttrSourceMd5, data.source.md5);
  write_string_attr(file.get(), schema::kAttrSourceMd5Of, data.source.md5_of);
  write_string_attr(file.get(), schema::kAttrSourceNote, data.source.note);
  write_split(file.get(), schema::kTrain, data.train, options);
  write_split(file.get(), schema::kTest, data.test, options);
  H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  file.reset();
  packed_header::seal(path);  // after HDF5 has closed the file: the MD5 covers every byte it wrote
}

}  // namespace

void write_cifar_h5(const std::string& path, const CifarData& data, const H5WriteOptions& options) {
  silence_hdf5_errors();
  CIFAR_CHECK(options.gzip_level >= 0 && options.gzip_level <= 9, ConfigError,
              strprintf("gzip level %d is outside 0..9", options.gzip_level));
  CIFAR_CHECK(data.class_names.size() == schema::kNumClasses, DataError,
              strprintf("%zu class names given; CIFAR-10 has 10", data.class_names.size()));
  const std::string temp = temporary_path_for(path);
  TemporaryFileGuard guard(temp);
  try {
    write_file(temp, data, options);
  } catch (const LibraryError& e) {
    throw DataError("cannot write HDF5 file '" + path + "' (check the folder exists and is writable): " + e.what(),
                    kExitFailure);  // an output: not the bad input of exit code 6
  }
  publish_atomically(temp, path);
  guard.release();
}

}  // namespace cifar
