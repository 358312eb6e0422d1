// cuDNN's side of the weights and of a batch, as plain values the cuda backend turns into
// descriptors: which configs cuDNN's RNN runs, its weight space (one matrix and one bias per
// pseudo-layer and linear-layer id) and the copies between it and rnnx's flat buffer, and
// the batch cuDNN is given (the sequences of length > 0, sorted, packed). Device-neutral, so
// the CPU tests check all of it against cuDNN's documentation without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "rnnx/config.hpp"
#include "rnnx/weights.hpp"

namespace rnnx::cuda {

// Why cuDNN's RNN cannot run this config, or "" when it can. cuDNN runs PyTorch's cells
// (LSTM with projection and cell clipping, GRU with linear-before-reset, RNN tanh/relu),
// multi-layer, bidirectional; rnnx's own CUDA path (step_backend.hpp) takes the rest (ONNX's
// cell options, the original GRU, projection clipping).
std::string cudnn_refusal(const Config& config);

// Why the loaded cuDNN (cudnnGetVersion(): major * 10000 + minor * 100 + patch) cannot run
// this dtype's RNN, or "": rnnx needs cuDNN 9, and bfloat16 RNNs 9.13 or later.
std::string cudnn_version_refusal(DataType dtype, size_t version);

// cuDNN's math type for a config, by name, as PyTorch's RNN chooses it: float64 "double";
// float16 "tensor-op" (CUDNN_TENSOR_OP_MATH); bfloat16 "default" (CUDNN_DEFAULT_MATH);
// float32 "fma" (strict, CUDNN_FMA_MATH) unless the math mode is allow_conversion: "tf32"
// (CUDNN_DEFAULT_MATH: TF32 tensor cores, float32's range, 10-bit mantissas), or, only with
// fp16_conversion (RNNX_CUDNN_FP16_CONVERSION=1, an explicit opt-in),
// "tensor-op-fp16-conversion" (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: float16 between steps,
// which overflows above 65504).
std::string cudnn_math(const Config& config, MathMode math, bool fp16_conversion);

// cuDNN's linear layers per pseudo-layer (layer * D + direction): RNN 0 = W, 1 = R; LSTM 0-3
// W and 4-7 R in gate order i, f, c, o, then 8 = the projection W_hr (no bias); GRU 0-2 W and
// 3-5 R in gate order r, z, h. The gate orders are PyTorch's, so each cuDNN matrix is one
// row block of PyTorch's weight_ih / weight_hh.
int cudnn_linear_layers(const Config& config);
// Whether linear layer `id` has a bias in cuDNN's weight space (double bias; none without
// bias, and the projection never).
bool cudnn_has_bias(const Config& config, int id);

// One matrix or bias of the weight space: where cuDNN keeps it (element offset from the
// weight space's start, as cudnnGetRNNWeightParams reports it) and its shape.
struct CudnnParam {
  int64_t pseudo_layer = 0;
  int id = 0;  // linear-layer id
  bool bias = false;
  int64_t offset = 0;  // elements
  int64_t rows = 0;
  int64_t cols = 1;
  int64_t numel() const { return rows * cols; }
};

// Every (pseudo-layer, id, matrix/bias) of `config` in pseudo-layer order, each with its
// shape and with offset -1: the cuda backend fills the offsets from cudnnGetRNNWeightParams.
std::vector<CudnnParam> cudnn_params(const Config& config);
// The same with the offsets cuDNN's documentation describes: per pseudo-layer, its matrices
// in id order, then its biases in id order, densely. cuDNN's own answer rules; the cuda
// backend's device checks compare the two.
std::vector<CudnnParam> cudnn_documented_layout(const Config& config);

// One contiguous copy between the flat buffer and the weight space, in elements.
struct WeightSegment {
  int64_t flat = 0;
  int64_t cudnn = 0;
  int64_t count = 0;
};
// The copies that move the flat buffer into the weight space laid out as `params` (offsets
// filled), adjacent ones merged; the same list read the other way moves gradients back.
// Throws Error(internal) when a param's shape is not the one rnnx expects or two params
// overlap.
std::vector<WeightSegment> cudnn_weight_segments(const Config& config, const WeightLayout& layout,
                                                 const std::vector<CudnnParam>& params);

// flat -> weight space, and weight space -> flat (overwriting or adding), on the host: what
// the cuda backend's copy kernel does, for the tests and for hosts of a device backend.
template <typename T>
void apply_segments_to_cudnn(const std::vector<WeightSegment>& segs, const T* flat, T* cudnn);
template <typename T>
void apply_segments_to_flat(const std::vector<WeightSegment>& segs, const T* cudnn, T* flat,
                            bool accumulate);

// The batch cuDNN sees: the sequences of length > 0 (sorted positions 0 .. B'-1 of the
// schedule), in the schedule's order, in cuDNN's packed layout (CUDNN_RNN_DATA_LAYOUT_
// SEQ_MAJOR_PACKED needs non-increasing lengths, which the sort gives). Sequences of length
// 0 stay out of it (cuDNN refuses them) and the backend writes their results itself.
struct CudnnBatch {
  int64_t batch = 0;             // B': sequences of length > 0
  int64_t max_seq_len = 0;       // T_eff
  std::vector<int32_t> lengths;  // [B'] non-increasing, each >= 1
  int64_t tokens = 0;            // rows of the packed x and y
  bool states_in_order = false;  // sorted position i is original index i for i < B'
  bool rows_in_place = false;    // the caller's x/y rows already are the packed rows
};
// Throws Error(unsupported) naming the value when a size exceeds cuDNN's int arguments.
CudnnBatch cudnn_batch(const SequenceShape& shape, const core::Schedule& s, const Config& config);

}  // namespace rnnx::cuda
