// The plan: built once for a Config and a SequenceShape on one backend (like cuDNN's
// descriptors or oneDNN's primitive descriptors). Building validates everything,
// computes the sequence schedule and the buffer sizes; executing takes raw buffers.
//
// Buffers are dense, in the plan's dtype, in the layouts of sequence.hpp, in the memory of
// the plan's backend (host memory for reference and cpu):
//   h0, hy  [L*D, B, P']   c0, cy [L*D, B, H]   (original batch order)
//   weights the flat buffer of weights.hpp
// Workspace is scratch for one call; reserve is written by a training forward and read
// by the backward of the same batch, as often as wanted, one backward after another (on
// cuda a backward writes scratch into cuDNN's part of it, so two must not overlap).
// With a caller-provided workspace, execution
// allocates nothing; with workspace == nullptr the plan uses (and keeps) its own (on a
// device backend such a call then waits for its stream before it returns, so that the next
// call may reuse that workspace; pass a workspace to stay asynchronous).
// Every tensor must be aligned to its element size; workspace and reserve to
// buffer_alignment(): 8 bytes on the host backends (64 recommended: sub-buffers are carved
// at 64-byte offsets from the base), 256 on cuda.
// An empty batch (B = 0, as torch.nn.LSTM accepts) is a no-op: its sequence and state
// tensors have no elements and may be null ("required" means: when it has elements), its
// workspaces are 0 bytes, its reserve only the header that ties backward to the forward,
// and backward zeroes dweights when overwriting and leaves it alone when accumulating.
// Threads: several threads may call forward and backward of one plan at the same time,
// each call with its own tensors, reserve and workspace; calls that pass no workspace get
// one each from the plan (it keeps as many as calls were ever in flight at once). Results
// do not depend on what runs beside a call. Destroying or moving a plan must not overlap
// with its calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rnnx/config.hpp"
#include "rnnx/export.h"
#include "rnnx/sequence.hpp"
#include "rnnx/weights.hpp"

RNNX_EXPORT_BEGIN
namespace rnnx {

// cuda: NVIDIA GPUs (issue 10, in progress); a plan on a backend this build lacks is refused
// with Error(unsupported).
enum class Backend { reference, cpu, cuda };
const char* to_string(Backend backend);
Backend backend_from_string(const std::string& name);  // throws invalid_argument

// What a plan is built for, as oneDNN's propagation kinds say it: the algorithm search (cpu
// and cuda) measures that. A training plan runs training forwards, their backwards and
// inference forwards; an inference plan runs inference forwards only and refuses the others
// (its search never ran them), so its search costs a forward, not a training step.
enum class PlanPurpose { training, inference };
const char* to_string(PlanPurpose purpose);
PlanPurpose plan_purpose_from_string(const std::string& name);  // throws invalid_argument

// The cpu backend's choices for one plan (docs/cpu.md), each overriding the environment
// variable that otherwise supplies it: "" takes the variable's value (unset: automatic),
// "auto" is automatic whatever the variable says, anything else forces that value. A plan
// on another backend refuses any of them. Building a cpu plan refuses an unknown value,
// naming the option, the value and the allowed ones. impl_name() shows what runs.
struct CpuChoices {
  // The instruction-set cap: "scalar" < "avx2" < "avx512" < "avx512-bf16" (a level above the
  // machine's means the machine's); "" = set_cpu_isa_limit(), else RNNX_CPU_ISA.
  std::string isa;
  std::string gemm;              // float32 GEMM engine: "packed", "sgemm", "plain" (RNNX_CPU_GEMM)
  std::string time_loop;         // "team", "per-step" (RNNX_CPU_TIME_LOOP)
  std::string directions;        // "concurrent", "sequential" (RNNX_CPU_DIRECTIONS)
  std::string input_projection;  // "split", "bulk", "steps" (RNNX_CPU_INPUT_PROJECTION)
  std::string search;            // the algorithm search: "on", "off" (RNNX_AUTOTUNE 1, 0)
  bool empty() const;
};
// "isa=avx2 gemm=packed", the choices that are set; and back (any subset, in any order;
// throws invalid_argument naming an unknown choice). Values are checked when a plan is built.
std::string to_string(const CpuChoices& choices);
CpuChoices cpu_choices_from_string(const std::string& text);

struct PlanOptions {
  Backend backend = Backend::cpu;
  int num_threads = 0;  // 0 = the calling thread's default (rnnx::max_threads())
  PlanPurpose purpose = PlanPurpose::training;
  CpuChoices cpu = {};  // backend cpu only
};

struct ForwardArgs {
  const void* x = nullptr;        // required
  const void* h0 = nullptr;       // optional, zeros when null
  const void* c0 = nullptr;       // optional (LSTM), zeros when null
  const void* weights = nullptr;  // required
  void* y = nullptr;              // required
  void* hy = nullptr;             // optional output
  void* cy = nullptr;             // optional output (LSTM)
  bool training = false;
  // Dropout: the mask of this call is a pure function of (config.seed, dropout_counter,
  // layer, position); a framework advances the counter once per training call.
  uint64_t dropout_counter = 0;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  void* reserve = nullptr;  // required when training
  size_t reserve_size = 0;
  // The stream a device backend runs the call on (a cudaStream_t; null: its default
  // stream). Host backends run on the calling thread and refuse one.
  void* stream = nullptr;
  // The weights' version: 0 = unknown, and what the backend prepares from the weights (the
  // cpu's packed recurrent weights, cuDNN's weight space in an inference call on the cuda
  // backend) is prepared at every call. Otherwise a number the caller
  // changes whenever the values at `weights` change (PyTorch's tensor version counter, a
  // step count): the second call with the same (weights, version) keeps the prepared copy
  // in the network (plan), and later calls with them use it instead of preparing their own.
  // A network keeps the copies of its last 4 (weights, version) pairs; they go with it.
  uint64_t weights_version = 0;
};

enum class GradMode { overwrite, accumulate };

struct BackwardArgs {
  const void* x = nullptr;   // required
  const void* h0 = nullptr;  // as given to forward
  const void* c0 = nullptr;
  const void* weights = nullptr;  // required
  const void* dy = nullptr;       // optional, zero when null
  const void* dhy = nullptr;      // optional, zero when null
  const void* dcy = nullptr;      // optional (LSTM), zero when null
  void* dx = nullptr;             // optional output (skipped when null)
  void* dh0 = nullptr;            // optional output
  void* dc0 = nullptr;            // optional output (LSTM)
  void* dweights = nullptr;       // optional output, flat layout
  GradMode weight_grad_mode = GradMode::overwrite;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  const void* reserve = nullptr;  // required: what the training forward kept
  size_t reserve_size = 0;
  void* stream = nullptr;  // as ForwardArgs::stream
};

class BackendImpl;

class Plan {
 public:
  Plan(const Config& config, const SequenceShape& shape, const PlanOptions& options = {});
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;

  const Config& config() const;
  const SequenceShape& shape() const;
  const WeightLayout& weight_layout() const;
  const PlanOptions& options() const;

  int64_t max_seq_len() const;  // T of the padded tensors (for packed: batch_sizes.size())
  int64_t batch() const;        // B
  int64_t tokens() const;       // real tokens: sum of lengths
  // Element counts of each tensor, for allocation.
  int64_t x_numel() const;
  int64_t y_numel() const;
  int64_t h_numel() const;  // h0, hy
  int64_t c_numel() const;  // c0, cy (LSTM), 0 otherwise
  int64_t weights_numel() const;

  size_t forward_workspace_size(bool training) const;  // bytes
  size_t backward_workspace_size() const;              // bytes
  size_t reserve_size() const;                         // bytes
  // What a caller's workspace and reserve must be aligned to (bytes): 8 on the host
  // backends, 256 on cuda, on cuDNN and rnnx's own kernels alike (cudaMalloc's alignment).
  size_t buffer_alignment() const;

  // What runs: "reference", "cpu:avx512/onednn-sgemm", ...
  std::string impl_name() const;
  // Printable problem name, e.g. lstm_l2_bidir_t7_b3_i17_h34_p0_len-mixed.
  std::string problem_name() const;

  void forward(const ForwardArgs& args);
  void backward(const BackwardArgs& args);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rnnx
RNNX_EXPORT_END
