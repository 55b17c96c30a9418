// Paths and folders through POSIX calls (see paths.hpp for why).
#include "util/paths.hpp"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar::paths {

std::string join(const std::string& folder, const std::string& name) {
  if (folder.empty()) return name;
  return folder.back() == '/' ? folder + name : folder + "/" + name;
}

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string parent(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  std::unique_ptr<char, decltype(&std::free)> cwd(::getcwd(nullptr, 0), &std::free);
  if (!cwd) throw Error(std::string("cannot read the working folder: ") + std::strerror(errno));
  return join(cwd.get(), path);
}

std::string resolved(const std::string& path) {
  // realpath(path, nullptr) allocates: no PATH_MAX buffer to outgrow.
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  return real ? std::string(real.get()) : absolute(path);
}

std::string executable() {
  std::vector<char> buffer(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buffer.data(), buffer.size());
  if (n <= 0 || static_cast<size_t>(n) >= buffer.size()) return "";
  return std::string(buffer.data(), static_cast<size_t>(n));
}

std::vector<std::string> mapped_files(const std::string& maps) {
  std::vector<std::string> files;
  std::ifstream in(maps);
  std::string line;
  while (std::getline(in, line)) {
    const auto slash = line.find('/');  // anonymous and [heap]-like mappings have no path
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(std::move(path));
  }
  return files;
}

namespace {
struct CloseDir {
  void operator()(DIR* d) const { ::closedir(d); }
};

bool stat_mode(const std::string& path, mode_t* mode) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  *mode = st.st_mode;
  return true;
}
}  // namespace

bool exists(const std::string& path) {
  mode_t mode;
  return stat_mode(path, &mode);
}

bool is_directory(const std::string& path) {
  mode_t mode;
  return stat_mode(path, &mode) && S_ISDIR(mode);
}

bool is_regular_file(const std::string& path) {
  mode_t mode;
  return stat_mode(path, &mode) && S_ISREG(mode);
}

FileCheck check_regular_file(const std::string& path, long long max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return {FileProblem::Missing, "no such file", 0};
    return {FileProblem::Unreadable, std::string("cannot be read (") + std::strerror(errno) + ")", 0};
  }
  const long long size = static_cast<long long>(st.st_size);
  if (S_ISDIR(st.st_mode)) return {FileProblem::Folder, "is a folder, not a file", size};
  if (!S_ISREG(st.st_mode)) return {FileProblem::NotRegular, "is not a regular file (a FIFO, socket or device)", size};
  if (max_bytes >= 0 && size > max_bytes)
    return {
        FileProblem::TooLarge,
        "has " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + " such a file can have",
        size};
  if (::access(path.c_str(), R_OK) != 0)
    return {FileProblem::Unreadable, std::string("cannot be read (") + std::strerror(errno) + ")", size};
  return {FileProblem::None, "", size};
}

std::vector<std::string> list(const std::string& folder) {
  const std::unique_ptr<DIR, CloseDir> dir(::opendir(folder.c_str()));
  if (!dir) throw Error("cannot list folder '" + folder + "': " + std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string create_directories(const std::string& path) {
  if (path.empty() || is_directory(path)) return "";
  if (exists(path)) return path + ": exists and is not a folder";
  const std::string up = parent(path);
  if (!up.empty() && up != path) {
    const std::string why = create_directories(up);
    if (!why.empty()) return why;
  }
  if (::mkdir(path.c_str(), 0777) != 0 && !(errno == EEXIST && is_directory(path))) {
    return path + ": " + std::strerror(errno);
  }
  return "";
}

std::string remove_all(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : path + ": " + std::strerror(errno);
  // Depth first (FTW_DEPTH), not following links (FTW_PHYS): contents before their folder.
  static thread_local std::string failure;
  failure.clear();
  const auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) -> int {
    if (::remove(p) != 0) failure = std::string(p) + ": " + std::strerror(errno);
    return 0;  // keep going: delete as much as possible
  };
  if (::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return path + ": " + std::strerror(errno);
  }
  return failure;
}

namespace {
// "Permission denied" -> "permission denied", as the messages around it read.
std::string lowercase_first(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// The first of `path` and its parents that exists ("." for a relative path
// none of whose parts does).
std::string nearest_existing(const std::string& path) {
  std::string p = path;
  while (!exists(p)) {
    const std::string up = parent(p);
    if (up.empty()) return ".";
    if (up == p) break;
    p = up;
  }
  return p;
}
}  // namespace

void require_writable_folder(const std::string& option, const std::string& value, const std::string& folder,
                             FolderUse use) {
  std::string why, probe = folder;
  if (use == FolderUse::Create) {
    why = create_directories(folder);
  } else {
    probe = nearest_existing(folder);
    if (!is_directory(probe)) why = probe + ": exists and is not a folder";
  }
  // access() says why: a read-only file system (EROFS) is not a permission.
  if (why.empty() && access(probe.c_str(), W_OK) != 0) why = lowercase_first(std::strerror(errno));
  if (!why.empty())
    throw ConfigError(strprintf("--%s %s: cannot write to folder %s (%s); choose a writable path", option.c_str(),
                                value.c_str(), folder.c_str(), why.c_str()));
}

void require_writable_file(const std::string& option, const std::string& path, FolderUse use) {
  if (!path.empty()) require_writable_folder(option, path, parent(absolute(path)), use);
}

std::string temp_directory() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::string make_temp_directory(const std::string& prefix) {
  std::string name = join(temp_directory(), prefix + "XXXXXX");
  if (::mkdtemp(name.data()) == nullptr) {
    throw Error("cannot create a temporary folder '" + name + "': " + std::strerror(errno));
  }
  return name;
}

}  // namespace cifar::paths
