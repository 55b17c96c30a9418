// HDF5 error-stack walking and the exception builder behind H5_CHECK.
#include "data/hdf5_errors.hpp"

#include <sstream>

#include "util/error.hpp"

namespace cifar {

void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

namespace {
herr_t append_error(unsigned n, const H5E_error2_t* e, void* client) {
  auto* os = static_cast<std::ostringstream*>(client);
  if (n > 0) *os << " <- ";
  *os << (e->func_name ? e->func_name : "?") << "(): " << (e->desc ? e->desc : "");
  // The minor message says what kind of failure it was ("Read failed", ...).
  char minor[128] = {0};
  if (H5Eget_msg(e->min_num, nullptr, minor, sizeof(minor)) > 0) *os << " [" << minor << "]";
  return 0;
}
}  // namespace

std::string hdf5_error_stack_text() {
  std::ostringstream os;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, append_error, &os);
  return os.str();
}

namespace detail {
void throw_hdf5_error(const char* call, const char* file, int line, const std::string* context) {
  const std::string stack = hdf5_error_stack_text();
  H5Eclear2(H5E_DEFAULT);
  if (context) {
    std::ostringstream os;
    os << *context << ": " << call << " failed (" << file << ":" << line
       << "): " << (stack.empty() ? "no HDF5 error text" : stack);
    throw DataError(os.str());
  }
  throw_library_error("HDF5", stack.empty() ? "no HDF5 error text" : stack, call, file, line);
}
}  // namespace detail

}  // namespace cifar
