// NCCL's own log of a communicator's set-up, captured so that the node checks
// (placement/node_checks.hpp) can read which network NCCL chose between the
// nodes: NCCL has no API for it and says it only at INFO level ("Using
// network IB", "Using network Socket"), on stdout unless NCCL_DEBUG_FILE
// names a file.
//
// While a capture runs, this process's stdout goes to a temporary file; at its
// end stdout is restored and the lines the user would have seen are printed
// again: NCCL's WARN lines and every line that is not NCCL's, and all of them
// when the user asked for NCCL_DEBUG=INFO or TRACE. Where the user left
// NCCL_DEBUG unset or below INFO, the capture sets NCCL_DEBUG=INFO (and
// NCCL_DEBUG_SUBSYS=INIT when unset) before NCCL's first call, so it must
// begin before NCCL is first used. Where NCCL_DEBUG_FILE is set, NCCL writes
// there and nothing is captured.
#pragma once

#include <string>
#include <vector>

namespace cifar {

class NcclLogCapture {
 public:
  // Starts capturing (see above); `enabled` false: does nothing.
  explicit NcclLogCapture(bool enabled);
  NcclLogCapture(const NcclLogCapture&) = delete;
  NcclLogCapture& operator=(const NcclLogCapture&) = delete;
  // Restores stdout if finish() was not called (an exception on the way).
  ~NcclLogCapture();
  // Restores stdout, prints again what the user would have seen, and returns
  // every captured line; empty when nothing was captured.
  std::vector<std::string> finish();
  bool capturing() const { return saved_stdout_ >= 0; }

 private:
  int saved_stdout_ = -1;
  std::string path_;
  bool user_wants_info_ = false;
};

}  // namespace cifar
