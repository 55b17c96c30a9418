// The CUDA stack's verdict with known answers (gpu/cuda_stack.hpp): drivers
// and runtimes we do not have, processes that loaded two runtimes or two
// NCCLs, or a runtime or NCCL older than the build's. Also the per-task GPU binding's rule (gpu/gpu_binding.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/cuda_stack.hpp"
#include "gpu/gpu_binding.hpp"

namespace cifar::gpu {
namespace {

// A pip torch's libraries, as /proc/self/maps lists them.
const std::string kWheel12 = "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12";
const std::string kWheel13 = "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcudart.so.13";
const std::string kSystem13 = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.48";
const std::string kNcclWheel = "/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
const std::string kNcclSystem = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5";
const std::string kNcclPlugin = "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so";
const std::string kCudnnGraph = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9";
// A site's modules (`module load cuda/12.1 nccl/2.18.1`), found first on LD_LIBRARY_PATH.
const std::string kModule12 = "/apps/cuda/12.1/lib64/libcudart.so.12";
const std::string kNcclModule = "/apps/nccl/2.18.1/lib/libnccl.so.2";

// The cuda12 flavour's build (the torch wheels: CUDA 12.8, NCCL 2.27.3) on the
// 535 driver, having loaded runtime `runtime` from `cudart` and NCCL `nccl`
// from `libnccl`.
CudaStack cuda12_loaded(int runtime, const std::string& cudart, int nccl, const std::string& libnccl) {
  return {.flavour = "cuda12",
          .driver = 12020,
          .runtime = runtime,
          .mapped_files = {cudart, libnccl},
          .built_runtime = 12080,
          .built_runtime_file = kWheel12,
          .nccl = nccl,
          .built_nccl = 22703,
          .built_nccl_file = kNcclWheel};
}

struct Row {
  const char* name;
  CudaStack stack;
  bool uses_gpu;
  bool ok;
  std::vector<std::string> says;  // in the message, when refused
};

TEST(CudaStack, KnownAnswers) {
  const std::vector<Row> rows = {
      {"cpu build: nothing to check", {"cpu", 12020, 0, {kWheel12, kSystem13}}, true, true, {}},
      {"cuda13 on an R580 driver", {"cuda13", 13000, 13000, {kWheel13, kNcclWheel}}, true, true, {}},
      {"cuda13 on a newer driver", {"cuda13", 13020, 13000, {kWheel13}}, true, true, {}},
      {"cuda12 on the 535 driver (CUDA 12.2)", {"cuda12", 12020, 12080, {kWheel12, kNcclWheel}}, true, true, {}},
      {"cuda12 on an R525 driver (CUDA 12.0)", {"cuda12", 12000, 12010, {kWheel12}}, true, true, {}},
      {"cuda12 on an R580 driver", {"cuda12", 13000, 12080, {kWheel12}}, true, true, {}},
      {"no driver: the run is on CPUs", {"cuda13", 0, 13000, {kWheel13}}, true, true, {}},
      {"--device cpu", {"cuda13", 12020, 13000, {kWheel13}}, false, true, {}},
      {"an NCCL net plugin and cuDNN's sub-libraries are not NCCL or cuDNN",
       {"cuda13", 13000, 13000, {kWheel13, kNcclWheel, kNcclPlugin, kCudnnGraph}},
       true,
       true,
       {}},
      {"cuda13 on the 535 driver",
       {"cuda13", 12020, 13000, {kWheel13}},
       true,
       false,
       {"supports CUDA up to 12.2", "runs CUDA 13.0 (" + kWheel13 + ")", "use the cuda12 flavour",
        "drivers R525 or newer: the cuda12 preset and image",
        "update the driver to R580 or newer for the cuda13 flavour"}},
      {"cuda13 on an R570 driver (CUDA 12.8)",
       {"cuda13", 12080, 13000, {kWheel13}},
       true,
       false,
       {"supports CUDA up to 12.8", "use the cuda12 flavour"}},
      {"cuda12 on an R470 driver (CUDA 11.4): no flavour runs",
       {"cuda12", 11040, 12080, {kWheel12}},
       true,
       false,
       {"supports CUDA up to 11.4", "runs CUDA 12.8", "update the NVIDIA driver", "R525 or newer"}},
      {"cuda13 whose runtime is unknown, on the 535 driver",
       {"cuda13", 12020, 0, {}},
       true,
       false,
       {"runs CUDA 13.x", "use the cuda12 flavour"}},
      {"two CUDA runtimes: the system's beside the wheel's",
       {"cuda12", 13000, 12080, {kWheel12, kSystem13}},
       true,
       false,
       {"loaded 2 CUDA runtimes", kWheel12, kSystem13, "LD_LIBRARY_PATH"}},
      {"two NCCLs",
       {"cuda13", 13000, 13000, {kWheel13, kNcclSystem, kNcclWheel}},
       true,
       false,
       {"loaded 2 NCCL libraries", kNcclSystem, kNcclWheel}},
      {"a cuda12 build that loaded CUDA 13's runtime",
       {"cuda12", 13000, 13000, {kSystem13}},
       true,
       false,
       {"this cuda12 build loaded a CUDA 13.0 runtime", kSystem13, "its own CUDA 12.x"}},
      // Older than the build's, same major: LibTorch would die on a missing symbol.
      {"the build's own runtime and NCCL", cuda12_loaded(12080, kWheel12, 22703, kNcclWheel), true, true, {}},
      {"a newer runtime and NCCL than the build's",
       cuda12_loaded(12090, kModule12, 22809, kNcclModule),
       true,
       true,
       {}},
      {"a module's CUDA 12.1 runtime for a build made for 12.8",
       cuda12_loaded(12010, kModule12, 22703, kNcclWheel),
       true,
       false,
       {"this cuda12 build loaded CUDA runtime 12.1 (" + kModule12 + ")",
        "older than the 12.8 it was built for (" + kWheel12 + ")", "symbol lookup error",
        "remove the older library's folder from LD_LIBRARY_PATH", "module unload cuda`", "rebuild against"}},
      {"a module's NCCL 2.18.1 for a build made for 2.27.3",
       cuda12_loaded(12080, kWheel12, 21801, kNcclModule),
       true,
       false,
       {"loaded NCCL 2.18.1 (" + kNcclModule + ")", "older than the 2.27.3 it was built for (" + kNcclWheel + ")",
        "LD_LIBRARY_PATH", "module unload nccl`"}},
      {"both older: one message names both",
       cuda12_loaded(12010, kModule12, 21801, kNcclModule),
       true,
       false,
       {"CUDA runtime 12.1 (" + kModule12 + "), older than the 12.8", " and NCCL 2.18.1 (" + kNcclModule + ")",
        "module unload cuda nccl`"}},
      {"an NCCL before 2.9 (its older version code)",
       cuda12_loaded(12080, kWheel12, 2804, kNcclModule),
       true,
       false,
       {"NCCL 2.8.4", "older than the 2.27.3"}},
      {"the build's file unknown: the version it was built for still named",
       {.flavour = "cuda12", .driver = 12020, .runtime = 12010, .mapped_files = {kModule12}, .built_runtime = 12080},
       true,
       false,
       {"CUDA runtime 12.1 (" + kModule12 + "), older than the 12.8 it was built for:"}},
      {"loaded versions unknown: nothing to judge", cuda12_loaded(0, kModule12, 0, kNcclModule), true, true, {}},
      {"a build that recorded no versions: nothing to judge",
       {.flavour = "cuda12", .driver = 12020, .runtime = 12010, .mapped_files = {kModule12}, .nccl = 21801},
       true,
       true,
       {}},
      {"a CPU build with an old runtime loaded",
       {.flavour = "cpu", .driver = 12020, .runtime = 12010, .mapped_files = {kModule12}, .built_runtime = 12080},
       true,
       true,
       {}},
      {"--device cpu with an old runtime loaded", cuda12_loaded(12010, kModule12, 21801, kNcclModule), false, true, {}},
  };
  for (const Row& row : rows) {
    const StackVerdict verdict = check_cuda_stack(row.stack, row.uses_gpu);
    EXPECT_EQ(verdict.ok, row.ok) << row.name << ": " << verdict.message;
    EXPECT_EQ(verdict.message.empty(), row.ok) << row.name;
    for (const auto& words : row.says)
      EXPECT_NE(verdict.message.find(words), std::string::npos)
          << row.name << ": no '" << words << "' in\n  " << verdict.message;
  }
}

TEST(CudaStack, VersionsAndFlavours) {
  EXPECT_EQ(cuda_version_text(12020), "12.2");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(0), "none");
  EXPECT_EQ(nccl_version_text(22705), "2.27.5");
  EXPECT_EQ(nccl_version_text(21801), "2.18.1");
  EXPECT_EQ(nccl_version_text(2804), "2.8.4");
  EXPECT_EQ(nccl_version_text(0), "none");
  EXPECT_EQ(flavour_for_driver(11080), "");
  EXPECT_EQ(flavour_for_driver(12000), "cuda12");
  EXPECT_EQ(flavour_for_driver(12090), "cuda12");
  EXPECT_EQ(flavour_for_driver(13000), "cuda13");
  EXPECT_EQ(flavour_for_driver(14000), "cuda13");
}

TEST(CudaStack, LibraryFilesAreTheLibraryItselfOnce) {
  const std::vector<std::string> mapped = {kWheel12, "/usr/lib/libcudart_static.a", kNcclPlugin, kNcclWheel,
                                           kWheel12, "/opt/x/libcudart.so"};
  EXPECT_EQ(library_files(mapped, "libcudart.so"), (std::vector<std::string>{kWheel12, "/opt/x/libcudart.so"}));
  EXPECT_EQ(library_files(mapped, "libnccl.so"), std::vector<std::string>{kNcclWheel});
  EXPECT_TRUE(library_files(mapped, "libcudnn.so").empty());
}

TEST(GpuBinding, OneGpuPerRankKnownAnswers) {
  struct Case {
    const char* name;
    std::vector<std::string> ids;
    bool bound;
  };
  const std::vector<Case> cases = {
      {"4 ranks, 4 GPUs of their own",
       {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"},
       true},
      {"one rank, one GPU", {"0000:3b:00.0"}, true},
      {"two ranks see the same GPU", {"00000000:18:00.0", "00000000:18:00.0"}, false},
      {"the same GPU spelled by CUDA and by sysfs", {"00000000:3B:00.0", "0000:3b:00.0"}, false},
      {"another domain is another GPU", {"00000000:3B:00.0", "00000001:3B:00.0"}, true},
      {"a rank sees none or several", {"00000000:18:00.0", ""}, false},
      {"no rank", {}, false},
  };
  for (const Case& c : cases) EXPECT_EQ(one_gpu_per_rank(c.ids), c.bound) << c.name;
}

}  // namespace
}  // namespace cifar::gpu
