// `rnnx run`'s case runner (case_runner.hpp): case.json and .npy files (weights named as
// PyTorch's state_dict, or ONNX's W/R/B/P), forward and, when dy.npy is present, backward.
// Every file is checked (dtype, shape) before the plan runs.
#include "case_runner.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "rnnx/rnnx.hpp"

namespace rnnx::tool {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

// Inputs the case may hold besides weights, and the outputs `run` writes (an OUT_DIR equal
// to CASE_DIR then still reads as a valid case).
const std::vector<std::string> kInputFiles = {"x", "lengths", "h0", "c0", "dy", "dhy", "dcy"};
// ONNX's weight tensors, an alternative to PyTorch-named files for one-layer cases.
const std::vector<std::string> kOnnxWeightFiles = {"W", "R", "B", "P"};
const std::vector<std::string> kOutputFiles = {"y", "hy", "cy", "dx", "dh0", "dc0"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool looks_like_weight(const std::string& stem) {
  static const std::regex pattern("((weight|bias)_(ih|hh|hr)|weight_peephole)_l[0-9]+(_reverse)?");
  return std::regex_match(stem, pattern);
}

// The .npy type of the outputs: float64 for float64 cases, else float32, which holds every
// bfloat16 and float16 value exactly (NumPy has no bfloat16).
NpyType npy_type(DataType dtype) {
  return dtype == DataType::f64 ? NpyType::f8 : NpyType::f4;
}

// A plan's buffer of the case dtype as the bytes of the output .npy (npy_type).
Bytes to_npy_bytes(const Bytes& data, DataType dtype) {
  if (dtype == DataType::f32 || dtype == DataType::f64) return data;
  const int64_t n = static_cast<int64_t>(data.size()) / dtype_size(dtype);
  std::vector<double> v(static_cast<size_t>(n));
  read_values(dtype, data.data(), v.data(), n);
  Bytes out(v.size() * sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) {
    const auto f = static_cast<float>(v[i]);  // exact
    std::memcpy(out.data() + i * sizeof(float), &f, sizeof f);
  }
  return out;
}

// The .npy files of the case directory by name without extension, classified: inputs,
// weights (checked against the layout later) and outputs of an earlier run are kept or
// passed over; anything else is refused unless "ignore" lists it, so that a misspelt
// input (h_0.npy) cannot be silently replaced by zeros.
std::map<std::string, fs::path> list_case_files(const CaseSource& source, const CaseSpec& spec) {
  const fs::path dir(source.dir);
  std::map<std::string, fs::path> files;
  for (const std::string& name : source.npy_names()) {
    const fs::path p = dir / name;
    const std::string stem = p.stem().string();
    if (spec.ignores(name) || spec.ignores(stem)) continue;
    if (contains(kInputFiles, stem) || contains(kOnnxWeightFiles, stem) ||
        looks_like_weight(stem)) {
      files[stem] = p;
    } else if (!contains(kOutputFiles, stem) && stem.rfind("grad_", 0) != 0) {
      invalid((dir / name).string() +
              ": unknown file: not an input (x, lengths, h0, c0, dy, dhy, dcy) nor a weight "
              "name of PyTorch's state_dict; list \"" +
              name + "\" in \"ignore\" to allow it");
    }
  }
  return files;
}

// A floating-point array converted to the case dtype (float32 and float64 both accepted;
// narrower types round to nearest even).
Bytes to_case_dtype(const NpyArray& a, DataType dtype) {
  if (!a.is_float()) {
    invalid(a.path + ": dtype is " + npy_type_name(a.type) +
            ", expected float32 or float64 (converted to the case dtype " + to_string(dtype) + ")");
  }
  const std::vector<double> v = a.to_double();
  Bytes out(v.size() * dtype_size(dtype));
  write_values(dtype, v.data(), out.data(), static_cast<int64_t>(v.size()));
  return out;
}

void check_shape(const NpyArray& a, const std::vector<int64_t>& expected,
                 const std::string& meaning) {
  if (a.shape != expected) {
    invalid(a.path + ": shape " + shape_string(a.shape) + " does not match " + meaning + " = " +
            shape_string(expected));
  }
}

class CaseRunner {
 public:
  CaseRunner(const CaseSource& source, const std::string& backend, int threads,
             const std::optional<std::string>& out_dir)
      : source_(source),
        dir_(source.dir),
        backend_(backend),
        threads_(threads),
        out_dir_(out_dir) {}

  CaseRunResult run() {
    spec_ = source_.read_case((dir_ / "case.json").string());
    files_ = list_case_files(source_, spec_);
    const Config& c = spec_.config;
    const bool lstm = c.cell == CellType::lstm;
    const int64_t L = c.num_layers, D = c.num_directions(), P = c.output_size(), H = c.hidden_size;

    // x fixes T and B; every other shape follows from them and the config.
    const NpyArray x = load_required("x");
    if (x.shape.size() != 3) {
      invalid(x.path + ": shape " + shape_string(x.shape) + " must have 3 dimensions, " +
              layout_name("I"));
    }
    const int64_t T = spec_.batch_first ? x.shape[1] : x.shape[0];
    const int64_t B = spec_.batch_first ? x.shape[0] : x.shape[1];
    if (x.shape[2] != c.input_size) {
      invalid(x.path + ": dim 2 (= " + std::to_string(x.shape[2]) +
              ") must equal input_size (= " + std::to_string(c.input_size) + ")");
    }
    // B = 0 (an empty batch) runs as a no-op and writes empty outputs, as torch.nn.LSTM.
    if (T < 1) {
      invalid(x.path + ": shape " + shape_string(x.shape) + " has T (= " + std::to_string(T) +
              ") below 1, " + layout_name("I"));
    }
    const std::vector<int64_t> lengths = load_lengths(T, B);
    if (!lstm) {
      for (const char* name : {"c0", "dcy"}) {
        if (files_.count(name)) {
          invalid(files_[name].string() + ": given but cell is " + to_string(c.cell) +
                  "; only lstm has a cell state");
        }
      }
    }

    // math int8 runs inference only (docs/int8.md): an inference plan, unless the case asks
    // for training or a backward, which the plan then refuses by name.
    PlanOptions options{backend_from_string(backend_), threads_};
    if (c.math == MathMode::int8 && !spec_.training && files_.count("dy") == 0) {
      options.purpose = PlanPurpose::inference;
    }
    Plan plan(c, SequenceShape::padded(T, B, lengths, spec_.batch_first), options);

    const std::vector<int64_t> h_shape = {L * D, B, P}, c_shape = {L * D, B, H};
    const std::vector<int64_t> y_shape =
        spec_.batch_first ? std::vector<int64_t>{B, T, D * P} : std::vector<int64_t>{T, B, D * P};
    const Bytes x_buf = to_case_dtype(x, c.dtype);
    const std::optional<Bytes> h0 = load_optional("h0", h_shape, "[L*D, B, P']");
    const std::optional<Bytes> c0 = load_optional("c0", c_shape, "[L*D, B, H]");
    const std::optional<Bytes> dy = load_optional("dy", y_shape, layout_name("D*P'"));
    const std::optional<Bytes> dhy = load_optional("dhy", h_shape, "[L*D, B, P']");
    const std::optional<Bytes> dcy = load_optional("dcy", c_shape, "[L*D, B, H]");
    const Bytes weights = load_weights(plan.weight_layout());
    const bool backward = dy.has_value();
    if (!backward && (dhy || dcy)) {
      invalid((dir_ / (dhy ? "dhy.npy" : "dcy.npy")).string() +
              ": given without dy.npy; backward runs only when dy.npy is present");
    }

    const int64_t es = dtype_size(c.dtype);
    Bytes y(plan.y_numel() * es), hy(plan.h_numel() * es), cy(plan.c_numel() * es);
    // Backward needs the reserve of a training forward, whatever "training" says.
    const bool training = backward || spec_.training;
    Bytes reserve(training ? plan.reserve_size() : 0);
    ForwardArgs f;
    f.x = x_buf.data();
    f.h0 = h0 ? h0->data() : nullptr;
    f.c0 = c0 ? c0->data() : nullptr;
    f.weights = weights.data();
    f.y = y.data();
    f.hy = hy.data();
    f.cy = lstm ? cy.data() : nullptr;
    f.training = training;
    f.dropout_counter = spec_.dropout_counter;
    f.reserve = training ? reserve.data() : nullptr;
    f.reserve_size = reserve.size();
    plan.forward(f);

    Bytes dx, dh0, dc0, dw;
    if (backward) {
      dx.resize(plan.x_numel() * es);
      dh0.resize(plan.h_numel() * es);
      dc0.resize(plan.c_numel() * es);
      dw.resize(plan.weights_numel() * es);
      BackwardArgs b;
      b.x = x_buf.data();
      b.h0 = f.h0;
      b.c0 = f.c0;
      b.weights = weights.data();
      b.dy = dy->data();
      b.dhy = dhy ? dhy->data() : nullptr;
      b.dcy = dcy ? dcy->data() : nullptr;
      b.dx = dx.data();
      b.dh0 = dh0.data();
      b.dc0 = lstm ? dc0.data() : nullptr;
      b.dweights = dw.data();
      b.weight_grad_mode = GradMode::overwrite;
      b.reserve = reserve.data();
      b.reserve_size = reserve.size();
      plan.backward(b);
    }

    CaseRunResult result;
    result.problem_name = plan.problem_name();
    result.impl_name = plan.impl_name();
    result.training = training;
    result.backward = backward;
    if (!out_dir_) return result;
    const fs::path out(*out_dir_);
    std::error_code ec;
    fs::create_directories(out, ec);
    if (!fs::is_directory(out)) {
      throw Error(Status::internal, *out_dir_ + ": cannot create the output directory" +
                                        (ec ? ": " + ec.message() : std::string()));
    }
    const NpyType type = npy_type(c.dtype);
    int written = 0;
    auto write = [&](const std::string& name, const std::vector<int64_t>& shape,
                     const Bytes& data) {
      write_npy((out / (name + ".npy")).string(), type, shape, to_npy_bytes(data, c.dtype).data());
      ++written;
    };
    write("y", y_shape, y);
    write("hy", h_shape, hy);
    if (lstm) write("cy", c_shape, cy);
    if (backward) {
      write("dx", x.shape, dx);
      write("dh0", h_shape, dh0);
      if (lstm) write("dc0", c_shape, dc0);
      for (const WeightParam& p : plan.weight_layout().params()) {
        const auto first = dw.begin() + p.offset * es;
        const Bytes grad(first, first + p.numel() * es);
        write_npy((out / ("grad_" + p.name + ".npy")).string(), type, param_shape(p),
                  to_npy_bytes(grad, c.dtype).data());
        ++written;
      }
    }
    {  // The accuracy rnnx promises for these results (rnnx::error_bound), for checkers.
      const bool bf16 =
          c.dtype == DataType::f32 && resolved_math_mode(c) == MathMode::allow_conversion;
      const int64_t T = plan.max_seq_len(), B = plan.batch();
      nlohmann::json j;
      j["forward"] = error_bound(c, T, B, false, bf16);
      if (backward) j["backward"] = error_bound(c, T, B, true, bf16);
      j["bf16_products"] = bf16;
      // 16-bit data and bf16 products are held to the bound in norm (rnnx::norm_error_bound).
      if (bf16 || dtype_size(c.dtype) == 2) {
        j["norm_forward"] = norm_error_bound(c, T, B, false);
        if (backward) j["norm_backward"] = norm_error_bound(c, T, B, true);
      }
      std::ofstream f(out / "error_bound.json");
      f << j.dump(2) << "\n";
      if (!f) throw Error(Status::internal, (out / "error_bound.json").string() + ": cannot write");
      ++written;
    }
    result.written = written;
    return result;
  }

 private:
  std::string layout_name(const std::string& last) const {
    return spec_.batch_first ? "[B, T, " + last + "] (batch_first)" : "[T, B, " + last + "]";
  }

  static std::vector<int64_t> param_shape(const WeightParam& p) {
    return p.is_vector() ? std::vector<int64_t>{p.rows} : std::vector<int64_t>{p.rows, p.cols};
  }

  NpyArray load_required(const std::string& name) {
    auto it = files_.find(name);
    if (it == files_.end()) invalid((dir_ / (name + ".npy")).string() + ": missing (required)");
    return source_.read_npy(it->second.string());
  }

  std::optional<Bytes> load_optional(const std::string& name, const std::vector<int64_t>& shape,
                                     const std::string& meaning) {
    auto it = files_.find(name);
    if (it == files_.end()) return std::nullopt;
    const NpyArray a = source_.read_npy(it->second.string());
    check_shape(a, shape, meaning);
    return to_case_dtype(a, spec_.config.dtype);
  }

  std::vector<int64_t> load_lengths(int64_t T, int64_t B) {
    auto it = files_.find("lengths");
    if (it == files_.end()) return {};
    const NpyArray a = source_.read_npy(it->second.string());
    if (a.is_float()) {
      invalid(a.path + ": dtype is " + npy_type_name(a.type) + ", expected int32 or int64");
    }
    check_shape(a, {B}, "[B]");
    std::vector<int64_t> lengths = a.to_int64();
    for (int64_t b = 0; b < B; ++b) {
      if (lengths[b] < 0 || lengths[b] > T) {
        invalid(a.path + ": lengths[" + std::to_string(b) + "] (= " + std::to_string(lengths[b]) +
                ") must be in [0, T (= " + std::to_string(T) + ")]");
      }
    }
    return lengths;
  }

  // Every weight of the layout from its own file, into one flat buffer; weight-named files
  // that the layout does not have are refused (a wrong num_layers or bias would hide there).
  Bytes load_weights(const WeightLayout& layout) {
    const Config& c = spec_.config;
    const std::string summary =
        std::string("cell ") + to_string(c.cell) + ", num_layers " + std::to_string(c.num_layers) +
        ", bidirectional " + (c.bidirectional ? "true" : "false") + ", bias " +
        (c.bias ? "true" : "false") + ", proj_size " + std::to_string(c.proj_size);
    for (const auto& [stem, path] : files_) {
      if (looks_like_weight(stem) && layout.try_find(stem) == nullptr) {
        invalid(path.string() + ": not a weight of this case (" + summary + ")");
      }
    }
    const int64_t es = dtype_size(c.dtype);
    Bytes flat(layout.numel() * es);
    if (files_.count("W") || files_.count("R")) return load_onnx_weights(layout, std::move(flat));
    for (const WeightParam& p : layout.params()) {
      auto it = files_.find(p.name);
      if (it == files_.end()) {
        invalid((dir_ / (p.name + ".npy")).string() + ": missing; the case (" + summary +
                ") needs it with shape " + shape_string(param_shape(p)));
      }
      const NpyArray a = source_.read_npy(it->second.string());
      check_shape(a, param_shape(p), p.name);
      const Bytes v = to_case_dtype(a, c.dtype);
      std::memcpy(flat.data() + p.offset * es, v.data(), v.size());
    }
    return flat;
  }

  // W.npy [D, G*H, I], R.npy [D, G*H, H], optional B.npy [D, 2*G*H] and P.npy [D, 3*H], in
  // ONNX's gate orders, converted by rnnx::import_onnx_layer.
  Bytes load_onnx_weights(const WeightLayout& layout, Bytes flat) {
    const Config& c = spec_.config;
    for (const auto& [stem, path] : files_) {
      if (looks_like_weight(stem)) {
        invalid(path.string() +
                ": a case gives its weights either as ONNX's W/R/B/P or by "
                "PyTorch's names, not both");
      }
    }
    if (c.num_layers != 1) {
      invalid((dir_ / "W.npy").string() + ": ONNX weights describe one layer, but num_layers = " +
              std::to_string(c.num_layers));
    }
    const int64_t D = c.num_directions(), GH = gates_per_cell(c.cell) * c.hidden_size;
    auto load = [&](const std::string& name, std::vector<int64_t> shape) -> std::vector<double> {
      auto it = files_.find(name);
      if (it == files_.end()) return {};
      const NpyArray a = source_.read_npy(it->second.string());
      check_shape(a, shape, name + " of ONNX");
      if (!a.is_float()) invalid(a.path + ": dtype must be float32 or float64");
      return a.to_double();
    };
    const std::vector<double> W = load("W", {D, GH, c.input_size});
    const std::vector<double> R = load("R", {D, GH, c.hidden_size});
    const std::vector<double> B = load("B", {D, 2 * GH});
    const std::vector<double> P = load("P", {D, 3 * c.hidden_size});
    if (W.empty() || R.empty())
      invalid((dir_ / "W.npy").string() + ": ONNX weights need both W.npy and R.npy");
    import_onnx_layer(c, layout, 0, W.data(), R.data(), B.empty() ? nullptr : B.data(),
                      P.empty() ? nullptr : P.data(), flat.data());
    return flat;
  }

  const CaseSource& source_;
  fs::path dir_;
  std::string backend_;
  int threads_;
  std::optional<std::string> out_dir_;
  CaseSpec spec_;
  std::map<std::string, fs::path> files_;
};

}  // namespace

CaseSource case_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) invalid(dir + ": not a directory");
  CaseSource s;
  s.dir = dir;
  s.read_case = read_case_file;
  s.npy_names = [dir] {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".npy" && entry.is_regular_file())
        names.push_back(entry.path().filename().string());
    }
    return names;
  };
  s.read_npy = read_npy;
  return s;
}

CaseRunResult run_case(const CaseSource& source, const std::string& backend, int threads,
                       const std::optional<std::string>& out_dir) {
  return CaseRunner(source, backend, threads, out_dir).run();
}

}  // namespace rnnx::tool
