// The CIFAR-10 task: image shape, the ten classes and their names. Every floor
// may use it (a model's head, the evaluation's confusion matrix, the data
// readers); the HDF5 file's own schema is data/cifar_schema.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cifar::cifar10 {

inline constexpr int64_t kChannels = 3;
inline constexpr int64_t kHeight = 32;
inline constexpr int64_t kWidth = 32;
inline constexpr int64_t kPlaneBytes = kHeight * kWidth;         // 1024
inline constexpr int64_t kImageBytes = kChannels * kPlaneBytes;  // 3072
inline constexpr int kNumClasses = 10;

// The official release's names, in label order (batches.meta.txt).
inline const std::vector<std::string>& default_class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

}  // namespace cifar::cifar10
