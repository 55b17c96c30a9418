// Validating reader of the packed CIFAR-10 HDF5 file (see hdf5_dataset.hpp):
// every check names the file and the dataset, and every failure is a DataError.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "data/cifar_schema.hpp"
#include "data/hdf5_dataset.hpp"
#include "data/hdf5_errors.hpp"
#include "data/packed_header.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/memory.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

// "HDF5 file 'x.h5', dataset /train/images" -- the prefix of every message.
std::string where(const std::string& path, const std::string& object = "") {
  std::string s = "HDF5 file '" + path + "'";
  if (!object.empty()) s += ", " + object;
  return s;
}

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  throw DataError(where(path, object) + ": " + what);
}

// The command that writes a new file in place of `path`. The file's source
// is not known where a file is refused (its bytes are not trusted): the
// advice names both kinds of source.
std::string repack_command(const std::string& path) {
  return "`cifar_pack --input cifar-10-binary.tar.gz --output " + path +
         "` (a synthetic file: the `cifar_pack --synthetic` command that made it)";
}

// The advice where the message names the file already.
const std::string kRepackHint = "repack it with " + repack_command("FILE.h5");

// The checksum header (packed_header.hpp) is checked before HDF5 opens the
// file, so HDF5 never parses a damaged byte. HDF5 1.10.8 does not survive
// damaged metadata (the hdf5 fuzz harness found a use-after-free in H5Aexists,
// an overflow in H5Aopen, a SEGV in H5Aread, a loop without end in its global
// heap and allocations of gigabytes), and checksums inside HDF5 would not
// cover it: no format version checksums the global heaps that hold the class
// names, and object header prefixes are parsed before their checksum is
// checked. One MD5 over the file, checked here, covers every byte.
void check_packed_header(const std::string& path) {
  const packed_header::Check check = packed_header::check(path);
  if (check.has_header) {
    if (!check.problem.empty()) fail(path, "", check.problem + "; repack it with " + repack_command(path));
    return;
  }
  // H5Fis_hdf5 only looks for HDF5's signature; HDF5 parses nothing more.
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) fail(path, "", "not an HDF5 file; " + kRepackHint);
  H5_CHECK_DATA(is_hdf5, where(path) + ": cannot probe the file (truncated or unreadable?)");
  fail(path, "",
       "has no checksum header (it was packed by a cifar_pack older than the header, or written by another "
       "program), so it cannot be checked before HDF5 reads it; repack it with " +
           repack_command(path) + " (tools/main_job.sh repacks data/cifar10.h5 by itself)");
}

H5Handle open_file(const std::string& path) {
  silence_hdf5_errors();
  // Said plainly here, before HDF5 opens anything: it would report a folder or
  // an unreadable file as "not an HDF5 file" deep in its error stack, and
  // block forever on a FIFO.
  const paths::FileCheck check = paths::check_regular_file(path);
  switch (check.problem) {
    case paths::FileProblem::None: break;
    case paths::FileProblem::Missing:
      fail(path, "", "no such file; create it with cifar_pack (see tools/download_cifar10.sh for the archive)");
    case paths::FileProblem::Folder: fail(path, "", "is a folder, not a file; pass the packed .h5 file");
    case paths::FileProblem::Unreadable: fail(path, "", check.reason + "; check its permissions");
    default: fail(path, "", check.reason + "; pass the packed .h5 file");
  }
  check_packed_header(path);
  return {H5_CHECK_DATA(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT),
                        where(path) + ": cannot open (truncated or damaged file?); " + kRepackHint),
          H5Fclose};
}

bool object_exists(hid_t file, const std::string& name) {
  // H5Lexists must be walked one level at a time: "/train" before "/train/images".
  std::string prefix;
  size_t pos = 1;
  while (pos <= name.size()) {
    const size_t next = name.find('/', pos);
    prefix = name.substr(0, next);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return true;
}

H5Handle open_attr(hid_t owner, const std::string& path, const std::string& object, const char* name) {
  if (H5Aexists(owner, name) <= 0) {
    fail(path, object, std::string("attribute '") + name + "' is missing; " + kRepackHint);
  }
  return {H5_CHECK_DATA(H5Aopen(owner, name, H5P_DEFAULT), where(path, object)), H5Aclose};
}

hssize_t attr_elements(hid_t attr, const std::string& context) {
  H5Handle space(H5_CHECK_DATA(H5Aget_space(attr), context), H5Sclose);
  return H5_CHECK_DATA(H5Sget_simple_extent_npoints(space.get()), context);
}

template <typename T>
std::vector<T> read_numeric_attr(hid_t owner, const std::string& path, const std::string& object, const char* name,
                                 hid_t mem_type, hssize_t expected) {
  H5Handle attr = open_attr(owner, path, object, name);
  const std::string ctx = where(path, object + " attribute '" + name + "'");
  const hssize_t n = attr_elements(attr.get(), ctx);
  if (n != expected)
    fail(path, object,
         strprintf("attribute '%s' has %lld values, expected %lld", name, static_cast<long long>(n),
                   static_cast<long long>(expected)));
  std::vector<T> values(static_cast<size_t>(n));
  H5_CHECK_DATA(H5Aread(attr.get(), mem_type, values.data()), ctx);
  return values;
}

// Strings that HDF5 allocated into `raw`, freed on every path out: a read
// that fails part-way may already have allocated some, and the error is
// thrown past the reclaim.
class VlenStrings {
 public:
  VlenStrings(hid_t type, hid_t space, size_t n) : type_(type), space_(space), raw_(n, nullptr) {}
  ~VlenStrings() { H5Dvlen_reclaim(type_, space_, H5P_DEFAULT, raw_.data()); }
  VlenStrings(const VlenStrings&) = delete;
  VlenStrings& operator=(const VlenStrings&) = delete;
  char** data() { return raw_.data(); }
  const std::vector<char*>& raw() const { return raw_; }

 private:
  hid_t type_, space_;
  std::vector<char*> raw_;
};

// The attribute's `expected` strings: the count comes from the file, so it is
// checked before the pointer array is allocated. (The length of each string
// is also in the file, and HDF5 1.10 allocates it before reading: a string
// claiming 4.7 GB is still allocated inside H5Aread; docs/dev/fuzzing.md, open
// findings.)
std::vector<std::string> read_strings_attr(hid_t owner, const std::string& path, const std::string& object,
                                           const char* name, hssize_t expected) {
  H5Handle attr = open_attr(owner, path, object, name);
  const std::string ctx = where(path, object + " attribute '" + name + "'");
  H5Handle type(H5_CHECK_DATA(H5Tcopy(H5T_C_S1), ctx), H5Tclose);
  H5_CHECK_DATA(H5Tset_size(type.get(), H5T_VARIABLE), ctx);
  H5_CHECK_DATA(H5Tset_cset(type.get(), H5T_CSET_UTF8), ctx);
  H5Handle space(H5_CHECK_DATA(H5Aget_space(attr.get()), ctx), H5Sclose);
  const hssize_t n = H5_CHECK_DATA(H5Sget_simple_extent_npoints(space.get()), ctx);
  if (n != expected)
    fail(path, object,
         strprintf("attribute '%s' holds %lld strings, expected %lld; ", name, static_cast<long long>(n),
                   static_cast<long long>(expected)) +
             kRepackHint);
  VlenStrings raw(type.get(), space.get(), static_cast<size_t>(n));
  H5_CHECK_DATA(H5Aread(attr.get(), type.get(), raw.data()), ctx + " (expected UTF-8 strings)");
  std::vector<std::string> out;
  for (char* s : raw.raw()) out.emplace_back(s ? s : "");
  return out;
}

std::string read_string_attr(hid_t owner, const std::string& path, const char* name) {
  return read_strings_attr(owner, path, "root", name, 1)[0];
}

// Deflate cannot expand more than about 1032:1; a dataset that declares more
// raw bytes than that over what it stores declares data it does not hold.
constexpr double kMaxDeflateRatio = 1032.0;

struct Filters {
  bool fletcher32 = false;
  bool deflate = false;
};

Filters dataset_filters(hid_t dcpl, const std::string& context) {
  Filters f;
  const int count = H5_CHECK_DATA(H5Pget_nfilters(dcpl), context);
  for (int i = 0; i < count; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    const H5Z_filter_t id = H5_CHECK_DATA(
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &values, nullptr, 0, nullptr, &config), context);
    f.fletcher32 = f.fletcher32 || id == H5Z_FILTER_FLETCHER32;
    f.deflate = f.deflate || id == H5Z_FILTER_DEFLATE;
  }
  return f;
}

// The sizes a dataset declares are checked against what the file holds
// before anything is allocated for them: every chunk must be written (an
// unwritten chunk reads back as zeros without a word), guarded by Fletcher32,
// and the stored bytes must be able to hold the declared ones.
void check_dataset_storage(hid_t dset, const std::string& path, const std::string& object,
                           const std::vector<hsize_t>& dims) {
  const std::string context = where(path, object);
  H5Handle dcpl(H5_CHECK_DATA(H5Dget_create_plist(dset), context), H5Pclose);
  std::vector<hsize_t> chunk(dims.size(), 0);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED ||
      H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) != static_cast<int>(dims.size()))
    fail(path, object, std::string("is not stored in chunks with checksums; ") + kRepackHint);
  const Filters filters = dataset_filters(dcpl.get(), context);
  if (!filters.fletcher32)
    fail(path, object,
         std::string("has no Fletcher32 checksum filter, so corruption would go unnoticed; ") + kRepackHint);
  hsize_t expected_chunks = 1, raw_bytes = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    expected_chunks *= chunk[i] == 0 ? 0 : (dims[i] + chunk[i] - 1) / chunk[i];
    raw_bytes *= dims[i];
  }
  hsize_t stored_chunks = 0;
  H5Handle space(H5_CHECK_DATA(H5Dget_space(dset), context), H5Sclose);
  H5_CHECK_DATA(H5Dget_num_chunks(dset, space.get(), &stored_chunks), context);
  if (stored_chunks != expected_chunks)
    fail(path, object,
         strprintf("declares %llu chunk(s) of data but only %llu were ever written (the rest would "
                   "read back as zeros); ",
                   static_cast<unsigned long long>(expected_chunks), static_cast<unsigned long long>(stored_chunks)) +
             kRepackHint);
  const hsize_t stored = H5Dget_storage_size(dset);
  const long long file_bytes = paths::check_regular_file(path).size;
  const double capacity = static_cast<double>(stored) * (filters.deflate ? kMaxDeflateRatio : 1.0);
  if (static_cast<long long>(stored) > file_bytes || static_cast<double>(raw_bytes) > capacity)
    fail(path, object,
         strprintf("declares %llu bytes but stores %llu in a file of %lld; ",
                   static_cast<unsigned long long>(raw_bytes), static_cast<unsigned long long>(stored), file_bytes) +
             kRepackHint);
}

// Opens a dataset and checks it is unsigned 8-bit with the expected shape
// (expected[0] < 0: any length) and that the file holds what it declares.
// Returns the dataset and its length.
H5Handle open_uint8_dataset(hid_t file, const std::string& path, const std::string& name,
                            const std::vector<int64_t>& expected, int64_t* length) {
  const std::string object = "dataset " + name;
  if (!object_exists(file, name)) fail(path, "", object + " is missing; " + kRepackHint);
  H5Handle dset(H5_CHECK_DATA(H5Dopen2(file, name.c_str(), H5P_DEFAULT), where(path, object)), H5Dclose);
  H5Handle type(H5_CHECK_DATA(H5Dget_type(dset.get()), where(path, object)), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 1 ||
      H5Tget_sign(type.get()) != H5T_SGN_NONE) {
    fail(path, object, "has the wrong element type; expected uint8");
  }
  H5Handle space(H5_CHECK_DATA(H5Dget_space(dset.get()), where(path, object)), H5Sclose);
  const int rank = H5_CHECK_DATA(H5Sget_simple_extent_ndims(space.get()), where(path, object));
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5_CHECK_DATA(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), where(path, object));
  bool ok = dims.size() == expected.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) {
    ok = expected[i] < 0 || static_cast<int64_t>(dims[i]) == expected[i];
  }
  if (!ok) {
    // Appended, not boost::algorithm::join: its string::insert trips GCC 12's
    // false -Wstringop-overflow at -O3 in C++20.
    const auto shape = [](const auto& extents) {
      std::string text;
      for (const auto d : extents) {
        if (!text.empty()) text += ',';
        if constexpr (std::is_signed_v<decltype(d)>) {
          if (d < 0) {  // any extent
            text += 'N';
            continue;
          }
        }
        text += std::to_string(d);
      }
      return text;
    };
    fail(path, object, "has shape [" + shape(dims) + "], expected [" + shape(expected) + "]");
  }
  check_dataset_storage(dset.get(), path, object, dims);
  *length = dims.empty() ? 0 : static_cast<int64_t>(dims[0]);
  return dset;
}

SplitInfo read_split_info(hid_t file, const std::string& path, const std::string& split) {
  const std::string group_name = "/" + split;
  const std::string object = "group " + group_name;
  if (!object_exists(file, group_name)) fail(path, "", object + " is missing; " + kRepackHint);
  H5Handle group(H5_CHECK_DATA(H5Gopen2(file, group_name.c_str(), H5P_DEFAULT), where(path, object)), H5Gclose);
  SplitInfo info;
  info.count = read_numeric_attr<int64_t>(group.get(), path, object, schema::kAttrCount, H5T_NATIVE_INT64, 1)[0];
  const auto classes = read_numeric_attr<int64_t>(group.get(), path, object, schema::kAttrClassCounts, H5T_NATIVE_INT64,
                                                  schema::kNumClasses);
  std::copy(classes.begin(), classes.end(), info.class_counts.begin());
  const auto mean = read_numeric_attr<double>(group.get(), path, object, schema::kAttrMean, H5T_NATIVE_DOUBLE, 3);
  const auto std = read_numeric_attr<double>(group.get(), path, object, schema::kAttrStd, H5T_NATIVE_DOUBLE, 3);
  // --normalize dataset divides by these: numbers from the file, checked against what pixel/255 allows.
  for (int c = 0; c < 3; ++c) {
    if (!(mean[c] >= 0 && mean[c] <= 1 && std[c] > 0 && std[c] <= 0.5))
      fail(path, object,
           strprintf("channel %d has mean %g and std %g; pixel/255 has a mean in [0, 1] and a std in "
                     "(0, 0.5]; ",
                     c, mean[c], std[c]) +
               kRepackHint);
  }
  std::copy(mean.begin(), mean.end(), info.mean.begin());
  std::copy(std.begin(), std.end(), info.std.begin());

  int64_t images = 0, labels = 0;
  open_uint8_dataset(file, path, schema::images_path(split), {-1, schema::kChannels, schema::kHeight, schema::kWidth},
                     &images);
  open_uint8_dataset(file, path, schema::labels_path(split), {-1}, &labels);
  if (images != info.count || labels != info.count) {
    fail(path, object,
         strprintf("holds %lld images and %lld labels but its count attribute says %lld",
                   static_cast<long long>(images), static_cast<long long>(labels), static_cast<long long>(info.count)));
  }
  return info;
}

DatasetInfo read_info(hid_t file, const std::string& path) {
  DatasetInfo info;
  info.path = path;
  info.schema_version =
      read_numeric_attr<int32_t>(file, path, "root", schema::kAttrSchemaVersion, H5T_NATIVE_INT32, 1)[0];
  if (info.schema_version != schema::kSchemaVersion) {
    fail(path, "root",
         strprintf("schema version %d, this program reads version %d; ", info.schema_version, schema::kSchemaVersion) +
             kRepackHint);
  }
  info.class_names = read_strings_attr(file, path, "root", schema::kAttrClassNames, schema::kNumClasses);
  info.source.kind = read_string_attr(file, path, schema::kAttrSourceKind);
  info.source.md5 = read_string_attr(file, path, schema::kAttrSourceMd5);
  info.source.md5_of = read_string_attr(file, path, schema::kAttrSourceMd5Of);
  info.source.note = read_string_attr(file, path, schema::kAttrSourceNote);
  for (const std::string& split : schema::kSplits) info.splits[split] = read_split_info(file, path, split);
  return info;
}

// Reads rows [begin, begin+count) of a uint8 dataset into `out` (a hyperslab).
void read_rows(hid_t file, const std::string& path, const std::string& name, int64_t begin, int64_t count,
               const std::vector<int64_t>& shape, uint8_t* out) {
  const std::string object = "dataset " + name;
  int64_t length = 0;
  H5Handle dset = open_uint8_dataset(file, path, name, shape, &length);
  std::vector<hsize_t> start(shape.size(), 0), dims(shape.begin(), shape.end());
  start[0] = static_cast<hsize_t>(begin);
  dims[0] = static_cast<hsize_t>(count);
  H5Handle file_space(H5_CHECK_DATA(H5Dget_space(dset.get()), where(path, object)), H5Sclose);
  H5_CHECK_DATA(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(), nullptr),
                where(path, object));
  H5Handle mem_space(
      H5_CHECK_DATA(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), where(path, object)),
      H5Sclose);
  const herr_t rc = H5Dread(dset.get(), H5T_NATIVE_UINT8, mem_space.get(), file_space.get(), H5P_DEFAULT, out);
  if (rc < 0) {
    const std::string stack = hdf5_error_stack_text();
    H5Eclear2(H5E_DEFAULT);
    const bool checksum = stack.find("Fletcher32") != std::string::npos || stack.find("checksum") != std::string::npos;
    fail(path, object,
         std::string(checksum ? "checksum error: a chunk is corrupted (Fletcher32 mismatch); "
                              : "read failed (truncated or damaged file?); ") +
             kRepackHint + ". HDF5: " + stack);
  }
}

}  // namespace

const SplitInfo& DatasetInfo::split(const std::string& name) const {
  auto it = splits.find(name);
  if (it == splits.end()) throw DataError(where(path) + ": no split '" + name + "' (splits are train and test)");
  return it->second;
}

struct PackedFile::Handle {
  H5Handle file;
};

PackedFile::PackedFile(const std::string& path)
    : file_(std::make_shared<const Handle>(Handle{open_file(path)})), info_(read_info(file_->file.get(), path)) {}

DatasetInfo read_dataset_info(const std::string& path) { return PackedFile(path).info(); }

Split read_split(const std::string& path, const std::string& split, int64_t begin, int64_t count) {
  return PackedFile(path).split(split, begin, count);
}

Split PackedFile::split(const std::string& split, int64_t begin, int64_t count) const {
  const std::string& path = info_.path;
  const H5Handle& file = file_->file;
  Split out;
  out.name = split;
  out.info = info_.split(split);
  out.class_names = info_.class_names;
  const int64_t total = out.info.count;
  if (count < 0) count = total - begin;
  if (begin < 0 || count < 0 || begin + count > total) {
    throw DataError(where(path, "split " + split) +
                    strprintf(": range [%lld, %lld) is outside the split's %lld samples", static_cast<long long>(begin),
                              static_cast<long long>(begin) + static_cast<long long>(count),
                              static_cast<long long>(total)));
  }
  out.begin = begin;
  const int64_t bytes = count * (schema::kImageBytes + 1);
  if (bytes > physical_memory_bytes())
    fail(path, "split " + split,
         strprintf("%lld samples need %.1f GiB in memory on every rank, more than this machine's %.1f GiB",
                   static_cast<long long>(count), bytes / double(1 << 30), physical_memory_bytes() / double(1 << 30)));
  out.images = torch::empty({count, schema::kChannels, schema::kHeight, schema::kWidth}, torch::kUInt8);
  torch::Tensor labels8 = torch::empty({count}, torch::kUInt8);
  if (count > 0) {
    read_rows(file.get(), path, schema::images_path(split), begin, count,
              {total, schema::kChannels, schema::kHeight, schema::kWidth}, out.images.data_ptr<uint8_t>());
    read_rows(file.get(), path, schema::labels_path(split), begin, count, {total}, labels8.data_ptr<uint8_t>());
  }
  const int64_t bad = labels8.ge(schema::kNumClasses).sum().item<int64_t>();
  if (bad > 0) {
    const int64_t first = labels8.ge(schema::kNumClasses).nonzero()[0][0].item<int64_t>();
    fail(path, "dataset " + schema::labels_path(split),
         strprintf("%lld labels are outside 0..9 (first at sample %lld, value %d); ", static_cast<long long>(bad),
                   static_cast<long long>(begin) + static_cast<long long>(first), labels8[first].item<int>()) +
             kRepackHint);
  }
  out.labels = labels8.to(torch::kLong);
  if (begin == 0 && count == total) {
    const torch::Tensor counts = torch::bincount(out.labels, {}, schema::kNumClasses);
    for (int c = 0; c < schema::kNumClasses; ++c) {
      if (counts[c].item<int64_t>() != out.info.class_counts[c]) {
        fail(path, "dataset " + schema::labels_path(split),
             strprintf("class %d occurs %lld times but class_counts says %lld; ", c,
                       static_cast<long long>(counts[c].item<int64_t>()),
                       static_cast<long long>(out.info.class_counts[c])) +
                 kRepackHint);
      }
    }
  }
  return out;
}

}  // namespace cifar
