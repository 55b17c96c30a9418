// --precision auto's rule and its live inputs (see precision_choice.hpp).
#include "step/precision_choice.hpp"

#include <torch/version.h>

#include "gpu/cuda_runtime.hpp"
#include "placement/cpu_flags.hpp"
#include "util/log.hpp"

namespace cifar {
namespace {

std::string capability_text(int capability) { return strprintf("%d.%d", capability / 10, capability % 10); }

PrecisionChoice chosen(Precision precision, const std::string& why) {
  return PrecisionChoice{precision, true, std::string(to_string(precision)) + ": " + why};
}

PrecisionChoice choose_for_gpu(const PrecisionInputs& in) {
  if (in.cuda_capability < 0)
    return chosen(Precision::Fp32, "GPU compute capability unknown; bf16 only where it is known to be 8.0 or above");
  if (in.cuda_capability >= 80)
    return chosen(Precision::Bf16,
                  "GPU compute capability " + capability_text(in.cuda_capability) + " (bf16 tensor cores)");
  return chosen(Precision::Fp32,
                "GPU compute capability " + capability_text(in.cuda_capability) + " has no bf16 tensor cores");
}

// LibTorch 1.13's oneDNN already uses AMX: bf16 measured 1.51x fp32 with it
// on a Xeon with AMX (2.x: 2.6x), so both take bf16. AVX-512 BF16 alone
// differs by vendor: on an AMD EPYC bf16 measured 1.4x fp32 (1.13) and 1.7x
// (2.15); on an Intel Xeon without AMX no faster or 29-35% slower.
PrecisionChoice choose_for_cpu(const PrecisionInputs& in) {
  const std::string torch = strprintf("LibTorch %d.%d", in.torch_major, in.torch_minor);
  if (in.amx_bf16 && in.amx_tile)
    return chosen(Precision::Bf16, "this CPU has AMX bf16 units (amx_bf16) and " + torch + " uses them");
  if (in.amx_bf16)
    return chosen(Precision::Fp32, "this CPU reports amx_bf16 without amx_tile; bf16 would be slower here");
  if (in.amd && in.avx512_bf16)
    return chosen(Precision::Bf16,
                  "this AMD CPU has AVX-512 BF16 (avx512_bf16), on which " + torch + " trains bf16 faster than fp32");
  return chosen(Precision::Fp32, std::string("this CPU has no bf16 matrix units (no amx_bf16") +
                                     (in.avx512_bf16 ? ", only avx512_bf16" : "") + "); bf16 would be slower here");
}

}  // namespace

std::string PrecisionChoice::text() const {
  return automatic ? "auto chose " + why : std::string(to_string(precision)) + " (as given)";
}

PrecisionChoice choose_precision(const PrecisionInputs& inputs) {
  return inputs.cuda ? choose_for_gpu(inputs) : choose_for_cpu(inputs);
}

PrecisionInputs probe_precision_inputs(torch::Device device) {
  PrecisionInputs in;
  in.cuda = device.is_cuda();
  if (in.cuda) in.cuda_capability = gpu::compute_capability(static_cast<int>(device.index()));
  const std::set<std::string> flags = read_cpu_flags();
  in.amx_bf16 = flags.count("amx_bf16") > 0;
  in.amx_tile = flags.count("amx_tile") > 0;
  in.avx512_bf16 = flags.count("avx512_bf16") > 0;
  in.amd = read_cpu_vendor() == "AuthenticAMD";
  in.torch_major = TORCH_VERSION_MAJOR;
  in.torch_minor = TORCH_VERSION_MINOR;
  return in;
}

PrecisionChoice resolve_precision(Precision requested, torch::Device device) {
  if (requested != Precision::Auto) return PrecisionChoice{requested, false, ""};
  return choose_precision(probe_precision_inputs(device));
}

}  // namespace cifar
