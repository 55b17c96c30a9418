// Paths and folders through POSIX calls, for every part of the project.
//
// Why not std::filesystem: LibTorch's pip wheels (2.5 and later, and the zips
// built the same way) export the copies of libstdc++'s std::filesystem that
// they link statically (pytorch/pytorch#133437). A program that calls
// std::filesystem then gets some functions from those copies and others from
// the system's libstdc++, and the two need not agree on what a path holds: on
// an H200 machine with torch 2.11 every test that built a temporary folder
// crashed (LD_PRELOAD of the system libstdc++ made them pass). With no
// std::filesystem in the project, nothing can bind to the wrong copy;
// tests/util checks that no program or test imports it.
#pragma once

#include <string>
#include <vector>

namespace cifar::paths {

// "folder/name"; just `name` when folder is empty.
std::string join(const std::string& folder, const std::string& name);
// The part after the last '/' ("b.h5" of "a/b.h5"; the whole path if none).
std::string file_name(const std::string& path);
// The part before the last '/' ("a" of "a/b.h5", "/" of "/b.h5", "" of "b.h5").
std::string parent(const std::string& path);
// `path` joined to the working folder when it is relative.
std::string absolute(const std::string& path);
// The path as the kernel resolves it (links, "." and "..", a trailing '/'),
// so that one file spelled two ways is one; absolute(path) when it is missing.
std::string resolved(const std::string& path);

// Every file mapped into this process (the paths in /proc/self/maps, each
// once, in the order first mapped): the shared objects actually loaded,
// whichever search path found them. Empty where /proc is unreadable.
std::vector<std::string> mapped_files(const std::string& maps = "/proc/self/maps");

// The running program's own file (/proc/self/exe, links resolved), for what
// is installed next to it; "" when the kernel does not say.
std::string executable();

bool exists(const std::string& path);
bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);

// Whether an input can be read as a regular file, decided by stat() and
// access() before anything opens it: a FIFO would block the reader forever
// and a device (/dev/zero) would feed it without end.
enum class FileProblem { None, Missing, Folder, NotRegular, TooLarge, Unreadable };
struct FileCheck {
  FileProblem problem = FileProblem::None;
  std::string reason;  // "no such file", "is a folder, not a file", ...; "" when None
  long long size = 0;  // bytes, when the file exists
  explicit operator bool() const { return problem == FileProblem::None; }
};
// `max_bytes` < 0: any size. Callers add their own context and fix to `reason`.
FileCheck check_regular_file(const std::string& path, long long max_bytes = -1);

// The names (not paths) in a folder, sorted, without "." and "..".
// Throws cifar::Error naming the folder and the reason.
std::vector<std::string> list(const std::string& folder);

// Creates the folder and any missing parents (mkdir -p). Returns "" on
// success, else "<the path that failed>: <reason>".
std::string create_directories(const std::string& path);
// Deletes a file, or a folder and everything in it (rm -rf); nothing to do
// when absent. Returns "" on success, else "<what failed>: <strerror>".
std::string remove_all(const std::string& path);

// Output folders are checked before a program spends time: creates `folder`
// (mkdir -p) and throws ConfigError "--OPTION VALUE: cannot write to folder
// FOLDER (reason); choose a writable path" unless it is writable.
// FolderUse::Check creates nothing (a pre-flight check leaves no trace): a
// folder not there yet is judged by the nearest one on its path that is,
// which must be a writable folder for mkdir -p to succeed.
enum class FolderUse { Create, Check };
void require_writable_folder(const std::string& option, const std::string& value, const std::string& folder,
                             FolderUse use = FolderUse::Create);
// The same for the folder of the output file `path`; nothing when `path` is empty.
void require_writable_file(const std::string& option, const std::string& path, FolderUse use = FolderUse::Create);
// $TMPDIR when set, else /tmp.
std::string temp_directory();
// A new, empty folder in temp_directory() named `prefix` + 6 unique
// characters (mkdtemp). Throws cifar::Error naming the folder and the reason.
std::string make_temp_directory(const std::string& prefix);

}  // namespace cifar::paths
