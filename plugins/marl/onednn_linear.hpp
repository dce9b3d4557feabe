// fp32 Linear layers whose GEMMs (forward and backward) run on oneDNN's
// sgemm instead of ATen's BLAS (OpenBLAS in Debian's LibTorch 1.13).
//
// Why: LibTorch 1.13 sends every fp32 CPU matmul to BLAS; oneDNN's matmul
// path is only used for bf16. On this project's machines oneDNN's AVX-512
// sgemm runs the critic's [1436,256]x[256,256] GEMMs about 2x faster than
// OpenBLAS (see bench/eager/README.md), and those GEMMs are most of a marl
// step. LibTorch already links oneDNN (libdnnl.so.2 on Debian), so no new
// dependency: dnnl_sgemm is looked up at run time, and when it is missing
// (a LibTorch with oneDNN linked statically and hidden) everything falls
// back to ATen.
//
// The maths is exactly torch::nn::Linear's (+ ReLU where asked): the same
// products and sums in fp32, with the derivatives autograd would compute
// (input, weight and bias grads; ReLU's mask from its output). Only the
// GEMM kernel, hence the order of the fp32 additions inside a dot product,
// differs: results agree with ATen's to fp32 rounding (relative ~1e-6), and
// are deterministic.
#pragma once

#include <torch/torch.h>

namespace gpusweep::marl::onednn {

// Whether oneDNN's sgemm was found in this process.
bool available();

// Whether `t` can take the oneDNN path: a CPU float32 tensor.
bool usable(const torch::Tensor& t);

// relu(x W^T + b) (relu optional) for x [..., in], weight [out, in], bias
// [out]; autograd-aware (a custom Function whose backward also runs on
// oneDNN). x, weight and bias must be usable().
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                     bool relu);

// COMA critic's first layer on its split input: with W = [W_s | W_a] split
// after state_dim columns,
//   relu(state W_s^T + b (broadcast over agents) + agent_part W_a^T)
// for state [N, state_dim] and agent_part [N, A, in - state_dim] ->
// [N, A, out]. The same function as one Linear over the per-agent
// concatenation [state, agent_part], at a fraction of the cost (the state
// part once per transition, not once per agent).
torch::Tensor split_input_linear_relu(const torch::Tensor& state, const torch::Tensor& agent_part,
                                      const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace gpusweep::marl::onednn
