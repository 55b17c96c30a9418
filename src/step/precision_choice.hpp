// --precision auto: fp32 or bf16, chosen once at start-up from what the rank
// runs on. choose_precision() is the rule, a pure function of the inputs;
// probe_precision_inputs() fills them from the live process. Every rank of a
// job of alike nodes comes to the same choice. fp16 is never chosen (its
// narrow range needs loss scaling, which is asked for by name), so an auto run
// has no loss scaler.
//
// The rule (docs/performance.md has the measurements behind it):
//   CPU with AMX bf16 units (amx_bf16 and amx_tile) -> bf16: oneDNN runs bf16
//     convolutions and matrix products on them, with LibTorch 1.13 and 2.x
//   AMD CPU with AVX-512 BF16 (avx512_bf16)          -> bf16: faster than fp32
//     there with LibTorch 1.13 and 2.x (an AMD EPYC, measured)
//   any other CPU (an Intel one with AVX-512 BF16 but no AMX included)
//                                                    -> fp32: bf16 is slower there
//   GPU of compute capability 8.0 or above           -> bf16 (bf16 tensor cores)
//   GPU below 8.0, or of unknown capability          -> fp32
#pragma once

#include <torch/torch.h>

#include <string>

#include "config/choices.hpp"

namespace cifar {

struct PrecisionInputs {
  bool cuda = false;         // the rank's device is a GPU
  int cuda_capability = -1;  // major * 10 + minor (80 is 8.0); -1 unknown
  bool amx_bf16 = false;     // /proc/cpuinfo flags
  bool amx_tile = false;
  bool avx512_bf16 = false;
  bool amd = false;     // vendor_id AuthenticAMD
  int torch_major = 0;  // the LibTorch the program runs with
  int torch_minor = 0;
};

struct PrecisionChoice {
  Precision precision = Precision::Fp32;  // never Auto
  bool automatic = false;                 // chosen by auto, not given
  std::string why;                        // "bf16: GPU compute capability 9.0 (bf16 tensor cores)"

  // For the start-up log and --check-env: "auto chose fp32: ..." or "bf16 (as given)".
  std::string text() const;
};

// The rule above.
PrecisionChoice choose_precision(const PrecisionInputs& inputs);

// The inputs for a rank on `device`: the CPU's flags, the GPU's compute
// capability, this build's LibTorch.
PrecisionInputs probe_precision_inputs(torch::Device device);

// What the run trains in: `requested` itself, or auto's choice for `device`.
PrecisionChoice resolve_precision(Precision requested, torch::Device device);

}  // namespace cifar
