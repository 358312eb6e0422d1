// cuDNN descriptors, sizes and weight placement of one plan (cudnn_rnn.hpp).
#include "cuda/cudnn_rnn.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/dropout.hpp"
#include "cuda/rules/cudnn_layout.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cuda {
namespace {

cudnnDataType_t cudnn_type(DataType dtype) {
  switch (dtype) {
    case DataType::f64:
      return CUDNN_DATA_DOUBLE;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::f16:
      return CUDNN_DATA_HALF;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

cudnnRNNMode_t cudnn_cell(CellType cell) {
  switch (cell) {
    case CellType::rnn_tanh:
      return CUDNN_RNN_TANH;
    case CellType::rnn_relu:
      return CUDNN_RNN_RELU;
    case CellType::lstm:
      return CUDNN_LSTM;
    default:
      return CUDNN_GRU;
  }
}

void set_state_descriptor(const TensorDescriptor& d, cudnnDataType_t type, int64_t slabs,
                          int64_t batch, int64_t width) {
  const int dims[3] = {static_cast<int>(slabs), static_cast<int>(batch), static_cast<int>(width)};
  const int strides[3] = {static_cast<int>(batch * width), static_cast<int>(width), 1};
  check(calls().cudnnSetTensorNdDescriptor(d.get(), type, 3, dims, strides),
        "cudnnSetTensorNdDescriptor");
}

// cuDNN's placement of every weight of `g`, read with cudnnGetRNNWeightParams from a weight
// space allocated for the purpose, as element offsets.
std::vector<CudnnParam> query_params(const Config& sub, const CudnnGroup& g, cudnnHandle_t handle,
                                     int64_t elem) {
  core::Buffer space = device_memory().allocate(g.weight_bytes, "plan", "cuDNN weight space");
  const auto base = static_cast<const char*>(space.get());
  TensorDescriptor m = make_tensor_descriptor(), b = make_tensor_descriptor();
  std::vector<CudnnParam> params = cudnn_params(sub);
  for (CudnnParam& p : params) {
    void* m_addr = nullptr;
    void* b_addr = nullptr;
    check(calls().cudnnGetRNNWeightParams(handle, g.rnn.get(), static_cast<int32_t>(p.pseudo_layer),
                                          g.weight_bytes, space.get(), p.id, m.get(), &m_addr,
                                          b.get(), &b_addr),
          "cudnnGetRNNWeightParams");
    void* addr = p.bias ? b_addr : m_addr;
    cudnnDataType_t type;
    int nb = 0, dims[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
    if (addr == nullptr) {
      throw Error(Status::internal, "backend cuda: cuDNN reports no " +
                                        std::string(p.bias ? "bias" : "matrix") +
                                        " for linear layer " + std::to_string(p.id));
    }
    check(calls().cudnnGetTensorNdDescriptor(p.bias ? b.get() : m.get(), 3, &type, &nb, dims,
                                             strides),
          "cudnnGetTensorNdDescriptor");
    int64_t numel = 1;
    for (int k = 0; k < std::min(nb, 3); ++k) numel *= dims[k];
    if (numel != p.numel()) {
      throw Error(Status::internal, "backend cuda: cuDNN's linear layer " + std::to_string(p.id) +
                                        " of pseudo-layer " + std::to_string(p.pseudo_layer) +
                                        " has " + std::to_string(numel) +
                                        " elements, rnnx expects " + std::to_string(p.numel()));
    }
    p.offset = (static_cast<const char*>(addr) - base) / elem;
  }
  return params;
}

cudnnRNNAlgo_t cudnn_algo(CudnnAlgo algo) {
  switch (algo) {
    case CudnnAlgo::persist_static:
      return CUDNN_RNN_ALGO_PERSIST_STATIC;
    case CudnnAlgo::persist_static_small_h:
      return CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
    case CudnnAlgo::standard:
      break;
  }
  return CUDNN_RNN_ALGO_STANDARD;
}

}  // namespace

CudnnRnn::CudnnRnn(const PlanContext& ctx, const CudnnBatch& batch, cudnnHandle_t handle,
                   CudnnAlgo algo)
    : config_(ctx.config) {
  const Config& c = ctx.config;
  const int64_t D = c.num_directions(), P = c.output_size(), H = c.hidden_size;
  const cudnnDataType_t type = cudnn_type(c.dtype);
  const cudnnDataType_t precision = c.dtype == DataType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  // PyTorch's choices (rules/cudnn_layout.hpp): 16-bit data accumulated and kept (cell
  // state) in float32; float32 strict unless conversion is allowed, then TF32, which keeps
  // float32's range. float16 between steps only on the explicit opt-in.
  const char* opt_in = std::getenv("RNNX_CUDNN_FP16_CONVERSION");
  math_name_ = cudnn_math(c, ctx.math, opt_in != nullptr && std::string(opt_in) == "1");
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // "double", "default" (bfloat16), "tf32"
  if (math_name_ == "fma") math = CUDNN_FMA_MATH;
  if (math_name_ == "tensor-op") math = CUDNN_TENSOR_OP_MATH;
  if (math_name_ == "tensor-op-fp16-conversion") math = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  const int64_t elem = dtype_size(c.dtype);

  // cuDNN needs a dropout descriptor; rnnx's own masks go between layers instead.
  no_dropout_ = make_dropout_descriptor();
  check(calls().cudnnSetDropoutDescriptor(no_dropout_.get(), handle, 0.0f, nullptr, 0, 0),
        "cudnnSetDropoutDescriptor");

  const WeightLayout full(c);
  // Dropout between layers is rnnx's own generator: one cuDNN call per layer, then.
  const bool per_layer = core::dropout_between_layers(c);
  const int64_t group_layers = per_layer ? 1 : c.num_layers;
  for (int64_t first = 0; first < c.num_layers; first += group_layers) {
    CudnnGroup g;
    g.first_layer = first;
    g.layers = group_layers;
    g.in_width = first == 0 ? c.input_size : D * P;
    g.out_width = D * P;
    Config sub = c;
    sub.num_layers = group_layers;
    sub.input_size = g.in_width;
    g.flat_base = full.get(first, 0, WeightKind::w_ih)->offset;

    g.rnn = make_rnn_descriptor();
    check(calls().cudnnSetRNNDescriptor_v8(
              g.rnn.get(), cudnn_algo(algo), cudnn_cell(c.cell),
              c.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
              c.bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT,
              type, precision, math, static_cast<int32_t>(g.in_width), static_cast<int32_t>(H),
              static_cast<int32_t>(P), static_cast<int32_t>(group_layers), no_dropout_.get(),
              CUDNN_RNN_PADDED_IO_DISABLED),
          "cudnnSetRNNDescriptor_v8");
    if (c.cell_clip.enabled) {
      // _v8 is the only setter that takes the NaN option (_v9 dropped it): the contract's
      // policies are cuDNN's PROPAGATE_NAN and NOT_PROPAGATE_NAN (NaN becomes a bound).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      check(calls().cudnnRNNSetClip_v8(
                g.rnn.get(), CUDNN_RNN_CLIP_MINMAX,
                c.clip_nan == NanPolicy::propagate ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN,
                c.cell_clip.lo, c.cell_clip.hi),
            "cudnnRNNSetClip_v8");
#pragma GCC diagnostic pop
    }

    check(calls().cudnnGetRNNWeightSpaceSize(handle, g.rnn.get(), &g.weight_bytes),
          "cudnnGetRNNWeightSpaceSize");
    const auto params = query_params(sub, g, handle, elem);
    const auto segments = cudnn_weight_segments(sub, WeightLayout(sub), params);
    const auto documented = cudnn_documented_layout(sub);
    g.documented_layout = true;
    for (size_t k = 0; k < params.size(); ++k)
      g.documented_layout &= params[k].offset == documented[k].offset;
    g.segment_count = static_cast<int64_t>(segments.size());
    for (const auto& s : segments) g.longest_segment = std::max(g.longest_segment, s.count);
    const size_t bytes = sizeof(WeightSegment) * segments.size();
    g.segments = device_memory().allocate(bytes, "plan", "weight copies");
    upload(g.segments.get(), segments.data(), bytes);
    groups_.push_back(std::move(g));
  }
  bind(batch, handle);
}

void CudnnRnn::bind(const CudnnBatch& batch, cudnnHandle_t handle) {
  if (batch.batch == 0) return;  // nothing reaches cuDNN; the descriptors wait for a batch
  const int64_t D = config_.num_directions(), P = config_.output_size(), H = config_.hidden_size;
  const cudnnDataType_t type = cudnn_type(config_.dtype);
  const auto lengths = const_cast<int*>(reinterpret_cast<const int*>(batch.lengths.data()));
  for (CudnnGroup& g : groups_) {
    // Made once, set again for every batch (cuDNN copies the lengths).
    if (!g.x.get()) {
      g.x = make_rnn_data_descriptor();
      g.y = make_rnn_data_descriptor();
      g.h = make_tensor_descriptor();
      g.c = make_tensor_descriptor();
    }
    check(calls().cudnnSetRNNDataDescriptor(g.x.get(), type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                            static_cast<int>(batch.max_seq_len),
                                            static_cast<int>(batch.batch),
                                            static_cast<int>(g.in_width), lengths, nullptr),
          "cudnnSetRNNDataDescriptor (x)");
    check(calls().cudnnSetRNNDataDescriptor(g.y.get(), type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
                                            static_cast<int>(batch.max_seq_len),
                                            static_cast<int>(batch.batch),
                                            static_cast<int>(g.out_width), lengths, nullptr),
          "cudnnSetRNNDataDescriptor (y)");
    set_state_descriptor(g.h, type, g.layers * D, batch.batch, P);
    set_state_descriptor(g.c, type, g.layers * D, batch.batch, H);
    size_t no_reserve = 0;
    check(calls().cudnnGetRNNTempSpaceSizes(handle, g.rnn.get(), CUDNN_FWD_MODE_INFERENCE,
                                            g.x.get(), &g.workspace_inference, &no_reserve),
          "cudnnGetRNNTempSpaceSizes (inference)");
    check(calls().cudnnGetRNNTempSpaceSizes(handle, g.rnn.get(), CUDNN_FWD_MODE_TRAINING, g.x.get(),
                                            &g.workspace_training, &g.reserve_training),
          "cudnnGetRNNTempSpaceSizes (training)");
  }
}

size_t CudnnRnn::max_weight_bytes() const {
  size_t m = 0;
  for (const auto& g : groups_) m = std::max(m, g.weight_bytes);
  return m;
}

size_t CudnnRnn::max_workspace(bool training) const {
  size_t m = 0;
  for (const auto& g : groups_)
    m = std::max(m, training ? g.workspace_training : g.workspace_inference);
  return m;
}

}  // namespace rnnx::cuda
