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
int64_t row_grain(int64_t elements_per_row) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_row));
}

// max_pool2d's rule, in its scan order: a later value v replaces the maximum
// when it is larger or NaN. (v != v is isnan, in a form that vectorises.)
inline void take_if_larger(float v, uint8_t k, float& best, uint8_t& at) {
  const bool take = v > best || v != v;
  best = take ? v : best;
  at = take ? k : at;
}

// One window, C channels: a, b (top row), c, d (bottom row) in NHWC. The
// restrict pointers let the compiler vectorise across channels.
void pool_relu_window(const float* __restrict a, const float* __restrict b, const float* __restrict c,
                      const float* __restrict d, int64_t channels, float* __restrict out, uint8_t* __restrict where) {
  for (int64_t ch = 0; ch < channels; ++ch) {
    float best = a[ch];
    uint8_t at = 0;
    take_if_larger(b[ch], 1, best, at);
    take_if_larger(c[ch], 2, best, at);
    take_if_larger(d[ch], 3, best, at);
    out[ch] = (best > 0.0f || best != best) ? best : 0.0f;  // relu keeps NaN
    where[ch] = at;
  }
}

// One output row from its two input rows. Window position 0..3 goes to
// `where` for the backward.
void pool_relu_row(const float* top, const float* bottom, int64_t out_w, int64_t channels, float* out, uint8_t* where) {
  for (int64_t ox = 0; ox < out_w; ++ox) {
    const int64_t left = 2 * ox * channels, right = left + channels;
    pool_relu_window(top + left, top + right, bottom + left, bottom + right, channels, out + ox * channels,
                     where + ox * channels);
  }
}

// One output row's gradient, spread over the two input rows it came from.
// relu's backward passes the gradient where the output is > 0 (or NaN);
// max_pool's sends it to the window's maximum. Every input element is written.
void pool_relu_backward_window(const float* __restrict grad_out, const float* __restrict out,
                               const uint8_t* __restrict where, int64_t channels, float* __restrict a,
                               float* __restrict b, float* __restrict c, float* __restrict d) {
  for (int64_t ch = 0; ch < channels; ++ch) {
    // Written so that GCC vectorises it (checked with -fopt-info-vec): both
    // loads unconditional, `out <= 0 ? 0 : g` spelled as its complement, and
    // the position compared as a float, so every select has one width.
    const float g = grad_out[ch];
    const float passed = (out[ch] > 0.0f || out[ch] != out[ch]) ? g : 0.0f;
    const float at = where[ch];
    a[ch] = at == 0.0f ? passed : 0.0f;
    b[ch] = at == 1.0f ? passed : 0.0f;
    c[ch] = at == 2.0f ? passed : 0.0f;
    d[ch] = at == 3.0f ? passed : 0.0f;
  }
}

void pool_relu_backward_row(const float* grad_out, const float* out, const uint8_t* where, int64_t out_w, int64_t in_w,
                            int64_t channels, float* top, float* bottom) {
  for (int64_t ox = 0; ox < out_w; ++ox) {
    const int64_t left = 2 * ox * channels, right = left + channels, at = ox * channels;
    pool_relu_backward_window(grad_out + at, out + at, where + at, channels, top + left, top + right, bottom + left,
                              bottom + right);
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
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat && x.dim() == 4 && x.size(2) >= 2 && x.size(3) >= 2 &&
         x.size(1) > 0 && x.is_contiguous(torch::MemoryFormat::ChannelsLast);
}

torch::Tensor max_pool2x2_relu(const torch::Tensor& x) {
  if (!fused_pool_relu_applies(x)) return torch::relu(torch::max_pool2d(x, 2));
  return PoolRelu::apply(x);
}

}  // namespace cifar
