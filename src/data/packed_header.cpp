// The checksum header of a packed file (see packed_header.hpp).
#include "data/packed_header.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/md5.hpp"

namespace cifar::packed_header {
namespace {

using Digest = std::array<uint8_t, 16>;

[[noreturn]] void io_error(const std::string& path, const char* what) {
  throw DataError("HDF5 file '" + path + "': cannot be " + what + " (" + std::strerror(errno) + ")");
}

// An open file and its size; DataError naming it if it cannot be opened.
class File {
 public:
  File(const std::string& path, int flags, const char* what) : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
      const int saved = errno;
      if (fd_ >= 0) ::close(fd_);
      errno = saved;
      io_error(path, what);
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int get() const { return fd_; }
  uint64_t size() const { return size_; }

 private:
  int fd_;
  uint64_t size_ = 0;
};

// Reads up to out.size() bytes at `offset`; returns how many (fewer at the end).
size_t read_at(int fd, uint64_t offset, std::vector<unsigned char>& out, const std::string& path) {
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) io_error(path, "read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool parse_digest(const std::string& hex, Digest& out) {
  if (hex.size() != 2 * out.size()) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

// Without an early exit and without memcmp: libFuzzer records the operands of
// the comparisons it sees (memcmp's too) and copies them into later inputs, so
// a plain comparison would teach the fuzzer the digest of a damaged file and
// let it through to HDF5. Here it sees only (difference, 0).
bool same_digest(const Digest& a, const Digest& b) {
  uint64_t difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<uint64_t>(a[i] ^ b[i]) << (8 * (i % 8));
  return difference == 0;
}

// "size N\nmd5 HEX\n" after the magic, then NUL bytes to kBytes; false if the
// header is anything else.
bool parse_fields(const std::vector<unsigned char>& header, uint64_t& size, Digest& digest) {
  const std::string text(header.begin() + static_cast<std::ptrdiff_t>(sizeof(kMagic) - 1), header.end());
  size_t p = 0;
  const auto field = [&](const char* name, std::string& value) {
    const std::string prefix = std::string(name) + " ";
    if (text.compare(p, prefix.size(), prefix) != 0) return false;
    const size_t end = text.find('\n', p);
    if (end == std::string::npos) return false;
    value = text.substr(p + prefix.size(), end - p - prefix.size());
    p = end + 1;
    return true;
  };
  std::string size_text, md5_text;
  if (!field("size", size_text) || !field("md5", md5_text) || !parse_digest(md5_text, digest)) return false;
  if (size_text.empty() || size_text.size() > 19 || size_text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  size = std::stoull(size_text);
  return text.find_first_not_of('\0', p) == std::string::npos;
}

std::string hex_of(const Digest& d) {
  std::string s;
  for (uint8_t b : d) s += strprintf("%02x", b);
  return s;
}

// The MD5 of bytes kBytes..size of the file; false if it ends before `size`.
bool md5_after_header(int fd, uint64_t size, const std::string& path, std::string& hex) {
  std::vector<unsigned char> block(1 << 20);
  Md5 md5;
  for (uint64_t offset = kBytes; offset < size;) {
    const size_t n = read_at(fd, offset, block, path);
    if (n == 0) return false;
    md5.update(block.data(), n);
    offset += n;
  }
  hex = md5.hex_digest();
  return true;
}

}  // namespace

void seal(const std::string& path) {
  const File fd(path, O_RDWR, "opened to write its checksum header");
  const uint64_t size = fd.size();
  std::string md5;
  if (!md5_after_header(fd.get(), size, path, md5)) io_error(path, "read to its end");
  std::string header = kMagic + strprintf("size %llu\nmd5 ", static_cast<unsigned long long>(size)) + md5 + "\n";
  CIFAR_CHECK(header.size() <= kBytes, DataError, "checksum header too long");
  header.resize(kBytes, '\0');
  if (::pwrite(fd.get(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
    io_error(path, "written (its checksum header)");
}

Check check(const std::string& path) {
  const File fd(path, O_RDONLY, "read");
  const uint64_t size = fd.size();
  std::vector<unsigned char> header(kBytes);
  const size_t got = read_at(fd.get(), 0, header, path);
  Check result;
  if (got < sizeof(kMagic) - 1 || std::memcmp(header.data(), kMagic, sizeof(kMagic) - 1) != 0) return result;
  result.has_header = true;
  uint64_t recorded_size = 0;
  Digest recorded{};
  if (got < kBytes || !parse_fields(header, recorded_size, recorded)) {
    result.problem =
        strprintf("its checksum header (the first %llu bytes) is damaged", static_cast<unsigned long long>(kBytes));
    return result;
  }
  if (size != recorded_size) {
    result.problem =
        size < recorded_size
            ? strprintf("truncated: cifar_pack wrote %llu bytes, %llu are left",
                        static_cast<unsigned long long>(recorded_size), static_cast<unsigned long long>(size))
            : strprintf("is %llu bytes long, %llu more than cifar_pack wrote", static_cast<unsigned long long>(size),
                        static_cast<unsigned long long>(size - recorded_size));
    return result;
  }
  std::string md5;
  if (!md5_after_header(fd.get(), size, path, md5)) {
    result.problem = "cannot be read to its end (truncated while being read?)";
    return result;
  }
  Digest actual{};
  parse_digest(md5, actual);
  if (!same_digest(actual, recorded))
    result.problem = "damaged: the MD5 of its bytes after the header is " + md5 + ", cifar_pack recorded " +
                     hex_of(recorded) + " (the file changed after it was packed; HDF5 is not let near it)";
  return result;
}

}  // namespace cifar::packed_header
