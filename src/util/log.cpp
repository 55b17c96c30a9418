// Line-atomic logging with the rank prefix from util/error.hpp's identity.
#include "util/log.hpp"

#include <cstdarg>
#include <mutex>

#include "util/error.hpp"

namespace cifar {

std::string strprintf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

namespace log {
namespace {
std::mutex& io_mutex() {
  static std::mutex m;
  return m;
}
void write_line(std::FILE* stream, const std::string& line) {
  std::lock_guard<std::mutex> lock(io_mutex());
  std::string s = line;
  s.push_back('\n');
  std::fwrite(s.data(), 1, s.size(), stream);
  std::fflush(stream);
}
}  // namespace

void info(const std::string& line) {
  if (process_rank() <= 0) write_line(stdout, line);
}
void warn(const std::string& line) { write_line(stderr, process_tag() + " warning: " + line); }
void error(const std::string& line) { write_line(stderr, process_tag() + " error: " + line); }
void rank_line(const std::string& line) { write_line(stdout, process_tag() + " " + line); }
}  // namespace log
}  // namespace cifar
