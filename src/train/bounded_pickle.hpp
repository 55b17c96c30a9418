// Reading torch::pickle_save's files (checkpoints, model files) without
// LibTorch 1.13's unchecked reads.
//
// torch::pickle_load hands its bytes to the zip reader through an adapter that
// copies whatever range the reader asks for (VectorReader), and a damaged zip
// directory made it read past the buffer: a heap-buffer-overflow found by the
// checkpoint fuzz harness (tests/fuzz/regression/checkpoint). unpickle_zip()
// does what pickle_load does through an adapter that never reads past the end;
// a short read makes the zip reader fail with a c10::Error instead.
#pragma once

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace cifar {

class BoundedBytesReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  // `bytes` must outlive the reader.
  explicit BoundedBytesReader(const std::vector<char>& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - static_cast<size_t>(pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::vector<char>& bytes_;
};

// torch::pickle_load's result for pickle_save's zip layout: the pickle
// "data.pkl" and its tensors. Throws c10::Error (and, from LibTorch's parsers,
// other std::exceptions) on a damaged file.
inline c10::IValue unpickle_zip(const std::vector<char>& bytes) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytesReader>(bytes));
  return torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                           /*type_resolver=*/c10::nullopt, /*obj_loader=*/c10::nullopt,
                                           /*device=*/c10::nullopt, reader);
}

}  // namespace cifar
