// Fuzz harness: the CIFAR-10 binary-release reader (read_cifar10_binary), on
// an archive and on a folder.
//
// Input, archive mode (anything not starting with 'D'): the bytes of the
// archive (.tar.gz, .tar, ...), written to the scratch folder.
// Input, folder mode ('D', then entries): each entry is
//   u8 name length, name, u32 LE size, u16 LE pattern length, pattern
// and becomes a file of `size` bytes, the pattern repeated (zeros without
// one), or a folder when the name ends in '/'. Names are letters, digits,
// '.', '_' and '-', with at most one '/' (the cifar-10-batches-bin folder);
// others are skipped. The patterns let a small input describe the six
// 30,730,000-byte files of a complete release, so the fuzzer reaches the
// record parsing, not only the structure checks.
// The contract under test (pack/cifar_binary.hpp): a CifarData or one
// DataError; any other exception, crash or sanitizer report is a bug.
#include <archive.h>
#include <archive_entry.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data/cifar_schema.hpp"
#include "fuzz_support.hpp"
#include "pack/cifar_binary.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace cifar::fuzz {
namespace {

constexpr size_t kMaxEntries = 8;
// Room for a file one record longer than a batch file.
constexpr uint32_t kMaxFileBytes = static_cast<uint32_t>(schema::kBatchFileBytes + schema::kRecordBytes);

bool valid_component(const std::string& part) {
  if (part.empty() || part == "." || part == "..") return false;
  for (const char c : part) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

// "name", "folder/" or "folder/name".
bool valid_name(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return valid_component(name);
  const std::string rest = name.substr(slash + 1);
  return valid_component(name.substr(0, slash)) && (rest.empty() || valid_component(rest));
}

// Builds the folder an input in folder mode describes under `root`.
void build_folder(const std::string& root, const uint8_t* p, size_t n) {
  paths::create_directories(root);
  std::string content;
  for (size_t entries = 0; entries < kMaxEntries && n > 0; ++entries) {
    const size_t name_len = p[0];
    if (n < 1 + name_len + 6) return;
    const std::string name(reinterpret_cast<const char*>(p + 1), name_len);
    p += 1 + name_len;
    n -= 1 + name_len;
    uint32_t size = 0;
    std::memcpy(&size, p, 4);
    uint16_t pattern_len = 0;
    std::memcpy(&pattern_len, p + 4, 2);
    p += 6;
    n -= 6;
    pattern_len = static_cast<uint16_t>(std::min<size_t>(pattern_len, n));
    const uint8_t* pattern = p;
    p += pattern_len;
    n -= pattern_len;
    if (!valid_name(name)) continue;
    const std::string path = paths::join(root, name);
    if (name.back() == '/') {
      paths::create_directories(path);
      continue;
    }
    if (name.find('/') != std::string::npos) paths::create_directories(paths::parent(path));
    size = std::min(size, kMaxFileBytes);
    content.assign(size, '\0');
    for (size_t i = 0; pattern_len > 0 && i < size; i += pattern_len) {
      std::memcpy(&content[i], pattern, std::min<size_t>(pattern_len, size - i));
    }
    if (paths::is_directory(path)) continue;
    write_file(path, content);
  }
}

// ---- seeds
struct FileSpec {
  std::string name;
  uint32_t size;
  std::string pattern;
};

std::string folder_input(const std::vector<FileSpec>& files) {
  std::string out = "D";
  for (const auto& f : files) {
    out += static_cast<char>(f.name.size());
    out += f.name;
    out.append(reinterpret_cast<const char*>(&f.size), 4);
    const auto len = static_cast<uint16_t>(f.pattern.size());
    out.append(reinterpret_cast<const char*>(&len), 2);
    out += f.pattern;
  }
  return out;
}

// `records` records per batch file, record r of a file with label (r + offset) % 10.
std::string records(int count, int offset) {
  std::string out;
  for (int r = 0; r < count; ++r) {
    std::string rec(static_cast<size_t>(schema::kRecordBytes), '\0');
    rec[0] = static_cast<char>((r + offset) % schema::kNumClasses);
    for (size_t i = 1; i < rec.size(); ++i) rec[i] = static_cast<char>((i * 7 + static_cast<size_t>(r)) & 0xff);
    out += rec;
  }
  return out;
}

std::string class_names_text() {
  std::string text;
  for (const auto& n : schema::default_class_names()) text += n + "\n";
  return text;
}

// The official layout with `per_file` records in each batch file.
std::vector<std::pair<std::string, std::string>> release_files(int per_file) {
  std::vector<std::pair<std::string, std::string>> files;
  const std::string folder = std::string(schema::kBatchesFolder) + "/";
  files.emplace_back(folder + schema::kMetaFile, class_names_text());
  int offset = 0;
  for (const auto& name : schema::kTrainBatchFiles) files.emplace_back(folder + name, records(per_file, offset++));
  files.emplace_back(folder + schema::kTestBatchFile, records(per_file, offset));
  files.emplace_back(folder + "readme.html", "<meta HTTP-EQUIV=\"REFRESH\" content=\"0; url=...\">\n");
  return files;
}

// Written with libarchive as the project's own writer does (pack/cifar_binary.cpp).
void write_archive(const std::string& path, bool gzip, const std::vector<std::pair<std::string, std::string>>& files) {
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  auto check = [&](int rc) {
    if (rc != ARCHIVE_OK) throw std::runtime_error("fuzz: cannot write " + path + ": " + archive_error_string(a.get()));
  };
  if (gzip) check(archive_write_add_filter_gzip(a.get()));
  check(archive_write_set_format_ustar(a.get()));
  check(archive_write_open_filename(a.get(), path.c_str()));
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(), archive_entry_free);
  for (const auto& [name, bytes] : files) {
    archive_entry_clear(entry.get());
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(bytes.size()));
    check(archive_write_header(a.get(), entry.get()));
    if (archive_write_data(a.get(), bytes.data(), bytes.size()) != static_cast<la_ssize_t>(bytes.size()))
      check(ARCHIVE_FATAL);
  }
  check(archive_write_close(a.get()));
}

}  // namespace

void write_seeds(const std::string& dir) {
  // Archives in the official layout, two records per batch file (the reader
  // stops at the sizes): gzip and plain tar.
  write_archive(dir + "/release-2-records.tar.gz", true, release_files(2));
  write_archive(dir + "/release-2-records.tar", false, release_files(2));
  // Folders: a complete release (six full batch files, each one record
  // repeated), nested in cifar-10-batches-bin/ and flat; a small one.
  std::vector<FileSpec> full;
  int offset = 0;
  for (const auto& name : schema::kTrainBatchFiles)
    full.push_back({name, kMaxFileBytes - schema::kRecordBytes, records(1, offset++)});
  full.push_back({schema::kTestBatchFile, kMaxFileBytes - schema::kRecordBytes, records(1, offset)});
  full.push_back({schema::kMetaFile, 0, ""});
  full.back().pattern = class_names_text();
  full.back().size = static_cast<uint32_t>(full.back().pattern.size());
  write_file(dir + "/folder-complete", folder_input(full));
  auto nested = full;
  for (auto& f : nested) f.name = std::string(schema::kBatchesFolder) + "/" + f.name;
  nested.insert(nested.begin(), {std::string(schema::kBatchesFolder) + "/", 0, ""});
  write_file(dir + "/folder-complete-nested", folder_input(nested));
  std::vector<FileSpec> small;
  for (const auto& [name, bytes] : release_files(2))
    small.push_back({paths::file_name(name), static_cast<uint32_t>(bytes.size()), bytes});
  write_file(dir + "/folder-2-records", folder_input(small));
}

}  // namespace cifar::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cifar::fuzz::clear_scratch();
  std::string input;
  if (size > 0 && data[0] == 'D') {
    input = cifar::paths::join(cifar::fuzz::scratch_dir(), "folder");
    cifar::fuzz::build_folder(input, data + 1, size - 1);
  } else {
    input = cifar::fuzz::write_scratch_file("input.tar.gz", data, size);
  }
  try {
    const cifar::CifarData d = cifar::read_cifar10_binary(input);
    if (d.train.count() != 50000 || d.test.count() != 10000 || d.class_names.size() != 10) __builtin_trap();
  } catch (const cifar::DataError&) {
    // The documented failure: one message naming the input.
  }
  return 0;
}
