// cuDNN's weight space and batch as plain values (cudnn_layout.hpp).
#include "cuda/rules/cudnn_layout.hpp"

#include <algorithm>
#include <limits>

#include "core/schedule.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cuda {

std::string cudnn_version_refusal(DataType dtype, size_t version) {
  constexpr size_t kBf16Rnn = 91300;
  const std::string loaded = std::to_string(version / 10000) + "." +
                             std::to_string(version / 100 % 100) + "." +
                             std::to_string(version % 100);
  if (version / 10000 != 9) return "rnnx needs cuDNN 9, the loaded library is " + loaded;
  if (dtype != DataType::bf16 || version >= kBf16Rnn) return "";
  return "bfloat16 RNNs need cuDNN 9.13 or later, this is " + loaded;
}

std::string cudnn_math(const Config& c, MathMode math, bool fp16_conversion) {
  switch (c.dtype) {
    case DataType::f64:
      return "double";
    case DataType::f16:
      return "tensor-op";
    case DataType::bf16:
      return "default";
    case DataType::f32:
      break;
  }
  if (math != MathMode::allow_conversion) return "fma";
  return fp16_conversion ? "tensor-op-fp16-conversion" : "tf32";
}

std::string cudnn_refusal(const Config& c) {
  if (c.cell == CellType::gru && !c.gru_linear_before_reset)
    return "the original GRU (gru_linear_before_reset = false)";
  if (c.proj_clip.enabled) return "proj_clip";
  // cuDNN documents neither its NaN rule for NOT_PROPAGATE_NAN (the contract's `replace`
  // makes NaN the upper bound) nor what its backward does through the clip: until a GPU run
  // shows both equal to the contract, the own kernels, which implement it, run clipping.
  if (c.cell_clip.enabled) return "cell_clip";
  if (c.peephole) return "peephole";
  if (c.gate_clip > 0) return "gate_clip";
  if (c.input_forget) return "input_forget";
  if (c.reverse) return "reverse";
  if (!c.activations.empty()) {
    // Non-default activations: the defaults spelled out are fine.
    const Config plain = [&] {
      Config p = c;
      p.activations.clear();
      return p;
    }();
    for (int64_t d = 0; d < c.num_directions(); ++d) {
      const auto given = direction_activations(c, d);
      const auto deflt = direction_activations(plain, d);
      for (size_t k = 0; k < given.size(); ++k) {
        if (given[k].kind != deflt[k].kind || given[k].alpha != deflt[k].alpha ||
            given[k].beta != deflt[k].beta)
          return "activations other than the cell's defaults";
      }
    }
  }
  return "";
}

int cudnn_linear_layers(const Config& c) {
  switch (c.cell) {
    case CellType::lstm:
      return c.proj_size > 0 ? 9 : 8;
    case CellType::gru:
      return 6;
    default:
      return 2;
  }
}

bool cudnn_has_bias(const Config& c, int id) {
  const bool projection = c.cell == CellType::lstm && id == 8;
  return c.bias && !projection;
}

namespace {

// The flat-buffer parameter and row block of cuDNN's (layer, direction, id): gates g of
// weight_ih (ids 0 .. G-1), of weight_hh (G .. 2G-1), or weight_hr (LSTM id 8).
struct FlatBlock {
  const WeightParam* param;
  int64_t row0;
  int64_t rows;
};
FlatBlock flat_block(const Config& c, const WeightLayout& layout, int64_t layer, int64_t dir,
                     int id, bool bias) {
  const int64_t G = gates_per_cell(c.cell), H = c.hidden_size;
  if (c.cell == CellType::lstm && id == 8) {
    return {layout.get(layer, dir, WeightKind::w_hr), 0, c.proj_size};
  }
  const bool recurrent = id >= G;
  const int64_t gate = recurrent ? id - G : id;
  const WeightKind kind = bias ? (recurrent ? WeightKind::b_hh : WeightKind::b_ih)
                               : (recurrent ? WeightKind::w_hh : WeightKind::w_ih);
  return {layout.get(layer, dir, kind), gate * H, H};
}

[[noreturn]] void internal(const std::string& msg) {
  throw Error(Status::internal, "cuDNN weight space: " + msg);
}

}  // namespace

std::vector<CudnnParam> cudnn_params(const Config& c) {
  const int64_t D = c.num_directions(), H = c.hidden_size, P = c.output_size();
  const int n = cudnn_linear_layers(c);
  const int64_t G = gates_per_cell(c.cell);
  std::vector<CudnnParam> out;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const int64_t in = layer == 0 ? c.input_size : D * P;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t pseudo = layer * D + d;
      for (int id = 0; id < n; ++id) {
        CudnnParam m{pseudo, id, false, -1, H, id < G ? in : P};
        if (c.cell == CellType::lstm && id == 8) m.rows = P, m.cols = H;
        out.push_back(m);
      }
      for (int id = 0; id < n; ++id) {
        if (cudnn_has_bias(c, id)) out.push_back({pseudo, id, true, -1, H, 1});
      }
    }
  }
  return out;
}

std::vector<CudnnParam> cudnn_documented_layout(const Config& c) {
  std::vector<CudnnParam> params = cudnn_params(c);
  int64_t next = 0;
  for (CudnnParam& p : params) {  // already in pseudo-layer, matrices-then-biases order
    p.offset = next;
    next += p.numel();
  }
  return params;
}

std::vector<WeightSegment> cudnn_weight_segments(const Config& c, const WeightLayout& layout,
                                                 const std::vector<CudnnParam>& params) {
  const int64_t D = c.num_directions();
  std::vector<WeightSegment> segs;
  for (const CudnnParam& p : params) {
    const FlatBlock b = flat_block(c, layout, p.pseudo_layer / D, p.pseudo_layer % D, p.id, p.bias);
    const int64_t cols = p.bias ? 1 : b.param ? b.param->cols : 0;
    if (b.param == nullptr || p.rows != b.rows || p.cols != cols || p.offset < 0) {
      internal("pseudo-layer " + std::to_string(p.pseudo_layer) + " linear layer " +
               std::to_string(p.id) + (p.bias ? " bias" : " matrix") + " is " +
               std::to_string(p.rows) + " x " + std::to_string(p.cols) + " at offset " +
               std::to_string(p.offset) + "; rnnx expects " + std::to_string(b.rows) + " x " +
               std::to_string(cols));
    }
    segs.push_back({b.param->offset + b.row0 * cols, p.offset, p.numel()});
  }
  // Overlaps would make the conversion depend on order: refuse them.
  std::vector<WeightSegment> by_cudnn = segs;
  std::sort(by_cudnn.begin(), by_cudnn.end(),
            [](const WeightSegment& a, const WeightSegment& b) { return a.cudnn < b.cudnn; });
  for (size_t i = 1; i < by_cudnn.size(); ++i) {
    if (by_cudnn[i - 1].cudnn + by_cudnn[i - 1].count > by_cudnn[i].cudnn)
      internal("two parameters overlap at element " + std::to_string(by_cudnn[i].cudnn));
  }
  // Adjacent on both sides (the gates of one weight_ih, say): one copy.
  std::vector<WeightSegment> merged;
  for (const WeightSegment& s : segs) {
    if (s.count == 0) continue;
    if (!merged.empty() && merged.back().flat + merged.back().count == s.flat &&
        merged.back().cudnn + merged.back().count == s.cudnn) {
      merged.back().count += s.count;
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

template <typename T>
void apply_segments_to_cudnn(const std::vector<WeightSegment>& segs, const T* flat, T* cudnn) {
  for (const WeightSegment& s : segs) std::copy_n(flat + s.flat, s.count, cudnn + s.cudnn);
}

template <typename T>
void apply_segments_to_flat(const std::vector<WeightSegment>& segs, const T* cudnn, T* flat,
                            bool accumulate) {
  for (const WeightSegment& s : segs) {
    for (int64_t i = 0; i < s.count; ++i)
      flat[s.flat + i] = accumulate ? flat[s.flat + i] + cudnn[s.cudnn + i] : cudnn[s.cudnn + i];
  }
}

template void apply_segments_to_cudnn<float>(const std::vector<WeightSegment>&, const float*,
                                             float*);
template void apply_segments_to_cudnn<double>(const std::vector<WeightSegment>&, const double*,
                                              double*);
template void apply_segments_to_flat<float>(const std::vector<WeightSegment>&, const float*, float*,
                                            bool);
template void apply_segments_to_flat<double>(const std::vector<WeightSegment>&, const double*,
                                             double*, bool);

CudnnBatch cudnn_batch(const SequenceShape& shape, const core::Schedule& s, const Config& c) {
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  CudnnBatch b;
  b.batch = s.T_eff > 0 ? s.batch_sizes[0] : 0;
  b.max_seq_len = s.T_eff;
  b.tokens = s.tokens;
  const int64_t widest =
      std::max({c.input_size, c.num_directions() * c.output_size(), c.hidden_size});
  for (auto [value, name] : {std::pair<int64_t, const char*>{b.batch, "batch"},
                             {b.max_seq_len, "max_seq_len"},
                             {widest, "the widest row"}}) {
    if (value > kIntMax) {
      throw Error(Status::unsupported,
                  std::string("backend cuda: ") + name + " (= " + std::to_string(value) +
                      ") exceeds cuDNN's limit (" + std::to_string(kIntMax) + ")");
    }
  }
  b.lengths.assign(s.sorted_lengths.begin(), s.sorted_lengths.begin() + b.batch);
  b.states_in_order = true;
  for (int64_t i = 0; i < b.batch; ++i) b.states_in_order &= s.sorted_to_orig[i] == i;
  b.rows_in_place = rows_in_place(shape, s);
  return b;
}

}  // namespace rnnx::cuda
