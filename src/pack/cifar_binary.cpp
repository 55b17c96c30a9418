// Reading and writing the official CIFAR-10 binary layout (see cifar_binary.hpp).
#include "pack/cifar_binary.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include "data/cifar_schema.hpp"
#include "util/atomic_file.hpp"
#include "util/crc32.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/md5.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

using FileMap = std::map<std::string, std::string>;  // base name -> contents

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool is_archive_name(const std::string& p) { return ends_with(p, ".tar.gz") || ends_with(p, ".tgz"); }

// ---- reading the archive: one pass through the file feeds both libarchive and MD5.
struct HashingReader {
  FILE* file = nullptr;
  Md5 md5;
  std::vector<char> buffer = std::vector<char>(1 << 20);
};

size_t read_and_hash(HashingReader* r) {
  const size_t n = std::fread(r->buffer.data(), 1, r->buffer.size(), r->file);
  r->md5.update(r->buffer.data(), n);
  return n;
}

la_ssize_t hashing_read(archive*, void* client, const void** out) {
  auto* r = static_cast<HashingReader*>(client);
  const size_t n = read_and_hash(r);
  *out = r->buffer.data();
  return std::ferror(r->file) ? -1 : static_cast<la_ssize_t>(n);
}

// The most bytes a member cifar_pack reads may have: the batch files have
// exactly one size, the class-name list is a few lines. -1: not read.
constexpr int64_t kMaxMetaBytes = 1 << 16;
constexpr size_t kMaxClassNameBytes = 64;  // "automobile" is the longest of the release

bool is_batch_file(const std::string& name) {
  if (name == schema::kTestBatchFile) return true;
  for (const std::string& b : schema::kTrainBatchFiles)
    if (name == b) return true;
  return false;
}

int64_t max_member_bytes(const std::string& name) {
  if (is_batch_file(name)) return schema::kBatchFileBytes;
  return name == schema::kMetaFile ? kMaxMetaBytes : -1;
}

// A member's size, as its header (or the folder) claims, against what the
// release allows, before anything is allocated for it. Smaller batch files
// are read and refused by check_structure with their exact size.
void check_member_size(const std::string& input, const std::string& name, int64_t claimed, bool size_known) {
  const int64_t limit = max_member_bytes(name);
  if (size_known && claimed >= 0 && claimed <= limit) return;
  throw DataError(strprintf(
      "'%s': %s claims %s bytes, more than the %lld %s (refused before reading it; is it "
      "the CIFAR-10 binary release? see tools/download_cifar10.sh)",
      input.c_str(), name.c_str(), size_known ? std::to_string(claimed).c_str() : "an unknown number of",
      static_cast<long long>(limit), is_batch_file(name) ? "of a CIFAR-10 batch file" : "a class-name list may have"));
}

std::string read_member(archive* a, const std::string& name, int64_t size,
                        const std::function<void(const std::string&)>& fail) {
  std::string data(static_cast<size_t>(size), '\0');
  size_t got = 0;
  for (la_ssize_t n; got < data.size() && (n = archive_read_data(a, &data[got], data.size() - got)) != 0;) {
    if (n < 0) fail("damaged entry " + name);
    got += static_cast<size_t>(n);
  }
  if (got != data.size()) fail("entry " + name + " ends early");
  return data;
}

// Reads the members cifar_pack needs; names other .bin members in `others`
// without reading them.
FileMap read_archive(const std::string& path, std::string* md5, std::vector<std::string>* others) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) throw DataError("cannot open archive '" + path + "': " + std::strerror(errno));
  HashingReader reader;
  reader.file = file.get();
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  const std::function<void(const std::string&)> fail = [&](const std::string& what) {
    throw DataError("archive '" + path + "': " + what + ": " + archive_error_string(a.get()) +
                    " (is it cifar-10-binary.tar.gz? see tools/download_cifar10.sh)");
  };
  if (archive_read_open(a.get(), &reader, nullptr, hashing_read, nullptr) != ARCHIVE_OK) fail("cannot read");
  FileMap files;
  archive_entry* entry = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    const std::string name = paths::file_name(archive_entry_pathname(entry));
    // A hard link's data is its target's, an earlier member (tar stores it once).
    if (const char* target = archive_entry_hardlink(entry); target && max_member_bytes(name) >= 0) {
      const auto linked = files.find(paths::file_name(target));
      if (linked == files.end())
        throw DataError("'" + path + "': member " + name + " is a hard link to " + target +
                        ", which is not a member cifar_pack reads; repack the archive without hard links (GNU tar "
                        "--hard-dereference)");
      if (files.count(name))
        throw DataError("'" + path + "': member " + name + " appears twice; the CIFAR-10 release has it once");
      files[name] = linked->second;
      continue;
    }
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    if (max_member_bytes(name) < 0) {
      if (ends_with(name, ".bin")) others->push_back(name);
      continue;
    }
    if (files.count(name))
      throw DataError("'" + path + "': member " + name + " appears twice; the CIFAR-10 release has it once");
    check_member_size(path, name, archive_entry_size(entry), archive_entry_size_is_set(entry) != 0);
    files[name] = read_member(a.get(), name, archive_entry_size(entry), fail);
  }
  if (rc != ARCHIVE_EOF) fail("damaged archive");
  // libarchive may stop before the end-of-archive padding; hash the rest too.
  while (read_and_hash(&reader) > 0) {
  }
  *md5 = reader.md5.hex_digest();
  return files;
}

// A gzip file's own check, which libarchive does not make: its last 8 bytes
// hold the CRC-32 and the length (mod 2^32) of its decompressed bytes. A
// changed byte in a stored deflate block (the pixels of the release compress
// little) or in the trailer was otherwise packed as it was. One member, as
// the release is; another pass through the file, decompressing it again.
void check_gzip_trailer(const std::string& path) {
  unsigned char head[2] = {0, 0}, tail[8] = {0};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(head), 2);
    if (!in || head[0] != 0x1f || head[1] != 0x8b) return;  // not gzip: libarchive's own checks
    in.seekg(-8, std::ios::end);
    in.read(reinterpret_cast<char*>(tail), 8);
    if (!in) return;  // shorter than a trailer: the read below says so
  }
  const auto le32 = [](const unsigned char* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
  };
  const std::string damaged = "archive '" + path + "' is damaged (changed after it was written): ";
  const std::string fix = "; download it again (tools/download_cifar10.sh)";
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_raw(a.get());
  archive_entry* entry = nullptr;
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK ||
      archive_read_next_header(a.get(), &entry) != ARCHIVE_OK)
    throw DataError(damaged + "its gzip stream cannot be read: " + archive_error_string(a.get()) + fix);
  std::vector<char> buffer(1 << 20);
  uint32_t crc = 0, length = 0;
  for (la_ssize_t n; (n = archive_read_data(a.get(), buffer.data(), buffer.size())) != 0;) {
    if (n < 0) throw DataError(damaged + "its gzip stream does not decompress: " + archive_error_string(a.get()) + fix);
    crc = crc32_update(crc, buffer.data(), static_cast<size_t>(n));
    length += static_cast<uint32_t>(n);
  }
  if (crc != le32(tail) || length != le32(tail + 4))
    throw DataError(damaged +
                    strprintf("its decompressed bytes have CRC-32 %08x and length %u (mod 2^32); its gzip "
                              "trailer records %08x and %u",
                              crc, length, le32(tail), le32(tail + 4)) +
                    fix);
}

// ---- reading the folder.
FileMap read_folder(const std::string& input, std::string* md5, std::vector<std::string>* others) {
  std::string folder = input;
  if (paths::is_directory(paths::join(folder, schema::kBatchesFolder)))
    folder = paths::join(folder, schema::kBatchesFolder);
  FileMap files;
  for (const std::string& name : paths::list(folder)) {
    const std::string path = paths::join(folder, name);
    if (max_member_bytes(name) < 0) {
      if (ends_with(name, ".bin") && paths::is_regular_file(path)) others->push_back(name);
      continue;
    }
    const paths::FileCheck check = paths::check_regular_file(path);
    if (check.problem == paths::FileProblem::Folder || check.problem == paths::FileProblem::NotRegular) continue;
    check_member_size(input, name, check.size, true);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    if (!in && !in.eof()) throw DataError("cannot read '" + path + "'");
    files[name] = os.str();
  }
  Md5 hash;  // a folder has no archive md5: hash the six .bin files in their canonical order
  auto add = [&](const std::string& name) {
    if (const auto it = files.find(name); it != files.end()) hash.update(it->second.data(), it->second.size());
  };
  for (const std::string& name : schema::kTrainBatchFiles) add(name);
  add(schema::kTestBatchFile);
  *md5 = hash.hex_digest();
  return files;
}

// ---- structure check and record parsing, the same for archive and folder.
void check_structure(const std::string& input, const FileMap& files, const std::vector<std::string>& others) {
  std::vector<std::string> expected(schema::kTrainBatchFiles.begin(), schema::kTrainBatchFiles.end());
  expected.emplace_back(schema::kTestBatchFile);
  int bins = static_cast<int>(others.size());
  for (const auto& [name, data] : files) bins += ends_with(name, ".bin") ? 1 : 0;
  for (const std::string& name : expected) {
    auto it = files.find(name);
    if (it == files.end()) {
      throw DataError("'" + input + "' is not the CIFAR-10 binary release: " + name +
                      " is missing (expected data_batch_1..5.bin and test_batch.bin)");
    }
    if (static_cast<int64_t>(it->second.size()) != schema::kBatchFileBytes) {
      throw DataError(strprintf("'%s': %s has %zu bytes; every CIFAR-10 batch file has exactly %lld", input.c_str(),
                                name.c_str(), it->second.size(), static_cast<long long>(schema::kBatchFileBytes)));
    }
  }
  if (bins != 6)
    throw DataError(strprintf("'%s' holds %d .bin files; the CIFAR-10 release has exactly 6", input.c_str(), bins));
}

void append_records(const std::string& input, const std::string& name, const std::string& bytes, RawSplit& split) {
  const int64_t records = static_cast<int64_t>(bytes.size()) / schema::kRecordBytes;
  const size_t old = split.labels.size();
  split.labels.resize(old + static_cast<size_t>(records));
  split.images.resize(split.labels.size() * schema::kImageBytes);
  for (int64_t r = 0; r < records; ++r) {
    const char* rec = bytes.data() + r * schema::kRecordBytes;
    const auto label = static_cast<uint8_t>(rec[0]);
    if (label >= schema::kNumClasses) {
      throw DataError(strprintf("'%s': %s record %lld has label %d; labels must be 0..9", input.c_str(), name.c_str(),
                                static_cast<long long>(r), label));
    }
    split.labels[old + static_cast<size_t>(r)] = label;
    std::memcpy(split.images.data() + (old + static_cast<size_t>(r)) * schema::kImageBytes, rec + 1,
                schema::kImageBytes);
  }
}

std::vector<std::string> parse_class_names(const FileMap& files, const std::string& input) {
  auto it = files.find(schema::kMetaFile);
  if (it == files.end()) return schema::default_class_names();
  std::vector<std::string> names;
  std::istringstream in(it->second);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  // A list that is present but not ten printable names is not the release's:
  // refused, never silently replaced by the default names.
  const bool printable = std::all_of(names.begin(), names.end(), [](const std::string& n) {
    return n.size() <= kMaxClassNameBytes &&
           std::all_of(n.begin(), n.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; });
  });
  if (names.size() != schema::kNumClasses || !printable)
    throw DataError(
        strprintf("'%s': %s holds %zu line(s)%s, not the 10 class names of CIFAR-10, one per line: is "
                  "it the CIFAR-10 binary release? (see tools/download_cifar10.sh)",
                  input.c_str(), schema::kMetaFile, names.size(), printable ? "" : " with unprintable bytes"));
  return names;
}

}  // namespace

CifarData read_cifar10_binary(const std::string& input) {
  if (!paths::exists(input)) {
    throw DataError("'" + input + "' does not exist; get the archive with tools/download_cifar10.sh");
  }
  const bool archive_input = !paths::is_directory(input);
  CifarData data;
  std::vector<std::string> others;  // .bin members the release does not have
  if (archive_input) check_gzip_trailer(input);
  const FileMap files =
      archive_input ? read_archive(input, &data.source.md5, &others) : read_folder(input, &data.source.md5, &others);
  check_structure(input, files, others);
  for (const std::string& name : schema::kTrainBatchFiles) append_records(input, name, files.at(name), data.train);
  append_records(input, schema::kTestBatchFile, files.at(schema::kTestBatchFile), data.test);
  data.class_names = parse_class_names(files, input);

  const std::string checked = "structure checked: six .bin files of 30,730,000 bytes, labels 0..9";
  if (!archive_input) {
    data.source.kind = "folder";
    data.source.md5_of = "data_batch_1..5.bin then test_batch.bin, concatenated";
    data.source.note = "extracted folder " + input + "; " + checked;
  } else if (data.source.md5 == schema::kOfficialArchiveMd5) {
    data.source.kind = "official-archive";
    data.source.md5_of = "archive file";
    data.source.note = "official CIFAR-10 binary release (md5 verified)";
  } else {
    data.source.kind = "archive";
    data.source.md5_of = "archive file";
    data.source.note = "not the official CIFAR-10 archive (md5 " + data.source.md5 + ", official " +
                       schema::kOfficialArchiveMd5 + "); " + checked;
  }
  return data;
}

// ---- writing the layout.
namespace {
std::string batch_bytes(const RawSplit& split, int64_t first) {
  std::string out(static_cast<size_t>(schema::kBatchFileBytes), '\0');
  for (int64_t r = 0; r < schema::kRecordsPerBatch; ++r) {
    char* rec = &out[static_cast<size_t>(r * schema::kRecordBytes)];
    rec[0] = static_cast<char>(split.labels[static_cast<size_t>(first + r)]);
    std::memcpy(rec + 1, split.images.data() + (first + r) * schema::kImageBytes, schema::kImageBytes);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> layout_files(const CifarData& data) {
  CIFAR_CHECK(data.train.count() == 5 * schema::kRecordsPerBatch && data.test.count() == schema::kRecordsPerBatch,
              ConfigError,
              strprintf("the official binary layout holds 50000 train and 10000 test samples, not %lld and %lld",
                        static_cast<long long>(data.train.count()), static_cast<long long>(data.test.count())));
  std::vector<std::pair<std::string, std::string>> files;
  std::string meta;
  for (const std::string& n : data.class_names) meta += n + "\n";
  files.emplace_back(schema::kMetaFile, meta);
  for (size_t b = 0; b < schema::kTrainBatchFiles.size(); ++b) {
    files.emplace_back(schema::kTrainBatchFiles[b],
                       batch_bytes(data.train, static_cast<int64_t>(b) * schema::kRecordsPerBatch));
  }
  files.emplace_back(schema::kTestBatchFile, batch_bytes(data.test, 0));
  return files;
}

void write_plain_file(const std::string& path, const std::string& bytes) {
  const std::string temp = temporary_path_for(path);
  TemporaryFileGuard guard(temp);
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw DataError("cannot write '" + temp + "': " + std::strerror(errno), kExitFailure);
  }
  publish_atomically(temp, path);
  guard.release();
}

void write_archive(const std::string& path, const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string temp = temporary_path_for(path);
  TemporaryFileGuard guard(temp);
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  auto check = [&](int rc, const char* what) {
    if (rc != ARCHIVE_OK)
      throw DataError("cannot write archive '" + path + "': " + what + ": " + archive_error_string(a.get()),
                      kExitFailure);
  };
  check(archive_write_add_filter_gzip(a.get()), "gzip filter");
  check(archive_write_set_format_ustar(a.get()), "tar format");
  check(archive_write_set_options(a.get(), "gzip:compression-level=1"), "gzip level");
  check(archive_write_open_filename(a.get(), temp.c_str()), "open");
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(), archive_entry_free);
  for (const auto& [name, bytes] : files) {
    archive_entry_clear(entry.get());
    archive_entry_set_pathname(entry.get(), (std::string(schema::kBatchesFolder) + "/" + name).c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(bytes.size()));
    check(archive_write_header(a.get(), entry.get()), "header");
    if (archive_write_data(a.get(), bytes.data(), bytes.size()) != static_cast<la_ssize_t>(bytes.size())) {
      check(ARCHIVE_FATAL, name.c_str());
    }
  }
  check(archive_write_close(a.get()), "close");
  publish_atomically(temp, path);
  guard.release();
}
}  // namespace

bool is_binary_archive_name(const std::string& output) { return is_archive_name(output); }

namespace {
// Left in a folder layout cifar_pack wrote: what tells its own output from
// the real batches.
constexpr const char* kSyntheticMarker = ".cifar_pack-synthetic";
}  // namespace

std::string check_binary_folder_output(const std::string& output) {
  const std::string folder = paths::join(output, schema::kBatchesFolder);
  if (!paths::exists(folder)) return "";
  if (!paths::is_directory(folder))
    throw ConfigError("--synthetic-binary " + output + ": " + folder + " exists and is not a folder; choose another");
  const std::vector<std::string> names = paths::list(folder);
  if (names.empty()) return "";
  if (std::find(names.begin(), names.end(), kSyntheticMarker) == names.end())
    throw ConfigError("--synthetic-binary " + output + ": " + folder + " holds " + std::to_string(names.size()) +
                      " file(s) cifar_pack did not write (" + names.front() + (names.size() > 1 ? ", ..." : "") +
                      "; the real CIFAR-10 batches?): never replaced; choose another folder");
  return "replaced the earlier synthetic layout of cifar_pack in " + folder;
}

void write_cifar10_binary(const CifarData& data, const std::string& output) {
  const auto files = layout_files(data);
  if (is_archive_name(output)) {
    write_archive(output, files);
    return;
  }
  const std::string folder = paths::join(output, schema::kBatchesFolder);
  const std::string why = paths::create_directories(folder);
  if (!why.empty()) throw DataError("cannot create folder '" + folder + "' (" + why + ")", kExitFailure);
  // The marker first: a layout cut short is still recognised as this program's.
  write_plain_file(paths::join(folder, kSyntheticMarker), "synthetic CIFAR-10 binary layout written by cifar_pack\n");
  for (const auto& [name, bytes] : files) write_plain_file(paths::join(folder, name), bytes);
}

}  // namespace cifar
