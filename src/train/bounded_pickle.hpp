// Reading torch::pickle_save's files (checkpoints, model files) without
// LibTorch 1.13's unchecked reads.
//
// torch::pickle_load hands its bytes to the zip reader through an adapter that
// copies whatever range the reader asks for (VectorReader), and a damaged zip
// directory made it read past the buffer: a heap-buffer-overflow found by the
// checkpoint fuzz harness (tests/fuzz/regression/checkpoint). unpickle_zip()
// does what pickle_load does through an adapter that never reads past the end;
// a short read makes the zip reader fail with a c10::Error instead. Before
// that, check_torch_archive() refuses any size in the zip or its pickles that
// would make LibTorch allocate more than the file holds (archive_check.hpp).
#pragma once

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/import_read.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "train/archive_check.hpp"

namespace cifar {

class BoundedBytesReader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  // The bytes must outlive the reader.
  BoundedBytesReader(const char* data, size_t size) : data_(data), size_(size) {}
  explicit BoundedBytesReader(const std::vector<char>& bytes) : BoundedBytesReader(bytes.data(), bytes.size()) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = std::min<size_t>(n, size_ - static_cast<size_t>(pos));
    std::memcpy(buf, data_ + pos, n);
    return n;
  }

 private:
  const char* data_;
  size_t size_;
};

// torch::pickle_load's result for pickle_save's zip layout: the pickle
// "data.pkl" and its tensors. Throws c10::Error (and, from LibTorch's parsers,
// other std::exceptions, ArchiveError among them) on a damaged file.
inline c10::IValue unpickle_zip(const std::vector<char>& bytes) {
  check_torch_archive(bytes.data(), bytes.size());
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<BoundedBytesReader>(bytes));
  return torch::jit::readArchiveAndTensors("data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
                                           /*type_resolver=*/c10::nullopt, /*obj_loader=*/c10::nullopt,
                                           /*device=*/c10::nullopt, reader);
}

}  // namespace cifar
