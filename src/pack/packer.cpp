// CIFAR-10 packing: source -> HDF5 plus a summary (see packer.hpp).
#include "pack/packer.hpp"

#include "pack/cifar_binary.hpp"

namespace cifar {

PackSummary pack_cifar_data(const CifarData& data, const std::string& output, const H5WriteOptions& options) {
  write_cifar_h5(output, data, options);
  PackSummary s;
  s.source = data.source;
  s.train_count = data.train.count();
  s.test_count = data.test.count();
  s.train_classes = count_classes(data.train);
  s.test_classes = count_classes(data.test);
  s.train_stats = compute_channel_stats(data.train);
  s.test_stats = compute_channel_stats(data.test);
  return s;
}

PackSummary pack_cifar10(const std::string& input, const std::string& output, const H5WriteOptions& options) {
  return pack_cifar_data(read_cifar10_binary(input), output, options);
}

}  // namespace cifar
