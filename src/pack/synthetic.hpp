// Synthetic CIFAR-shaped data with learnable class structure, deterministic
// from a seed, for tests and demos: class c has its own base colour and stripe
// pattern (orientation and period), each image a random stripe phase and
// uniform noise. A small ConvNet separates the classes within an epoch.
#pragma once

#include <cstdint>

#include "data/cifar_data.hpp"

namespace cifar {

// train_count and test_count samples, labels balanced (i mod 10) then shuffled.
// The same seed gives the same bytes on every platform (splitmix64 stream).
CifarData make_synthetic_cifar(int64_t train_count, int64_t test_count, uint64_t seed);

}  // namespace cifar
