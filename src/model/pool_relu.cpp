// Fused relu(max_pool2d(x, 2)) for channels_last CPU tensors; see pool_relu.hpp.
#include "model/pool_relu.hpp"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>

namespace cifar {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows of the output handed to one thread at a time: enough elements that the
// scheduling cost is noise (ATen's own grain is 32768 elements).
int64_t row_grain(int64_t elements_per_row) { return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_row)); }

// One output row: each window a, b (top row) c, d (bottom row), C channels
// apart in NHWC. Window position 0..3 goes to `where` for the backward.
void pool_relu_row(const float* top, const float* bottom, int64_t out_w, int64_t channels, float* out, uint8_t* where) {
  for (int64_t ox = 0; ox < out_w; ++ox) {
    const float* cell[4] = {top + 2 * ox * channels, top + (2 * ox + 1) * channels, bottom + 2 * ox * channels,
                            bottom + (2 * ox + 1) * channels};
    float* o = out + ox * channels;
    uint8_t* w = where + ox * channels;
    for (int64_t c = 0; c < channels; ++c) {
      // max_pool2d's rule, in its scan order: a later value replaces the
      // maximum when it is larger or NaN.
      float best = cell[0][c];
      uint8_t at = 0;
      for (uint8_t k = 1; k < 4; ++k) {
        const float v = cell[k][c];
        const bool take = v > best || std::isnan(v);
        best = take ? v : best;
        at = take ? k : at;
      }
      o[c] = (best > 0.0f || std::isnan(best)) ? best : 0.0f;  // relu keeps NaN
      w[c] = at;
    }
  }
}

// One output row's gradient, spread over the two input rows it came from.
// relu's backward passes the gradient where the output is > 0 (or NaN);
// max_pool's sends it to the window's maximum. Every input element is written.
void pool_relu_backward_row(const float* grad_out, const float* out, const uint8_t* where, int64_t out_w,
                            int64_t in_w, int64_t channels, float* top, float* bottom) {
  for (int64_t ox = 0; ox < out_w; ++ox) {
    float* cell[4] = {top + 2 * ox * channels, top + (2 * ox + 1) * channels, bottom + 2 * ox * channels,
                      bottom + (2 * ox + 1) * channels};
    const float* g = grad_out + ox * channels;
    const float* o = out + ox * channels;
    const uint8_t* w = where + ox * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const float passed = o[c] <= 0.0f ? 0.0f : g[c];
      for (uint8_t k = 0; k < 4; ++k) cell[k][c] = w[c] == k ? passed : 0.0f;
    }
  }
  // An odd width's last column is outside every window.
  for (int64_t x = 2 * out_w; x < in_w; ++x) {
    std::fill_n(top + x * channels, channels, 0.0f);
    std::fill_n(bottom + x * channels, channels, 0.0f);
  }
}

struct PoolRelu : torch::autograd::Function<PoolRelu> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x) {
    const int64_t n = x.size(0), channels = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t oh = h / 2, ow = w / 2;
    auto out = torch::empty({n, channels, oh, ow}, x.options().memory_format(torch::MemoryFormat::ChannelsLast));
    auto where = torch::empty({n, oh, ow, channels}, x.options().dtype(torch::kUInt8));
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    uint8_t* at = where.data_ptr<uint8_t>();
    const int64_t row = ow * channels;
    at::parallel_for(0, n * oh, row_grain(row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* top = in + ((r / oh) * h + 2 * (r % oh)) * w * channels;
        pool_relu_row(top, top + w * channels, ow, channels, o + r * row, at + r * row);
      }
    });
    ctx->save_for_backward({out, where});
    ctx->saved_data["height"] = h;
    ctx->saved_data["width"] = w;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& out = saved[0];
    const auto& where = saved[1];
    const int64_t h = ctx->saved_data["height"].toInt(), w = ctx->saved_data["width"].toInt();
    const int64_t n = out.size(0), channels = out.size(1), oh = out.size(2), ow = out.size(3);
    const auto grad = grads[0].contiguous(torch::MemoryFormat::ChannelsLast);
    auto grad_in = torch::empty({n, channels, h, w}, grad.options().memory_format(torch::MemoryFormat::ChannelsLast));
    const float* g = grad.data_ptr<float>();
    const float* o = out.data_ptr<float>();
    const uint8_t* at = where.data_ptr<uint8_t>();
    float* gi = grad_in.data_ptr<float>();
    const int64_t row = ow * channels, in_row = w * channels;
    at::parallel_for(0, n * oh, row_grain(2 * in_row), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t image = r / oh, oy = r % oh;
        float* top = gi + (image * h + 2 * oy) * in_row;
        pool_relu_backward_row(g + r * row, o + r * row, at + r * row, ow, w, channels, top, top + in_row);
        // An odd height's last row is outside every window.
        if (oy == oh - 1) std::fill(top + 2 * in_row, gi + (image + 1) * h * in_row, 0.0f);
      }
    });
    return {grad_in};
  }
};

}  // namespace

bool fused_pool_relu_applies(const torch::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat && x.dim() == 4 && x.size(2) >= 2 &&
         x.size(3) >= 2 && x.size(1) > 0 && x.is_contiguous(torch::MemoryFormat::ChannelsLast);
}

torch::Tensor max_pool2x2_relu(const torch::Tensor& x) {
  if (!fused_pool_relu_applies(x)) return torch::relu(torch::max_pool2d(x, 2));
  return PoolRelu::apply(x);
}

}  // namespace cifar
