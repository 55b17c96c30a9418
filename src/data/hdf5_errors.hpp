// HDF5 error handling: H5_CHECK / H5_CHECK_DATA turn a failing HDF5 call into
// one typed exception carrying file:line, the call and HDF5's own error stack
// (walked with H5Ewalk2), and H5Handle closes HDF5 ids on every path.
// HDF5's automatic error printing is switched off by silence_hdf5_errors():
// errors are reported once, through our exceptions, never as stderr dumps.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

namespace cifar {

// Turns off HDF5's automatic stack printing (H5Eset_auto2 on the default
// stack); idempotent, called by every entry point of the HDF5 reader/writer.
void silence_hdf5_errors();

// The current HDF5 error stack as one line: "H5Dread(): ... <- H5Z: data error
// detected by Fletcher32 checksum". Empty when the stack is empty.
std::string hdf5_error_stack_text();

namespace detail {
// Throws DataError("<context>: <call> failed (<file>:<line>): <stack>") when
// context is non-null, LibraryError otherwise.
[[noreturn]] void throw_hdf5_error(const char* call, const char* file, int line, const std::string* context);
}  // namespace detail

// Owns one HDF5 id (file, group, dataset, dataspace, property list, type,
// attribute) and closes it with the matching H5?close.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id_(std::exchange(o.id_, -1)), closer_(o.closer_) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      closer_ = o.closer_;
    }
    return *this;
  }
  ~H5Handle() { reset(); }
  hid_t get() const { return id_; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

}  // namespace cifar

// A negative herr_t/hid_t means failure in every HDF5 call. H5_CHECK throws
// LibraryError; H5_CHECK_DATA(call, context) throws DataError whose message starts
// with `context` (a std::string naming the file and dataset). Both evaluate to
// the call's value, so ids can be checked inline: hid_t d = H5_CHECK(H5Dopen2(...)).
#define H5_CHECK(call)                                                                           \
  ([&]() {                                                                                       \
    auto cifar_h5_rc_ = (call);                                                                  \
    if (cifar_h5_rc_ < 0) ::cifar::detail::throw_hdf5_error(#call, __FILE__, __LINE__, nullptr); \
    return cifar_h5_rc_;                                                                         \
  }())
#define H5_CHECK_DATA(call, context)                                                \
  ([&]() {                                                                          \
    auto cifar_h5_rc_ = (call);                                                     \
    if (cifar_h5_rc_ < 0) {                                                         \
      const std::string cifar_h5_ctx_ = (context);                                  \
      ::cifar::detail::throw_hdf5_error(#call, __FILE__, __LINE__, &cifar_h5_ctx_); \
    }                                                                               \
    return cifar_h5_rc_;                                                            \
  }())
