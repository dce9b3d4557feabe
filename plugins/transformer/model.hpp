// A small decoder-only transformer language model (GPT-style, pre-LayerNorm,
// learned positions), written out with plain LibTorch modules.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace gpusweep::transformer {

struct ModelShape {
  int64_t vocab = 64;
  int64_t d_model = 128;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t seq_len = 128;  // longest context (the learned position table's size)
  int64_t ffn_mult = 4;
  // Attention as one fused kernel (scaled_dot_product_attention, causal: on
  // the CPU a flash-attention kernel, forward and backward, that never
  // materialises the T x T scores) or written out (q k^T + mask, softmax,
  // times v: the reference the fused one must match). The same function.
  bool fused_attention = true;
};

// x + attention(LN(x)), then x + MLP(LN(x)); causal multi-head self-attention
// and a GELU feed-forward of width ffn_mult x d_model.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelShape& shape, double residual_init_std);
  // x [B, T, d_model]; mask [T, T] additive (0 or -inf above the diagonal),
  // used only by the written-out attention (the fused one is causal itself).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

 private:
  int64_t heads_;
  bool fused_attention_;
  torch::nn::LayerNorm ln1_{nullptr};
  torch::nn::Linear qkv_{nullptr};
  torch::nn::Linear proj_{nullptr};
  torch::nn::LayerNorm ln2_{nullptr};
  torch::nn::Linear fc_{nullptr};
  torch::nn::Linear out_{nullptr};
};
TORCH_MODULE(Block);

class LanguageModelImpl : public torch::nn::Module {
 public:
  explicit LanguageModelImpl(const ModelShape& shape);
  // tokens [B, T] int64 (T <= seq_len) -> logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& tokens);

 private:
  ModelShape shape_;
  torch::nn::Embedding tokens_{nullptr};
  torch::nn::Embedding positions_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};  // registers the blocks' parameters
  std::vector<Block> block_list_;          // the same blocks, called without a cast
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear head_{nullptr};
  torch::Tensor mask_;          // buffer [seq_len, seq_len]
  torch::Tensor position_ids_;  // buffer [seq_len] 0..seq_len-1
};
TORCH_MODULE(LanguageModel);

}  // namespace gpusweep::transformer
