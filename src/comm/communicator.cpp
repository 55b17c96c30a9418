// Shared checks and descriptions for every backend.
#include "comm/communicator.hpp"

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "float32";
    case torch::kFloat64: return "float64";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat16: return "float16";
    case torch::kInt64: return "int64";
    case torch::kInt32: return "int32";
    case torch::kUInt8: return "uint8";
    default: return c10::toString(t);
  }
}

std::string describe(const char* operation, const torch::Tensor& tensor) {
  const double bytes = static_cast<double>(tensor.numel()) * static_cast<double>(tensor.element_size());
  const char* unit = "B";
  double value = bytes;
  if (bytes >= 1024.0 * 1024.0) {
    value = bytes / (1024.0 * 1024.0);
    unit = "MiB";
  } else if (bytes >= 1024.0) {
    value = bytes / 1024.0;
    unit = "KiB";
  }
  return strprintf("%s of %lld %s (%.1f %s)", operation, static_cast<long long>(tensor.numel()),
                   dtype_name(tensor.scalar_type()).c_str(), value, unit);
}

std::string timeout_message(const std::string& what, std::chrono::milliseconds timeout) {
  return strprintf(
      "%s did not complete within %.1f s (--comm-timeout): another rank is stalled, dead or issued "
      "different collectives",
      what.c_str(), std::chrono::duration<double>(timeout).count());
}

void Communicator::check_tensor(const torch::Tensor& tensor, const char* operation) {
  if (!tensor.defined()) throw Error(std::string(operation) + ": undefined tensor");
  if (!tensor.is_contiguous()) throw Error(describe(operation, tensor) + ": tensor must be contiguous");
  switch (tensor.scalar_type()) {
    case torch::kFloat32:
    case torch::kFloat64:
    case torch::kBFloat16:
    case torch::kFloat16:
    case torch::kInt64:
    case torch::kUInt8:
    case torch::kInt32: return;
    default: throw Error(describe(operation, tensor) + ": unsupported dtype");
  }
}

}  // namespace cifar
