// The device-neutral half of the own path (step_backend.hpp).
#include "core/step_backend.hpp"

#include <algorithm>

#include "core/row_maps.hpp"

namespace rnnx::core {
namespace {

class StepBackend final : public BackendImpl {
 public:
  StepBackend(const PlanContext& ctx, std::unique_ptr<StepDevice> device)
      : BackendImpl(ctx),
        device_(std::move(device)),
        programs_(build_step_programs(ctx.config, ctx.schedule, ctx.weights)) {
    const Config& c = ctx.config;
    const Schedule& s = ctx.schedule;
    elem_ = dtype_size(c.dtype);
    LD_ = c.num_layers * c.num_directions();
    P_ = c.output_size();
    H_ = c.hidden_size;
    DP_ = c.num_directions() * P_;
    lstm_ = c.cell == CellType::lstm;
    in_place_ = rows_in_place(ctx.shape, s);
    // Every layer and direction's state rows in sorted order <- the caller's rows.
    const RowMaps maps = row_maps(ctx.shape, s, LD_, DP_, s.B, !in_place_);
    maps_.tokens = s.tokens;
    maps_.states = LD_ * s.B;
    if (!maps.state_rows.empty()) state_map_ = device_->upload(maps.state_rows);
    maps_.state_rows = static_cast<const int64_t*>(state_map_.get());
    if (!maps.padding_rows.empty()) padding_map_ = device_->upload(maps.padding_rows);
    maps_.padding_rows = static_cast<const int64_t*>(padding_map_.get());
    maps_.padding = static_cast<int64_t>(maps.padding_rows.size());
    if (s.tokens > 0) {
      dropout_map_ = device_->upload(maps.dropout);
      if (!in_place_) caller_map_ = device_->upload(maps.caller_rows);
    }
    maps_.caller_rows = static_cast<const int64_t*>(caller_map_.get());
  }

  std::string name() const override { return device_->name(); }
  size_t forward_workspace_size(bool training) const override {
    return layout(training ? programs_.forward_training : programs_.forward_inference, nullptr)
        .used;
  }
  size_t backward_workspace_size() const override {
    return layout(programs_.backward, nullptr).used;
  }
  size_t reserve_size() const override { return bytes(programs_.reserve); }
  const Memory& memory() const override { return device_->memory(); }
  bool takes_stream() const override { return device_->takes_stream(); }

  void forward(const ForwardArgs& a, void* workspace) override {
    const StepProgram& p = a.training ? programs_.forward_training : programs_.forward_inference;
    const BatchMover m = mover();
    const Layout w = layout(p, workspace);
    StepDevice::Buffers b{.input = m.rows_in(a.x, w.x, ctx_.config.input_size, a.stream),
                          .weights = a.weights,
                          .workspace = w.program,
                          .reserve = a.reserve};
    m.states_in(a.h0, at(b.workspace, p.h_state), P_, a.stream);
    if (lstm_) m.states_in(a.c0, at(b.workspace, p.c_state), H_, a.stream);
    device_->run(p, b, dropout(a.dropout_counter), a.stream);
    m.rows_out(at(b, p.rows_out), a.y, DP_, ctx_.config.padding_fill, a.stream);
    if (a.hy) m.states_out(at(b.workspace, p.h_state), a.hy, P_, a.stream);
    if (a.cy) m.states_out(at(b.workspace, p.c_state), a.cy, H_, a.stream);
  }

  void backward(const BackwardArgs& a, void* workspace, uint64_t dropout_counter) override {
    const StepProgram& p = programs_.backward;
    const BatchMover m = mover();
    const Layout w = layout(p, workspace);
    // The backward program only reads the reserve.
    StepDevice::Buffers b{.input = m.rows_in(a.x, w.x, ctx_.config.input_size, a.stream),
                          .weights = a.weights,
                          .dweights = a.dweights,
                          .workspace = w.program,
                          .reserve = const_cast<void*>(a.reserve)};
    if (a.dweights && a.weight_grad_mode == GradMode::overwrite) {
      device_->rows().fill_rows(a.dweights, nullptr, 1, ctx_.weights.numel(), 0.0, a.stream);
    }
    m.states_in(a.dhy, at(b.workspace, p.h_state), P_, a.stream);
    if (lstm_) m.states_in(a.dcy, at(b.workspace, p.c_state), H_, a.stream);
    m.copy_rows_in(a.dy, at(b, p.dy), DP_, a.stream);
    device_->run(p, b, dropout(dropout_counter), a.stream);
    if (a.dx) m.rows_out(at(b, p.dx), a.dx, ctx_.config.input_size, 0.0, a.stream);
    if (a.dh0) m.states_out(at(b.workspace, p.h_state), a.dh0, P_, a.stream);
    if (a.dc0) m.states_out(at(b.workspace, p.c_state), a.dc0, H_, a.stream);
  }

 private:
  // A call's workspace: the program's, then the caller's x in packed sorted rows when it is
  // not already.
  struct Layout {
    void* program = nullptr;
    void* x = nullptr;
    size_t used = 0;
  };
  Layout layout(const StepProgram& p, void* base) const {
    Carver k(base);
    Layout l;
    l.program = k.take<char>(bytes(p.workspace));
    if (!in_place_) l.x = k.take<char>(bytes(ctx_.x_numel()));
    l.used = k.used();
    return l;
  }
  size_t bytes(int64_t elems) const { return static_cast<size_t>(elems * elem_); }
  void* at(void* base, Ref r) const { return static_cast<char*>(base) + bytes(r.at); }
  void* at(const StepDevice::Buffers& b, Ref r) const {
    return r.buf == Buf::reserve ? at(b.reserve, r) : at(b.workspace, r);
  }
  BatchMover mover() const { return BatchMover(device_->rows(), maps_); }
  StepDevice::Dropout dropout(uint64_t counter) const {
    return {.element_base = static_cast<const int64_t*>(dropout_map_.get()),
            .seed = ctx_.config.seed,
            .counter = counter,
            .p = ctx_.config.dropout};
  }

  std::unique_ptr<StepDevice> device_;
  StepPrograms programs_;
  Buffer state_map_, padding_map_, dropout_map_, caller_map_;
  BatchMaps maps_;  // over those
  int64_t elem_ = 4, LD_ = 0, P_ = 0, H_ = 0, DP_ = 0;
  bool lstm_ = false, in_place_ = false;
};

}  // namespace

std::unique_ptr<BackendImpl> make_step_backend(const PlanContext& ctx,
                                               std::unique_ptr<StepDevice> device) {
  return std::make_unique<StepBackend>(ctx, std::move(device));
}

}  // namespace rnnx::core
