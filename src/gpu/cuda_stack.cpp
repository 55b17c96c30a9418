// The CUDA stack's verdict (see cuda_stack.hpp).
#include "gpu/cuda_stack.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <boost/algorithm/string/join.hpp>

#include "gpu/cuda_runtime.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar::gpu {
namespace {

int major_of(int version) { return version / 1000; }

// 12 for "cuda12"; 0 for a flavour without CUDA.
int flavour_major(const std::string& flavour) {
  if (flavour.compare(0, 4, "cuda") != 0 || flavour.size() == 4) return 0;
  return std::atoi(flavour.c_str() + 4);
}

// The oldest driver branch each flavour runs on, for the fix.
const char* oldest_driver(const std::string& flavour) { return flavour == "cuda12" ? "R525" : "R580"; }

// Where each flavour's build comes from: the CMake preset and image named
// after it (cuda13's are the plain "cuda").
const char* preset_of(const std::string& flavour) { return flavour == "cuda12" ? "cuda12" : "cuda"; }

// " (FILE)"; "" for no file.
std::string in_parens(const std::string& file) { return file.empty() ? "" : " (" + file + ")"; }

// "CUDA runtime 12.1 (FILE), older than the 12.8 it was built for (FILE)" when
// the loaded version is known and older than the build's; "" otherwise.
std::string older_than_built(const char* what, int loaded, int built, std::string (*text)(int),
                             const std::vector<std::string>& loaded_files, const std::string& built_file) {
  if (loaded <= 0 || built <= 0 || loaded >= built) return "";
  return strprintf("%s %s%s, older than the %s it was built for%s", what, text(loaded).c_str(),
                   in_parens(loaded_files.empty() ? "" : loaded_files.front()).c_str(), text(built).c_str(),
                   in_parens(built_file).c_str());
}

// What a refusal of the loaded libraries says to do.
constexpr const char* kLoadOne =
    "; load only the build's own (unset LD_LIBRARY_PATH or LD_PRELOAD entries that name another CUDA toolkit's or "
    "NCCL's folder)";

}  // namespace

std::string cuda_version_text(int version) {
  return version <= 0 ? "none" : strprintf("%d.%d", version / 1000, (version % 1000) / 10);
}

std::string nccl_version_text(int version) {
  if (version <= 0) return "none";
  // From NCCL 2.9 the code is major * 10000 + minor * 100 + patch; before, major * 1000 + minor * 100 + patch.
  const int major_unit = version >= 10000 ? 10000 : 1000;
  return strprintf("%d.%d.%d", version / major_unit, (version % major_unit) / 100, version % 100);
}

std::string flavour_for_driver(int driver) {
  if (major_of(driver) < 12) return "";
  return major_of(driver) == 12 ? "cuda12" : "cuda13";
}

std::vector<std::string> library_files(const std::vector<std::string>& mapped, const std::string& soname_stem) {
  std::vector<std::string> files;
  for (const auto& path : mapped) {
    const std::string name = paths::file_name(path);
    // The stem alone or followed by a version: "libnccl.so", "libnccl.so.2.21.5".
    const bool is_library = name.compare(0, soname_stem.size(), soname_stem) == 0 &&
                            (name.size() == soname_stem.size() || name[soname_stem.size()] == '.');
    if (is_library && std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
  }
  return files;
}

StackVerdict check_cuda_stack(const CudaStack& stack, bool uses_gpu) {
  const int built = flavour_major(stack.flavour);
  if (built == 0 || !uses_gpu || stack.driver <= 0) return {};
  for (const auto& [stem, what] : {std::pair<const char*, const char*>{"libcudart.so", "CUDA runtimes"},
                                   std::pair<const char*, const char*>{"libnccl.so", "NCCL libraries"}}) {
    const std::vector<std::string> files = library_files(stack.mapped_files, stem);
    if (files.size() > 1)
      return {false, strprintf("the process loaded %zu %s (%s)%s", files.size(), what,
                               boost::algorithm::join(files, ", ").c_str(), kLoadOne)};
  }
  const std::vector<std::string> runtimes = library_files(stack.mapped_files, "libcudart.so");
  const std::string runtime_file = in_parens(runtimes.empty() ? "" : runtimes.front());
  const char* build = stack.flavour.c_str();
  if (stack.runtime > 0 && major_of(stack.runtime) != built) {
    return {false, strprintf("this %s build loaded a CUDA %s runtime%s instead of its own CUDA %d.x%s", build,
                             cuda_version_text(stack.runtime).c_str(), runtime_file.c_str(), built, kLoadOne)};
  }
  // The same major but older: found first on LD_LIBRARY_PATH or named by
  // LD_PRELOAD (a site's CUDA or NCCL module), or the build's own folder
  // downgraded since. Both in one message: a module often brings both.
  const std::string older_runtime = older_than_built("CUDA runtime", stack.runtime, stack.built_runtime,
                                                     cuda_version_text, runtimes, stack.built_runtime_file);
  const std::string older_nccl =
      older_than_built("NCCL", stack.nccl, stack.built_nccl, nccl_version_text,
                       library_files(stack.mapped_files, "libnccl.so"), stack.built_nccl_file);
  if (!older_runtime.empty() || !older_nccl.empty()) {
    const bool both = !older_runtime.empty() && !older_nccl.empty();
    return {false, strprintf("this %s build loaded %s%s%s: the build calls functions that only the newer one has (the "
                             "loader's 'symbol lookup error' at the first such call); remove the older library's "
                             "folder from LD_LIBRARY_PATH and LD_PRELOAD (e.g. `module unload %s`), or rebuild "
                             "against the older one (with a LibTorch built for it)",
                             build, older_runtime.c_str(), both ? " and " : "", older_nccl.c_str(),
                             both                    ? "cuda nccl"
                             : older_runtime.empty() ? "nccl"
                                                     : "cuda")};
  }
  if (major_of(stack.driver) >= built) return {};
  const std::string use = flavour_for_driver(stack.driver);
  const std::string fix =
      use.empty() ? std::string(
                        "update the NVIDIA driver: R525 or newer runs the cuda12 flavour, R580 or newer "
                        "the cuda13 flavour")
                  : strprintf(
                        "use the %s flavour on this node (drivers %s or newer: the %s preset and image), or update "
                        "the driver to %s or newer for the %s flavour",
                        use.c_str(), oldest_driver(use), preset_of(use), oldest_driver(stack.flavour), build);
  return {false,
          strprintf("the NVIDIA driver supports CUDA up to %s, but this %s build runs CUDA %s%s, which needs a driver "
                    "for CUDA %d.0 or newer (CUDA would see no GPU: cudaErrorInsufficientDriver); %s",
                    cuda_version_text(stack.driver).c_str(), build,
                    stack.runtime > 0 ? cuda_version_text(stack.runtime).c_str() : strprintf("%d.x", built).c_str(),
                    runtime_file.c_str(), built, fix.c_str())};
}

void require_usable_cuda_stack(bool uses_gpu) {
  const StackVerdict verdict = check_cuda_stack(cuda_stack(), uses_gpu);
  if (!verdict.ok) throw ConfigError(verdict.message);
}

}  // namespace cifar::gpu
