// Process identity for messages and the library-error builder behind the check macros.
#include "util/error.hpp"

#include <mpi.h>
#include <unistd.h>

#include <mutex>
#include <sstream>

namespace cifar {
namespace {
struct Identity {
  int rank = -1;
  int world = 0;
  std::string host;
};
Identity& identity() {
  static Identity id;
  return id;
}
std::string local_hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}
}  // namespace

void set_process_identity(int rank, int world_size, const std::string& host) {
  identity() = Identity{rank, world_size, host};
}

std::string process_tag() {
  const Identity& id = identity();
  std::ostringstream os;
  if (id.rank < 0) {
    os << "[" << local_hostname() << "]";
  } else {
    os << "[rank " << id.rank << "/" << id.world << " " << id.host << "]";
  }
  return os.str();
}

int process_rank() { return identity().rank; }

namespace detail {
void throw_library_error(const char* library, const std::string& library_text, const char* call, const char* file,
                         int line) {
  std::ostringstream os;
  os << library << " error at " << file << ":" << line << ": " << call << " failed: " << library_text;
  throw LibraryError(os.str());
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}
}  // namespace detail
}  // namespace cifar
