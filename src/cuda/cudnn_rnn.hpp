// cuDNN's descriptors for one plan: the RNN descriptors (all layers in one, or one per layer
// when dropout sits between layers, because rnnx applies its own masks there), the data and
// state descriptors of the batch cuDNN sees (CudnnBatch), the buffer sizes cuDNN asks
// for, and where cuDNN keeps each weight (the copies from and to the flat buffer). Built
// once per network (its slot); a new batch sets only the data descriptors and sizes again
// (bind). Calls only read it, so several threads may share it.
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/rules/cudnn_algorithm.hpp"
#include "cuda/rules/cudnn_layout.hpp"

namespace rnnx::cuda {

// Layers first_layer .. first_layer + layers - 1 as one cuDNN RNN.
struct CudnnGroup {
  int64_t first_layer = 0;
  int64_t layers = 0;
  int64_t in_width = 0;   // input row width: input_size, or D*P' after the first layer
  int64_t out_width = 0;  // D*P'
  RnnDescriptor rnn;
  RnnDataDescriptor x, y;
  TensorDescriptor h, c;  // [layers*D, B', P'] and [layers*D, B', H]
  size_t weight_bytes = 0;
  size_t workspace_inference = 0;
  size_t workspace_training = 0;
  size_t reserve_training = 0;
  // The copies between the flat buffer (from element flat_base on) and this group's
  // weight space, on the device.
  int64_t flat_base = 0;
  core::Buffer segments;
  int64_t segment_count = 0;
  int64_t longest_segment = 0;
  // Whether cuDNN placed the weights as cudnn_documented_layout says (informative:
  // cuDNN's own answer is what the copies use).
  bool documented_layout = false;
};

class CudnnRnn {
 public:
  // `handle` for the set-up queries. Throws Error(unsupported) for what cuDNN refuses.
  CudnnRnn(const PlanContext& ctx, const CudnnBatch& batch, cudnnHandle_t handle, CudnnAlgo algo);
  // A new batch (a network's next lengths): the data and state descriptors set again and
  // cuDNN's sizes asked again; the RNN descriptors and the weight copies stay.
  void bind(const CudnnBatch& batch, cudnnHandle_t handle);

  const std::vector<CudnnGroup>& groups() const { return groups_; }
  // One group per layer (dropout between layers) or one for all.
  bool per_layer() const { return groups_.size() > 1; }
  size_t max_weight_bytes() const;
  size_t max_workspace(bool training) const;
  // cudnn_math's name (rules/cudnn_layout.hpp): "fma", "tf32", "tensor-op-fp16-conversion",
  // "tensor-op" (float16), "default" (bfloat16), "double".
  const std::string& math_name() const { return math_name_; }

 private:
  Config config_;
  std::vector<CudnnGroup> groups_;
  DropoutDescriptor no_dropout_;
  std::string math_name_;
};

}  // namespace rnnx::cuda
