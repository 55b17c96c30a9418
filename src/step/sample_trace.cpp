// Test-only sample trace (see sample_trace.hpp).
#include "step/sample_trace.hpp"

#include <cstdlib>
#include <string>

#include "util/error.hpp"

namespace cifar {

SampleTrace::SampleTrace(int rank) : rank_(rank) {
  const char* prefix = std::getenv("CIFAR_MPI_TEST_SAMPLE_TRACE");
  if (prefix == nullptr || *prefix == '\0') return;
  const std::string path = std::string(prefix) + ".rank" + std::to_string(rank);
  out_ = std::make_unique<std::ofstream>(path, std::ios::app);  // a resumed run appends
  CIFAR_CHECK(static_cast<bool>(*out_), ConfigError, "CIFAR_MPI_TEST_SAMPLE_TRACE: cannot open " + path);
}

void SampleTrace::record(int epoch, long step, long batch, const torch::Tensor& indices) {
  if (!out_) return;
  *out_ << "epoch " << epoch << " step " << step << " batch " << batch << " rank " << rank_ << ":";
  const torch::Tensor cpu = indices.to(torch::kCPU).contiguous();
  const int64_t* p = cpu.data_ptr<int64_t>();
  for (int64_t i = 0; i < cpu.numel(); ++i) *out_ << ' ' << p[i];
  *out_ << '\n';
  out_->flush();  // a preempted or killed rank leaves complete lines
}

}  // namespace cifar
