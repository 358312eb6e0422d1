// The cuda backend on cuDNN 9: the batch cuDNN sees is the plan's sorted sequences of length
// > 0 in cuDNN's packed layout (CudnnBatch), gathered from the caller's layout when it
// differs and scattered back with padding_fill; states are permuted to that order and back,
// and the sequences of length 0 (which cuDNN refuses) get hy = h0, cy = c0, dh0 = dhy,
// dc0 = dcy here. Weights are copied from the flat buffer into cuDNN's weight space each
// forward (into the reserve when training, so that backward does not copy them again; an
// inference call with a weights version uses the network's kept copy instead,
// kept_cudnn_weights.hpp), and gradients back into the flat buffer, overwritten or added. With
// dropout between layers each layer is its own cuDNN call and rnnx's own masks (philox.hpp) go
// between them, the same as on the CPU. What cuDNN cannot express (cudnn_refusal) runs on rnnx's
// own kernels instead (core/step_backend.hpp, step_device.hpp).
#include "cuda/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/autotune_cache.hpp"
#include "core/backend.hpp"
#include "core/backend_registry.hpp"
#include "core/batch_mover.hpp"
#include "core/dropout.hpp"
#include "core/reserve_ledger.hpp"
#include "core/row_maps.hpp"
#include "core/step_backend.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/cudnn_rnn.hpp"
#include "cuda/cudnn_search.hpp"
#include "cuda/device_rows.hpp"
#include "cuda/kept_cudnn_weights.hpp"
#include "cuda/kernels.hpp"
#include "cuda/map_uploads.hpp"
#include "cuda/rules/cudnn_layout.hpp"
#include "cuda/step_device.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace cuda {
namespace {

// What cuDNN's spaces need (and cudaMalloc gives): a caller's workspace and reserve too.
constexpr size_t kCudnnAlignment = kBufferAlignment;
static_assert(kCudnnAlignment > sizeof(core::ReserveHeader), "the reserve's body pads to it");

// p advanced by `elems` elements of `elem` bytes; null stays null.
template <typename P>
P at(P p, int64_t elems, int64_t elem) {
  if (p == nullptr) return nullptr;
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<P>>, const char, char>;
  return static_cast<P>(static_cast<Byte*>(p) + elems * elem);
}

// The cuda backend's state for every batch of one network (core/backend.hpp): its kept
// copies of the weights in cuDNN's spaces.
struct CudaNetwork final : BackendShared {
  KeptCudnnWeights kept;
};

class CudaBackend final : public BackendImpl {
 public:
  CudaBackend(const PlanContext& ctx, CudnnAlgo algo)
      : BackendImpl(ctx),
        network_(ctx.shared->get<CudaNetwork>([] { return std::make_unique<CudaNetwork>(); })),
        algo_(algo),
        device_(current_device()),
        batch_(cudnn_batch(ctx.shape, ctx.schedule, ctx.config)),
        rows_(ctx.config.dtype, device_) {
    const Config& c = ctx.config;
    const core::Schedule& s = ctx.schedule;
    elem_ = dtype_size(c.dtype);
    D_ = c.num_directions();
    P_ = c.output_size();
    H_ = c.hidden_size;
    LD_ = c.num_layers * D_;
    DP_ = D_ * P_;
    lstm_ = c.cell == CellType::lstm;
    direct_states_ = batch_.states_in_order && batch_.batch == s.B;
    // The handle the descriptors were set up with lives as long as they do (the dropout
    // descriptor was set through it).
    setup_ = make_handle();
    rnn_ = std::make_unique<CudnnRnn>(ctx, batch_, setup_.get(), algo);
    lay_out_kept_weights();
    upload_maps();
  }

  // The network's next batch (new lengths) on this backend: the handles, the RNN
  // descriptors and the weight copies stay; the batch's data descriptors and cuDNN's sizes
  // are set again and its row maps uploaded into the kept buffer (grown when too small), on
  // the backend's own stream. STANDARD only: a batch whose lengths let a persistent algorithm
  // in is searched for anew (a new backend), as a plan of its own would be.
  bool rebind() override {
    if (algo_ != CudnnAlgo::standard) return false;
    CudnnBatch batch = cudnn_batch(ctx_.shape, ctx_.schedule, ctx_.config);
    if (core::autotune_enabled() && cudnn_algorithm_candidates(ctx_.config, batch).size() > 1)
      return false;
    DeviceScope scope(device_);
    batch_ = std::move(batch);
    direct_states_ = batch_.states_in_order && batch_.batch == ctx_.schedule.B;
    rnn_->bind(batch_, setup_.get());
    upload_maps();
    return true;
  }

  std::string name() const override {
    return std::string("cuda:cudnn-") + to_string(algo_) + "/" + rnn_->math_name() +
           (rnn_->per_layer() ? "/per-layer" : "");
  }
  size_t forward_workspace_size(bool training) const override {
    return forward_buffers(nullptr, training).used;
  }
  size_t backward_workspace_size() const override { return backward_buffers(nullptr).used; }
  size_t reserve_size() const override {
    size_t used = 0;
    reserve_parts(nullptr, &used);
    return used;
  }
  size_t kept_bytes() const override { return network_.kept.bytes(); }
  const core::Memory& memory() const override { return device_memory(); }
  bool takes_stream() const override { return true; }
  // cuDNN's workspace and reserve spaces, and everything carved beside them, 256-aligned.
  size_t buffer_alignment() const override { return kCudnnAlignment; }

  void forward(const ForwardArgs& a, void* workspace) override;
  void backward(const BackwardArgs& a, void* workspace, uint64_t dropout_counter) override;

 private:
  struct ForwardBuffers {
    void* x = nullptr;       // packed x, gathered from the caller's layout
    void* x_drop = nullptr;  // the next layer's input after dropout
    void* y[2] = {nullptr, nullptr};
    void* hx = nullptr;  // states in cuDNN's batch order
    void* cx = nullptr;
    void* hy = nullptr;
    void* cy = nullptr;
    void* weights = nullptr;  // inference: the weight space (training keeps it in the reserve)
    void* cudnn = nullptr;
    size_t used = 0;
  };
  struct BackwardBuffers {
    void* x = nullptr;
    void* x_drop = nullptr;
    void* dy = nullptr;
    void* dx[2] = {nullptr, nullptr};
    void* hx = nullptr;
    void* cx = nullptr;
    void* dhy = nullptr;
    void* dcy = nullptr;
    void* dhx = nullptr;
    void* dcx = nullptr;
    void* dw = nullptr;
    void* cudnn = nullptr;
    size_t used = 0;
  };
  // Per group: its weight space, its packed output (backward reads both) and cuDNN's reserve.
  struct GroupReserve {
    void* weights = nullptr;
    void* y = nullptr;
    void* cudnn = nullptr;
  };

  int64_t tokens() const { return batch_.tokens; }
  int64_t batch() const { return batch_.batch; }
  bool dropout_between() const { return core::dropout_between_layers(ctx_.config); }
  core::BatchMover mover() const { return core::BatchMover(rows_, batch_maps_); }
  size_t bytes(int64_t elems) const { return static_cast<size_t>(elems * elem_); }

  ForwardBuffers forward_buffers(void* base, bool training) const {
    ForwardBuffers b;
    if (batch() == 0) return b;
    Carver k(base, kCudnnAlignment);
    const int64_t N = tokens(), Bp = batch();
    if (!batch_.rows_in_place) b.x = k.take<char>(bytes(N * ctx_.config.input_size));
    if (training && dropout_between()) b.x_drop = k.take<char>(bytes(N * DP_));
    if (!training) {
      if (!batch_.rows_in_place || rnn_->per_layer()) b.y[0] = k.take<char>(bytes(N * DP_));
      if (rnn_->per_layer()) b.y[1] = k.take<char>(bytes(N * DP_));
      b.weights = k.take<char>(rnn_->max_weight_bytes());
    }
    if (!direct_states_) {
      b.hx = k.take<char>(bytes(LD_ * Bp * P_));
      b.hy = k.take<char>(bytes(LD_ * Bp * P_));
      if (lstm_) {
        b.cx = k.take<char>(bytes(LD_ * Bp * H_));
        b.cy = k.take<char>(bytes(LD_ * Bp * H_));
      }
    }
    b.cudnn = k.take<char>(rnn_->max_workspace(training));
    b.used = k.used();
    return b;
  }

  BackwardBuffers backward_buffers(void* base) const {
    BackwardBuffers b;
    if (batch() == 0) return b;
    Carver k(base, kCudnnAlignment);
    const int64_t N = tokens(), Bp = batch();
    const int64_t widest = std::max(ctx_.config.input_size, DP_);
    if (!batch_.rows_in_place) b.x = k.take<char>(bytes(N * ctx_.config.input_size));
    if (dropout_between()) b.x_drop = k.take<char>(bytes(N * DP_));
    b.dy = k.take<char>(bytes(N * DP_));
    b.dx[0] = k.take<char>(bytes(N * widest));
    if (rnn_->per_layer()) b.dx[1] = k.take<char>(bytes(N * widest));
    if (!direct_states_) {
      for (void** p : {&b.hx, &b.dhy, &b.dhx}) *p = k.take<char>(bytes(LD_ * Bp * P_));
      if (lstm_) {
        for (void** p : {&b.cx, &b.dcy, &b.dcx}) *p = k.take<char>(bytes(LD_ * Bp * H_));
      }
    }
    b.dw = k.take<char>(rnn_->max_weight_bytes());
    b.cudnn = k.take<char>(rnn_->max_workspace(true));
    b.used = k.used();
    return b;
  }

  std::vector<GroupReserve> reserve_parts(const void* base, size_t* used) const {
    std::vector<GroupReserve> parts;
    Carver k(const_cast<void*>(base), kCudnnAlignment);
    if (batch() > 0) {
      // The body starts sizeof(ReserveHeader) = 64 bytes past the caller's 256-aligned
      // reserve: the rest of 256 first, so that every part starts 256-aligned.
      k.take<char>(static_cast<int64_t>(kCudnnAlignment - sizeof(core::ReserveHeader)));
      for (const CudnnGroup& g : rnn_->groups()) {
        GroupReserve r;
        r.weights = k.take<char>(g.weight_bytes);
        r.y = k.take<char>(bytes(tokens() * DP_));
        r.cudnn = k.take<char>(g.reserve_training);
        parts.push_back(r);
      }
    }
    if (used) *used = k.used();
    return parts;
  }

  // Where each group's weight space sits in a kept copy (256-aligned, one after another),
  // and what identifies that layout: the groups, their spaces, the algorithm and math, the
  // GPU.
  void lay_out_kept_weights() {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the numbers that place the weights
    const auto mix = [&h](uint64_t v) {
      for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ull;
    };
    mix(static_cast<uint64_t>(algo_));
    mix(static_cast<uint64_t>(device_));
    mix(static_cast<uint64_t>(ctx_.config.dtype));
    for (char ch : rnn_->math_name()) mix(static_cast<uint64_t>(ch));
    Carver k(nullptr, kCudnnAlignment);
    for (const CudnnGroup& g : rnn_->groups()) {
      kept_offsets_.push_back(k.used());
      k.take<char>(static_cast<int64_t>(g.weight_bytes));
      for (uint64_t v : {uint64_t(g.first_layer), uint64_t(g.layers), uint64_t(g.weight_bytes),
                         uint64_t(g.flat_base)})
        mix(v);
    }
    kept_total_ = k.used();
    kept_layout_ = h;
  }

  // An inference call's kept weights (an empty Use: it converts into its workspace).
  KeptCudnnWeights::Use kept_weights(const ForwardArgs& a, cudaStream_t stream) {
    if (a.training || a.weights_version == 0) return {};
    const auto convert = [&](void* space) {
      const auto& groups = rnn_->groups();
      for (size_t gi = 0; gi < groups.size(); ++gi) {
        const CudnnGroup& g = groups[gi];
        weights_to_cudnn(ctx_.config.dtype, static_cast<const WeightSegment*>(g.segments.get()),
                         g.segment_count, g.longest_segment, a.weights, g.flat_base,
                         at(space, static_cast<int64_t>(kept_offsets_[gi]), 1), stream);
      }
    };
    return network_.kept.find({a.weights, a.weights_version, kept_layout_}, kept_total_, stream,
                              convert);
  }

  // The maps the kernels read, on the device: the batch mover's (core/batch_mover.hpp: the
  // caller's row of every packed row, its padding rows, the caller's state row of every state
  // row of cuDNN's batch and of every length-0 sequence) and the first dropout element of every
  // packed row.
  void upload_maps() {
    const core::Schedule& s = ctx_.schedule;
    const core::RowMaps m = core::row_maps(ctx_.shape, s, LD_, DP_, batch(), true);
    std::vector<int64_t> all;
    auto put = [&](const std::vector<int64_t>& v) {
      const size_t at = all.size();
      all.insert(all.end(), v.begin(), v.end());
      return at;
    };
    const size_t rows_at = put(m.caller_rows), padding_at = put(m.padding_rows),
                 state_at = put(m.state_rows), empty_at = put(m.empty_rows),
                 drop_at = put(m.dropout);
    batch_maps_.tokens = tokens();
    batch_maps_.padding = static_cast<int64_t>(m.padding_rows.size());
    batch_maps_.states = LD_ * batch();
    batch_maps_.empty = LD_ * (s.B - batch());
    const int64_t* base = maps_.stage(all);  // on the device at the next call's flush
    if (all.empty()) return;
    batch_maps_.caller_rows = batch_.rows_in_place ? nullptr : base + rows_at;
    batch_maps_.padding_rows = base + padding_at;
    batch_maps_.state_rows = base + state_at;
    batch_maps_.empty_rows = base + empty_at;
    dropout_base_ = base + drop_at;
  }

  CudaNetwork& network_;  // shared by the network's batches
  CudnnAlgo algo_;
  int device_;
  CudnnBatch batch_;
  CudnnHandle setup_;
  std::unique_ptr<CudnnRnn> rnn_;
  CudnnHandlePool handles_{&make_handle, &attach_stream};
  MapUploads maps_;             // the batch's maps, flushed onto each call's stream
  core::BatchMaps batch_maps_;  // in maps_
  const int64_t* dropout_base_ = nullptr;
  DeviceRows rows_;
  int64_t elem_ = 4, D_ = 1, P_ = 0, H_ = 0, LD_ = 0, DP_ = 0;
  bool lstm_ = false;
  bool direct_states_ = false;        // cuDNN's batch is the caller's: states need no permutation
  std::vector<size_t> kept_offsets_;  // each group's space in a kept copy
  size_t kept_total_ = 0;
  uint64_t kept_layout_ = 0;
};

void CudaBackend::forward(const ForwardArgs& a, void* workspace) {
  DeviceScope scope(device_);
  const auto stream = static_cast<cudaStream_t>(a.stream);
  maps_.flush(stream);
  const Config& c = ctx_.config;
  const DataType dt = c.dtype;
  const int64_t Bp = batch(), N = tokens();
  const ForwardBuffers f = forward_buffers(workspace, a.training);
  const core::BatchMover m = mover();
  if (Bp == 0) {
    m.rows_out(nullptr, a.y, DP_, c.padding_fill, stream);  // padding only
  } else {
    CudnnHandlePool::Lease handle = handles_.acquire(stream);
    const void* in = m.rows_in(a.x, f.x, c.input_size, stream);
    const void* hx = a.h0;
    const void* cx = a.c0;
    void* hy = a.hy;
    void* cy = a.cy;
    if (!direct_states_) {
      hx = a.h0 ? f.hx : nullptr;
      cx = a.c0 ? f.cx : nullptr;
      hy = a.hy ? f.hy : nullptr;
      cy = a.cy ? f.cy : nullptr;
      if (a.h0) m.states_in(a.h0, f.hx, P_, stream);
      if (a.c0) m.states_in(a.c0, f.cx, H_, stream);
    }
    const std::vector<GroupReserve> reserve = reserve_parts(a.reserve, nullptr);
    const auto& groups = rnn_->groups();
    KeptCudnnWeights::Use kept = kept_weights(a, stream);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const CudnnGroup& g = groups[gi];
      const bool last = gi + 1 == groups.size();
      void* weights = a.training ? reserve[gi].weights : f.weights;
      if (kept.space()) {
        weights = at(kept.space(), static_cast<int64_t>(kept_offsets_[gi]), 1);
      } else {
        weights_to_cudnn(dt, static_cast<const WeightSegment*>(g.segments.get()), g.segment_count,
                         g.longest_segment, a.weights, g.flat_base, weights, stream);
      }
      void* out = a.training ? reserve[gi].y : (last && batch_.rows_in_place) ? a.y : f.y[gi % 2];
      const int64_t slab = g.first_layer * D_ * Bp;
      check(calls().cudnnRNNForward(
                handle.get(), g.rnn.get(),
                a.training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE, nullptr, g.x.get(),
                in, g.y.get(), out, g.h.get(), at(hx, slab * P_, elem_), at(hy, slab * P_, elem_),
                g.c.get(), at(cx, slab * H_, elem_), at(cy, slab * H_, elem_), g.weight_bytes,
                weights, a.training ? g.workspace_training : g.workspace_inference, f.cudnn,
                a.training ? g.reserve_training : 0, a.training ? reserve[gi].cudnn : nullptr),
            "cudnnRNNForward");
      in = out;
      if (a.training && core::dropout_after_layer(c, g.first_layer)) {
        copy_rows(dt, out, nullptr, f.x_drop, nullptr, N, DP_, stream);
        apply_dropout(dt, f.x_drop, N, DP_, dropout_base_, c.seed, a.dropout_counter, g.first_layer,
                      c.dropout, stream);
        in = f.x_drop;
      }
    }
    kept.done();  // cuDNN's reads of the kept copy are queued
    if (in != a.y) m.rows_out(in, a.y, DP_, c.padding_fill, stream);
    if (!direct_states_) {
      if (a.hy) m.states_out(f.hy, a.hy, P_, stream);
      if (a.cy) m.states_out(f.cy, a.cy, H_, stream);
    }
  }
  // Sequences of length 0 keep their initial state.
  if (a.hy) m.pass_empty_states(a.h0, a.hy, P_, stream);
  if (a.cy) m.pass_empty_states(a.c0, a.cy, H_, stream);
  check(calls().cudaGetLastError(), "forward");
}

void CudaBackend::backward(const BackwardArgs& a, void* workspace, uint64_t dropout_counter) {
  DeviceScope scope(device_);
  const auto stream = static_cast<cudaStream_t>(a.stream);
  maps_.flush(stream);
  const Config& c = ctx_.config;
  const DataType dt = c.dtype;
  const int64_t Bp = batch(), N = tokens(), I = c.input_size;
  const bool accumulate = a.weight_grad_mode == GradMode::accumulate;
  const BackwardBuffers w = backward_buffers(workspace);
  const core::BatchMover m = mover();
  if (Bp == 0) {
    if (a.dx) m.rows_out(nullptr, a.dx, I, 0.0, stream);  // padding only
    if (a.dweights && !accumulate)
      check(calls().cudaMemsetAsync(a.dweights, 0, bytes(ctx_.weights.numel()), stream),
            "cudaMemsetAsync");
  } else {
    CudnnHandlePool::Lease handle = handles_.acquire(stream);
    const void* x0 = m.rows_in(a.x, w.x, I, stream);
    const void* hx = a.h0;
    const void* cx = a.c0;
    const void* dhy = a.dhy;
    const void* dcy = a.dcy;
    void* dhx = a.dh0;
    void* dcx = a.dc0;
    if (!direct_states_) {
      hx = a.h0 ? w.hx : nullptr;
      cx = a.c0 ? w.cx : nullptr;
      dhy = a.dhy ? w.dhy : nullptr;
      dcy = a.dcy ? w.dcy : nullptr;
      dhx = a.dh0 ? w.dhx : nullptr;
      dcx = a.dc0 ? w.dcx : nullptr;
      const std::pair<const void*, void*> p_states[] = {{a.h0, w.hx}, {a.dhy, w.dhy}};
      for (auto [src, dst] : p_states)
        if (src) m.states_in(src, dst, P_, stream);
      const std::pair<const void*, void*> h_states[] = {{a.c0, w.cx}, {a.dcy, w.dcy}};
      for (auto [src, dst] : h_states)
        if (src) m.states_in(src, dst, H_, stream);
    }
    // dy of the last layer, packed (zeros without one); never read at padding.
    m.copy_rows_in(a.dy, w.dy, DP_, stream);
    const std::vector<GroupReserve> reserve = reserve_parts(a.reserve, nullptr);
    const auto& groups = rnn_->groups();
    const void* dy = w.dy;
    void* dx = nullptr;
    for (size_t gi = groups.size(); gi-- > 0;) {
      const CudnnGroup& g = groups[gi];
      // cuDNN's backward writes its scratch (the gates' gradients) into its reserve and keeps
      // the forward's part, so it works on the reserve itself, as PyTorch's does: a second
      // backward from one reserve gives the first's results (tests/cuda checks it), two
      // backwards of one reserve must not run at once.
      void* cudnn_reserve = reserve[gi].cudnn;
      const void* x = x0;
      if (gi > 0) {
        x = reserve[gi - 1].y;
        if (dropout_between()) {  // the masked input this layer saw, made again
          copy_rows(dt, reserve[gi - 1].y, nullptr, w.x_drop, nullptr, N, DP_, stream);
          apply_dropout(dt, w.x_drop, N, DP_, dropout_base_, c.seed, dropout_counter,
                        groups[gi - 1].first_layer, c.dropout, stream);
          x = w.x_drop;
        }
      }
      dx = (gi == 0 && batch_.rows_in_place && a.dx) ? a.dx : w.dx[gi % 2];
      const int64_t slab = g.first_layer * D_ * Bp;
      check(calls().cudnnRNNBackwardData_v8(
                handle.get(), g.rnn.get(), nullptr, g.y.get(), reserve[gi].y, dy, g.x.get(), dx,
                g.h.get(), at(hx, slab * P_, elem_), at(dhy, slab * P_, elem_),
                at(dhx, slab * P_, elem_), g.c.get(), at(cx, slab * H_, elem_),
                at(dcy, slab * H_, elem_), at(dcx, slab * H_, elem_), g.weight_bytes,
                reserve[gi].weights, g.workspace_training, w.cudnn, g.reserve_training,
                cudnn_reserve),
            "cudnnRNNBackwardData_v8");
      if (a.dweights) {
        check(calls().cudaMemsetAsync(w.dw, 0, g.weight_bytes, stream), "cudaMemsetAsync");
        check(calls().cudnnRNNBackwardWeights_v8(
                  handle.get(), g.rnn.get(), CUDNN_WGRAD_MODE_ADD, nullptr, g.x.get(), x, g.h.get(),
                  at(hx, slab * P_, elem_), g.y.get(), reserve[gi].y, g.weight_bytes, w.dw,
                  g.workspace_training, w.cudnn, g.reserve_training, cudnn_reserve),
              "cudnnRNNBackwardWeights_v8");
        weights_to_flat(dt, static_cast<const WeightSegment*>(g.segments.get()), g.segment_count,
                        g.longest_segment, w.dw, a.dweights, g.flat_base, accumulate, stream);
      }
      if (gi > 0) {
        if (dropout_between()) {
          apply_dropout(dt, dx, N, DP_, dropout_base_, c.seed, dropout_counter,
                        groups[gi - 1].first_layer, c.dropout, stream);
        }
        dy = dx;
      }
    }
    if (a.dx && dx != a.dx) m.rows_out(dx, a.dx, I, 0.0, stream);
    if (!direct_states_) {
      if (a.dh0) m.states_out(w.dhx, a.dh0, P_, stream);
      if (a.dc0) m.states_out(w.dcx, a.dc0, H_, stream);
    }
  }
  // A sequence of length 0 passes its state through: dh0 = dhy, dc0 = dcy.
  if (a.dh0) m.pass_empty_states(a.dhy, a.dh0, P_, stream);
  if (a.dc0) m.pass_empty_states(a.dcy, a.dc0, H_, stream);
  check(calls().cudaGetLastError(), "backward");
}

}  // namespace

std::unique_ptr<BackendImpl> make_cudnn_backend_unrouted(const PlanContext& ctx, CudnnAlgo algo) {
  return std::make_unique<CudaBackend>(ctx, algo);
}

}  // namespace cuda

namespace {

std::unique_ptr<BackendImpl> make_cuda_backend(const PlanContext& ctx) {
  const std::string refusal = cuda::cudnn_refusal(ctx.config);
  const std::string too_old =
      cuda::cudnn_version_refusal(ctx.config.dtype, cuda::calls().cudnnGetVersion());
  if (!too_old.empty()) throw Error(Status::unsupported, "backend cuda: " + too_old);
  if (refusal.empty()) {
    return cuda::with_fastest_cudnn_algorithm(ctx, [&ctx](cuda::CudnnAlgo algo) {
      return std::unique_ptr<BackendImpl>(std::make_unique<cuda::CudaBackend>(ctx, algo));
    });
  }
  // What cuDNN cannot express runs on rnnx's own kernels (core/step_backend.hpp).
  if (ctx.config.dtype != DataType::f32 && ctx.config.dtype != DataType::f64) {
    throw Error(Status::unsupported,
                std::string("backend cuda runs ") + refusal +
                    " on rnnx's own kernels, in float32 and float64 only, not dtype " +
                    to_string(ctx.config.dtype) + " yet; backend cpu runs it");
  }
  cuda::current_device();  // a machine without a GPU is refused before anything is made
  return core::make_step_backend(ctx, cuda::make_step_device(ctx));
}

}  // namespace

core::BackendRegistration cuda_backend_registration() {
  return {Backend::cuda, &make_cuda_backend, nullptr};
}

}  // namespace rnnx
