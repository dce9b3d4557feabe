// The transformer language model; see model.hpp. Initialisation follows
// GPT-2: weights N(0, 0.02), residual output projections scaled down by
// sqrt(2 n_layers), biases zero.
#include "model.hpp"

#include <cmath>
#include <limits>

namespace gpusweep::transformer {
namespace {

constexpr double kInitStd = 0.02;

void init_linear(torch::nn::Linear& layer, double std) {
  torch::NoGradGuard no_grad;
  layer->weight.normal_(/*mean=*/0.0, std);
  if (layer->bias.defined()) layer->bias.zero_();
}

}  // namespace

BlockImpl::BlockImpl(const ModelShape& shape, double residual_init_std)
    : heads_(shape.n_heads),
      fused_attention_(shape.fused_attention),
      ln1_(register_module("ln1",
                           torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.d_model})))),
      qkv_(register_module("qkv", torch::nn::Linear(shape.d_model, 3 * shape.d_model))),
      proj_(register_module("proj", torch::nn::Linear(shape.d_model, shape.d_model))),
      ln2_(register_module("ln2",
                           torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.d_model})))),
      fc_(register_module("fc", torch::nn::Linear(shape.d_model, shape.ffn_mult * shape.d_model))),
      out_(register_module("out",
                           torch::nn::Linear(shape.ffn_mult * shape.d_model, shape.d_model))) {
  init_linear(qkv_, kInitStd);
  init_linear(fc_, kInitStd);
  init_linear(proj_, residual_init_std);
  init_linear(out_, residual_init_std);
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t b = x.size(0);
  const int64_t t = x.size(1);
  const int64_t d = x.size(2);
  const int64_t head_dim = d / heads_;
  // [B, T, 3, H, Dh] -> three [B, H, T, Dh] views.
  const auto qkv =
      qkv_(ln1_(x)).view({b, t, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4}).unbind(0);
  torch::Tensor attended;
  if (fused_attention_) {
    // softmax(q k^T / sqrt(Dh) + causal mask) v in one kernel.
    attended = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], /*attn_mask=*/{},
                                                /*dropout_p=*/0.0, /*is_causal=*/true);
  } else {
    // Scaling q (T x Dh) is cheaper than scaling the scores (T x T).
    const torch::Tensor q = qkv[0] * (1.0 / std::sqrt(static_cast<double>(head_dim)));
    const torch::Tensor scores = torch::matmul(q, qkv[1].transpose(-2, -1)) + mask;
    attended = torch::matmul(torch::softmax(scores, /*dim=*/-1), qkv[2]);
  }
  torch::Tensor h = x + proj_(attended.transpose(1, 2).reshape({b, t, d}));
  return h + out_(torch::gelu(fc_(ln2_(h))));
}

LanguageModelImpl::LanguageModelImpl(const ModelShape& shape)
    : shape_(shape),
      tokens_(register_module("tokens", torch::nn::Embedding(shape.vocab, shape.d_model))),
      positions_(register_module("positions", torch::nn::Embedding(shape.seq_len, shape.d_model))),
      blocks_(register_module("blocks", torch::nn::ModuleList())),
      ln_f_(register_module("ln_f",
                            torch::nn::LayerNorm(torch::nn::LayerNormOptions({shape.d_model})))),
      head_(register_module(
          "head",
          torch::nn::Linear(torch::nn::LinearOptions(shape.d_model, shape.vocab).bias(false)))) {
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(shape.n_layers));
  for (int64_t i = 0; i < shape.n_layers; ++i) {
    block_list_.emplace_back(shape, residual_std);
    blocks_->push_back(block_list_.back());
  }
  {
    torch::NoGradGuard no_grad;
    tokens_->weight.normal_(/*mean=*/0.0, kInitStd);
    positions_->weight.normal_(/*mean=*/0.0, kInitStd);
  }
  init_linear(head_, kInitStd);
  mask_ = register_buffer(
      "mask", torch::full({shape.seq_len, shape.seq_len}, -std::numeric_limits<float>::infinity())
                  .triu(/*diagonal=*/1));
  position_ids_ = register_buffer("position_ids", torch::arange(shape.seq_len, torch::kLong));
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& tokens) {
  const int64_t t = tokens.size(1);
  torch::Tensor x = tokens_(tokens) + positions_(position_ids_.narrow(0, 0, t));
  const torch::Tensor mask = mask_.narrow(0, 0, t).narrow(1, 0, t);
  for (auto& block : block_list_) x = block->forward(x, mask);
  return head_(ln_f_(x));
}

}  // namespace gpusweep::transformer
