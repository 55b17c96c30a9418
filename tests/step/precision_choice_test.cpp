// --precision auto's rule on made-up machines: bf16 only on CPUs with AMX
// bf16 units (LibTorch 1.13 and 2.x alike) and on GPUs known to be of
// compute capability 8.0 or above; fp32 everywhere else, AVX-512 BF16 alone
// included. Each choice says why.
#include "step/precision_choice.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cifar {
namespace {

// A CPU with AMX (amx_bf16 and amx_tile) or not, AMD's or Intel's, with LibTorch major.minor.
PrecisionInputs cpu(bool amx, bool avx512_bf16, int torch_major, int torch_minor, bool amd = false) {
  return PrecisionInputs{.amx_bf16 = amx,
                         .amx_tile = amx,
                         .avx512_bf16 = avx512_bf16,
                         .amd = amd,
                         .torch_major = torch_major,
                         .torch_minor = torch_minor};
}

PrecisionInputs gpu(int capability) { return PrecisionInputs{.cuda = true, .cuda_capability = capability}; }

struct Row {
  const char* machine;
  PrecisionInputs inputs;
  Precision expected;
  const char* why;  // the choice's text, in full
};

TEST(PrecisionChoice, TableOfMachines) {
  const std::vector<Row> rows = {
      {"Xeon with AMX, LibTorch 1.13", cpu(true, true, 1, 13), Precision::Bf16,
       "bf16: this CPU has AMX bf16 units (amx_bf16) and LibTorch 1.13 uses them"},
      {"Xeon with AMX, LibTorch 2.11", cpu(true, true, 2, 11), Precision::Bf16,
       "bf16: this CPU has AMX bf16 units (amx_bf16) and LibTorch 2.11 uses them"},
      {"Intel Xeon with AVX-512 BF16, no AMX", cpu(false, true, 2, 11), Precision::Fp32,
       "fp32: this CPU has no bf16 matrix units (no amx_bf16, only avx512_bf16); bf16 would be slower here"},
      {"AMD EPYC with AVX-512 BF16 (Zen 4), LibTorch 1.13", cpu(false, true, 1, 13, true), Precision::Bf16,
       "bf16: this AMD CPU has AVX-512 BF16 (avx512_bf16), on which LibTorch 1.13 trains bf16 faster than fp32"},
      {"AMD EPYC with AVX-512 BF16 (Zen 4), LibTorch 2.15", cpu(false, true, 2, 15, true), Precision::Bf16,
       "bf16: this AMD CPU has AVX-512 BF16 (avx512_bf16), on which LibTorch 2.15 trains bf16 faster than fp32"},
      {"AMD EPYC without AVX-512 BF16 (Zen 3)", cpu(false, false, 2, 15, true), Precision::Fp32,
       "fp32: this CPU has no bf16 matrix units (no amx_bf16); bf16 would be slower here"},
      {"no bf16 flags", cpu(false, false, 1, 13), Precision::Fp32,
       "fp32: this CPU has no bf16 matrix units (no amx_bf16); bf16 would be slower here"},
      {"GPU cc 8.0", gpu(80), Precision::Bf16, "bf16: GPU compute capability 8.0 (bf16 tensor cores)"},
      {"GPU cc 9.0", gpu(90), Precision::Bf16, "bf16: GPU compute capability 9.0 (bf16 tensor cores)"},
      {"GPU cc 7.0", gpu(70), Precision::Fp32, "fp32: GPU compute capability 7.0 has no bf16 tensor cores"},
      {"GPU of unknown cc", gpu(-1), Precision::Fp32,
       "fp32: GPU compute capability unknown; bf16 only where it is known to be 8.0 or above"},
  };
  for (const Row& row : rows) {
    const PrecisionChoice choice = choose_precision(row.inputs);
    EXPECT_EQ(choice.precision, row.expected) << row.machine;
    EXPECT_EQ(choice.why, row.why) << row.machine;
    EXPECT_TRUE(choice.automatic) << row.machine;
    EXPECT_EQ(choice.text(), std::string("auto chose ") + row.why) << row.machine;
  }
}

// A GPU's choice does not look at the host's CPU.
TEST(PrecisionChoice, GpuIgnoresTheHostCpu) {
  PrecisionInputs in = gpu(70);
  in.amx_bf16 = in.amx_tile = true;
  EXPECT_EQ(choose_precision(in).precision, Precision::Fp32);
}

// amx_bf16 without the tile registers' amx_tile is not a usable unit.
TEST(PrecisionChoice, AmxBf16WithoutTilesIsFp32) {
  PrecisionInputs in = cpu(true, true, 2, 11);
  in.amx_tile = false;
  EXPECT_EQ(choose_precision(in).precision, Precision::Fp32);
}

TEST(PrecisionChoice, GivenPrecisionIsKeptAsGiven) {
  for (const Precision p : {Precision::Fp32, Precision::Bf16, Precision::Fp16}) {
    const PrecisionChoice choice = resolve_precision(p, torch::kCPU);
    EXPECT_EQ(choice.precision, p);
    EXPECT_FALSE(choice.automatic);
    EXPECT_EQ(choice.text(), std::string(to_string(p)) + " (as given)");
  }
}

// On this machine, whatever it is: auto resolves to fp32 or bf16, never stays auto.
TEST(PrecisionChoice, AutoResolvesOnThisMachine) {
  const PrecisionChoice choice = resolve_precision(Precision::Auto, torch::kCPU);
  EXPECT_TRUE(choice.precision == Precision::Fp32 || choice.precision == Precision::Bf16) << choice.why;
  EXPECT_TRUE(choice.automatic);
}

}  // namespace
}  // namespace cifar
