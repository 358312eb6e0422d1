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
    elem_ = dtype_size(c.dtype);
    LD_ = c.num_layers * c.num_directions();
    P_ = c.output_size();
    H_ = c.hidden_size;
    DP_ = c.num_directions() * P_;
    lstm_ = c.cell == CellType::lstm;
    bind_maps();
  }

  // The network's next batch: its programs and maps, on the same device (its handles and
  // the kept map buffer stay).
  bool rebind() override {
    programs_ = build_step_programs(ctx_.config, ctx_.schedule, ctx_.weights);
    bind_maps();
    return true;
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
  size_t buffer_alignment() const override { return device_->buffer_alignment(); }

  void forward(const ForwardArgs& a, void* workspace) override {
    device_->flush_maps(a.stream);
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
    device_->flush_maps(a.stream);
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
    return {.element_base = dropout_rows_,
            .seed = ctx_.config.seed,
            .counter = counter,
            .p = ctx_.config.dropout};
  }

  // The batch mover's maps and the dropout rows of the bound batch, one upload into one
  // kept buffer.
  void bind_maps() {
    const Schedule& s = ctx_.schedule;
    in_place_ = rows_in_place(ctx_.shape, s);
    const RowMaps maps = row_maps(ctx_.shape, s, LD_, DP_, s.B, !in_place_);
    std::vector<int64_t> all;
    const auto put = [&](const std::vector<int64_t>& v) {
      const size_t at = all.size();
      all.insert(all.end(), v.begin(), v.end());
      return at;
    };
    const size_t state_at = put(maps.state_rows), padding_at = put(maps.padding_rows);
    const size_t dropout_at = s.tokens > 0 ? put(maps.dropout) : all.size();
    const size_t caller_at = s.tokens > 0 && !in_place_ ? put(maps.caller_rows) : all.size();
    const int64_t* base = device_->upload(all);
    const auto where = [&](bool present, size_t at) { return present ? base + at : nullptr; };
    maps_ = {};
    maps_.tokens = s.tokens;
    maps_.states = LD_ * s.B;
    maps_.state_rows = where(!maps.state_rows.empty(), state_at);
    maps_.padding_rows = where(!maps.padding_rows.empty(), padding_at);
    maps_.padding = static_cast<int64_t>(maps.padding_rows.size());
    maps_.caller_rows = where(s.tokens > 0 && !in_place_, caller_at);
    dropout_rows_ = where(s.tokens > 0, dropout_at);
  }

  std::unique_ptr<StepDevice> device_;
  StepPrograms programs_;
  BatchMaps maps_;                         // in the device's kept map buffer
  const int64_t* dropout_rows_ = nullptr;  // in the device's kept map buffer
  int64_t elem_ = 4, LD_ = 0, P_ = 0, H_ = 0, DP_ = 0;
  bool lstm_ = false, in_place_ = false;
};

}  // namespace

std::unique_ptr<BackendImpl> make_step_backend(const PlanContext& ctx,
                                               std::unique_ptr<StepDevice> device) {
  return std::make_unique<StepBackend>(ctx, std::move(device));
}

}  // namespace rnnx::core
