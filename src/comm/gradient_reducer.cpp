// Bucketed, overlapped gradient averaging (see gradient_reducer.hpp).
#include "comm/gradient_reducer.hpp"

#include <algorithm>
#include <map>

#include "util/error.hpp"
#include "util/log.hpp"

namespace cifar {

std::vector<std::vector<size_t>> plan_buckets(const std::vector<size_t>& param_bytes,
                                              const std::vector<torch::ScalarType>& param_dtypes,
                                              const BucketOptions& options) {
  CIFAR_CHECK(param_dtypes.size() == param_bytes.size(), Error,
              strprintf("plan_buckets: %zu dtypes for %zu parameters", param_dtypes.size(), param_bytes.size()));
  struct Open {
    std::vector<size_t> members;
    size_t bytes = 0;
    bool first = true;  // this dtype's first bucket: the small one
  };
  std::map<torch::ScalarType, Open> open;  // one filling bucket per dtype
  std::vector<std::vector<size_t>> plan;
  for (size_t k = param_bytes.size(); k-- > 0;) {
    Open& bucket = open[param_dtypes[k]];
    bucket.members.push_back(k);
    bucket.bytes += param_bytes[k];
    if (bucket.bytes >= (bucket.first ? options.first_bucket_bytes : options.bucket_bytes)) {
      plan.push_back(std::move(bucket.members));
      bucket.members.clear();
      bucket.bytes = 0;
      bucket.first = false;
    }
  }
  for (auto& [dtype, bucket] : open)
    if (!bucket.members.empty()) plan.push_back(std::move(bucket.members));
  // Members run from high to low index, so back() is where backward completes the bucket.
  std::stable_sort(plan.begin(), plan.end(), [](const auto& a, const auto& b) { return a.back() > b.back(); });
  return plan;
}

std::vector<std::vector<size_t>> plan_buckets(const std::vector<size_t>& param_bytes, const BucketOptions& options) {
  return plan_buckets(param_bytes, std::vector<torch::ScalarType>(param_bytes.size(), torch::kFloat32), options);
}

void broadcast_coalesced(Communicator& comm, const std::vector<torch::Tensor>& tensors, int root) {
  std::map<torch::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[t.scalar_type()].push_back(t);
  for (auto& [dtype, group] : by_dtype) {
    std::vector<torch::Tensor> flat;
    for (const auto& t : group) flat.push_back(t.detach().reshape({-1}));
    torch::Tensor packed = torch::cat(flat);
    comm.broadcast(packed, root);
    torch::NoGradGuard no_grad;
    int64_t offset = 0;
    for (auto& t : group) {
      t.copy_(packed.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

namespace {

// Shapes and dtypes of every parameter, hashed; rank 0's is the reference.
void check_same_parameters(Communicator& comm, const std::vector<torch::Tensor>& params) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](int64_t v) {
    for (int b = 0; b < 8; ++b) {
      hash ^= static_cast<uint64_t>((v >> (8 * b)) & 0xff);
      hash *= 1099511628211ull;
    }
  };
  for (const auto& p : params) {
    mix(static_cast<int64_t>(p.scalar_type()));
    mix(p.dim());
    for (int64_t s : p.sizes()) mix(s);
  }
  torch::Tensor mine = torch::tensor({static_cast<int64_t>(params.size()), static_cast<int64_t>(hash)},
                                     torch::TensorOptions().dtype(torch::kInt64).device(params.at(0).device()));
  torch::Tensor all = comm.all_gather(mine).cpu();
  for (int r = 1; r < comm.size(); ++r) {
    if (!torch::equal(all[r], all[0])) {
      throw Error(strprintf(
          "rank %d's model has different parameters (%lld tensors) from rank 0's (%lld tensors) "
          "or different shapes: every rank must build the same model (--model, same build)",
          r, static_cast<long long>(all[r][0].item<int64_t>()), static_cast<long long>(all[0][0].item<int64_t>())));
    }
  }
}

}  // namespace

GradientReducer::GradientReducer(std::vector<torch::Tensor> parameters, std::vector<torch::Tensor> buffers,
                                 Communicator& comm, BucketOptions options)
    : params_(std::move(parameters)), buffers_(std::move(buffers)), comm_(comm) {
  if (params_.empty()) throw Error("GradientReducer: the model has no parameters");
  check_same_parameters(comm_, params_);
  std::vector<torch::Tensor> state = params_;
  state.insert(state.end(), buffers_.begin(), buffers_.end());
  broadcast_coalesced(comm_, state, 0);

  std::vector<size_t> bytes;
  std::vector<torch::ScalarType> dtypes;
  for (const auto& p : params_) {
    bytes.push_back(static_cast<size_t>(p.numel() * p.element_size()));
    dtypes.push_back(p.scalar_type());
  }
  plan_ = plan_buckets(bytes, dtypes, options);

  slots_.resize(params_.size());
  bucket_of_.resize(params_.size());
  for (size_t b = 0; b < plan_.size(); ++b) {
    int64_t numel = 0;
    for (size_t k : plan_[b]) numel += params_[k].numel();
    buckets_.push_back(torch::zeros({numel}, params_[plan_[b].front()].options()));  // the bucket's one dtype
    int64_t offset = 0;
    for (size_t k : plan_[b]) {
      slots_[k] = buckets_[b].narrow(0, offset, params_[k].numel()).view(params_[k].sizes());
      bucket_of_[k] = b;
      offset += params_[k].numel();
    }
  }
  pending_.assign(plan_.size(), 0);
  works_.resize(plan_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    params_[k].register_hook([this, k](torch::Tensor grad) { on_gradient(k, grad); });
  }
}

void GradientReducer::prepare_for_backward(bool synchronize, long step) {
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_ = synchronize;
  step_ = step;
  if (!synchronize) return;
  for (size_t b = 0; b < plan_.size(); ++b) pending_[b] = plan_[b].size();
  next_to_launch_ = 0;
  timing_ = StepTiming{};
  timing_.backward_started = std::chrono::steady_clock::now();
  timing_.bucket_launched.resize(plan_.size());
}

void GradientReducer::on_gradient(size_t k, const torch::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!synchronize_) return;
  torch::NoGradGuard no_grad;
  // The hook runs before autograd adds `grad` into .grad, so earlier
  // micro-batches' sum (gradient accumulation) is still in .grad.
  const torch::Tensor& accumulated = params_[k].grad();
  if (accumulated.defined()) {
    torch::add_out(slots_[k], accumulated, grad);
  } else {
    slots_[k].copy_(grad);
  }
  const size_t b = bucket_of_[k];
  if (pending_[b] == 0) {
    throw Error(strprintf("parameter %zu produced a gradient twice in one backward pass (reused module?)", k));
  }
  if (--pending_[b] == 0) launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  while (next_to_launch_ < plan_.size() && pending_[next_to_launch_] == 0) {
    const size_t b = next_to_launch_++;
    timing_.bucket_launched[b] = std::chrono::steady_clock::now();
    works_[b] = comm_.all_reduce_async(buckets_[b], ReduceOp::Average,
                                       strprintf("step %ld bucket %zu/%zu", step_, b, plan_.size()));
  }
}

void GradientReducer::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!synchronize_) return;
  timing_.finish_called = std::chrono::steady_clock::now();
  if (next_to_launch_ < plan_.size()) {
    std::string missing;
    for (size_t k = 0; k < params_.size(); ++k)
      if (bucket_of_[k] >= next_to_launch_ && pending_[bucket_of_[k]] > 0) missing += " " + std::to_string(k);
    throw Error("gradient reduction: bucket " + std::to_string(next_to_launch_) +
                " never became ready; parameters without a gradient this step (by index):" + missing +
                ". Every parameter must take part in the loss (unused parameters are not supported).");
  }
  for (auto& w : works_) {
    w->wait();
    w.reset();
  }
  timing_.wait_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - timing_.finish_called).count();
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k) params_[k].mutable_grad().copy_(slots_[k]);
  synchronize_ = false;
}

torch::Tensor GradientReducer::gradients_finite() const {
  torch::NoGradGuard no_grad;
  torch::Tensor finite = torch::isfinite(buckets_[0]).all();  // the constructor refuses a model without parameters
  for (size_t b = 1; b < buckets_.size(); ++b) finite = finite.logical_and(torch::isfinite(buckets_[b]).all());
  return finite;
}

void GradientReducer::broadcast_buffers() {
  if (!buffers_.empty() && comm_.size() > 1) broadcast_coalesced(comm_, buffers_, 0);
}

}  // namespace cifar
