// Bad input, as tables: each case has a name, the expected status code (invalid_argument:
// the input breaks the contract; unsupported: valid but the backend cannot) and substrings
// the message must contain (the argument and its values). Plan construction cases cover
// the config, the sequence shape and sizes that overflow; execution cases cover null and
// too-small buffers and a reserve that does not belong to the call. Execution cases also
// check that nothing was written: every output holds its sentinel afterwards.
#include <gtest/gtest.h>

#include <functional>

#include "core/backend_registry.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

constexpr int64_t k2p(int n) {
  return int64_t{1} << n;
}

struct PlanCase {
  std::string name;
  Status code;
  std::vector<std::string> message;  // substrings
  std::function<void(Config&, SequenceShape&, PlanOptions&)> mutate;
};
std::ostream& operator<<(std::ostream& os, const PlanCase& c) {
  return os << c.name;
}

std::vector<PlanCase> plan_cases() {
  using S = SequenceShape;
  const Status bad = Status::invalid_argument;
  auto shape = [](S s) { return [s](Config&, S& sh, PlanOptions&) { sh = s; }; };
  return {
      // Config.
      {"input_size_0",
       bad,
       {"input_size (= 0)"},
       [](Config& c, S&, PlanOptions&) { c.input_size = 0; }},
      {"hidden_size_minus_1",
       bad,
       {"hidden_size (= -1)"},
       [](Config& c, S&, PlanOptions&) { c.hidden_size = -1; }},
      {"num_layers_0",
       bad,
       {"num_layers (= 0)"},
       [](Config& c, S&, PlanOptions&) { c.num_layers = 0; }},
      {"proj_size_negative",
       bad,
       {"proj_size (= -1)"},
       [](Config& c, S&, PlanOptions&) { c.proj_size = -1; }},
      {"proj_size_on_gru",
       bad,
       {"proj_size (= 2)", "gru"},
       [](Config& c, S&, PlanOptions&) { c.cell = CellType::gru, c.proj_size = 2; }},
      {"proj_size_on_rnn_relu",
       bad,
       {"proj_size (= 2)", "rnn_relu"},
       [](Config& c, S&, PlanOptions&) { c.cell = CellType::rnn_relu, c.proj_size = 2; }},
      {"proj_size_equal_hidden_size",
       bad,
       {"proj_size (= 6)", "hidden_size (= 6)"},
       [](Config& c, S&, PlanOptions&) { c.proj_size = 6; }},
      {"proj_size_above_hidden_size",
       bad,
       {"proj_size (= 9)", "hidden_size (= 6)"},
       [](Config& c, S&, PlanOptions&) { c.proj_size = 9; }},
      {"cell_clip_on_gru",
       bad,
       {"cell_clip", "gru"},
       [](Config& c, S&, PlanOptions&) {
         c.cell = CellType::gru, c.cell_clip = {true, -1, 1};
       }},
      {"cell_clip_on_rnn_tanh",
       bad,
       {"cell_clip", "rnn_tanh"},
       [](Config& c, S&, PlanOptions&) {
         c.cell = CellType::rnn_tanh, c.cell_clip = {true, -1, 1};
       }},
      {"cell_clip_lo_above_hi",
       bad,
       {"cell_clip", "(= 2.5", "(= -1"},
       [](Config& c, S&, PlanOptions&) {
         c.cell_clip = {true, 2.5, -1.0};
       }},
      {"cell_clip_nan_bound",
       bad,
       {"cell_clip", "NaN"},
       [](Config& c, S&, PlanOptions&) {
         c.cell_clip = {true, kNaN, 1.0};
       }},
      {"proj_clip_nan_bound",
       bad,
       {"proj_clip", "NaN"},
       [](Config& c, S&, PlanOptions&) {
         c.proj_size = 2, c.proj_clip = {true, -1.0, kNaN};
       }},
      {"proj_clip_lo_above_hi",
       bad,
       {"proj_clip", "(= 0.5", "(= 0.25"},
       [](Config& c, S&, PlanOptions&) {
         c.proj_size = 2, c.proj_clip = {true, 0.5, 0.25};
       }},
      {"proj_clip_without_proj",
       bad,
       {"proj_clip", "proj_size"},
       [](Config& c, S&, PlanOptions&) {
         c.proj_clip = {true, -1, 1};
       }},
      {"dropout_negative",
       bad,
       {"dropout (= -0.1"},
       [](Config& c, S&, PlanOptions&) { c.dropout = -0.1; }},
      {"dropout_above_1",
       bad,
       {"dropout (= 1.5"},
       [](Config& c, S&, PlanOptions&) { c.dropout = 1.5; }},
      {"dropout_nan", bad, {"dropout"}, [](Config& c, S&, PlanOptions&) { c.dropout = kNaN; }},
      {"unknown_cell",
       bad,
       {"cell (= 7)"},
       [](Config& c, S&, PlanOptions&) { c.cell = static_cast<CellType>(7); }},
      {"unknown_dtype",
       bad,
       {"dtype (= 5)"},
       [](Config& c, S&, PlanOptions&) { c.dtype = static_cast<DataType>(5); }},
      {"unknown_nan_policy",
       bad,
       {"clip_nan (= 3)"},
       [](Config& c, S&, PlanOptions&) { c.clip_nan = static_cast<NanPolicy>(3); }},
      {"num_threads_negative",
       bad,
       {"num_threads (= -1)"},
       [](Config&, S&, PlanOptions& o) { o.num_threads = -1; }},
      // Padded shapes.
      {"T_0", bad, {"max_seq_len (= 0)"}, shape(S::padded(0, 3))},
      {"T_negative", bad, {"max_seq_len (= -2)"}, shape(S::padded(-2, 3))},
      {"B_negative", bad, {"batch (= -1)"}, shape(S::padded(5, -1))},
      {"lengths_size_not_B", bad, {"lengths", "2", "batch", "3"}, shape(S::padded(5, 3, {5, 2}))},
      {"lengths_negative", bad, {"lengths[1] (= -1)"}, shape(S::padded(5, 3, {5, -1, 4}))},
      {"lengths_above_T", bad, {"lengths[2] (= 9)", "(= 5)"}, shape(S::padded(5, 3, {5, 2, 9}))},
      {"lengths_above_T_batch_first",
       bad,
       {"lengths[0] (= 6)"},
       shape(S::padded(5, 3, {6, 2, 1}, true))},
      // Packed shapes.
      {"batch_sizes_empty", bad, {"batch_sizes"}, shape(S::packed({}))},
      {"batch_sizes_increasing",
       bad,
       {"batch_sizes[1] (= 3)", "batch_sizes[0] (= 2)"},
       shape(S::packed({2, 3, 1}))},
      {"batch_sizes_containing_0", bad, {"batch_sizes[2] (= 0)"}, shape(S::packed({3, 2, 0}))},
      {"batch_sizes_negative", bad, {"batch_sizes[0] (= -1)"}, shape(S::packed({-1}))},
      {"sorted_indices_wrong_size",
       bad,
       {"sorted_indices", "2", "(= 3)"},
       shape(S::packed({3, 2}, {0, 1}))},
      {"sorted_indices_repeated",
       bad,
       {"sorted_indices[1]", "permutation"},
       shape(S::packed({3, 2}, {0, 0, 1}))},
      {"sorted_indices_out_of_range",
       bad,
       {"sorted_indices[1] = 3"},
       shape(S::packed({3, 2}, {0, 3, 1}))},
      {"sorted_indices_negative",
       bad,
       {"sorted_indices[2] = -1"},
       shape(S::packed({3, 2}, {0, 1, -1}))},
      // Sizes that overflow int64 (or the bytes of a buffer).
      {"hidden_size_huge",
       bad,
       {"overflow"},
       [](Config& c, S&, PlanOptions&) { c.hidden_size = k2p(62); }},
      {"gates_x_hidden_x_input_overflow",
       bad,
       {"overflow"},
       [](Config& c, S&, PlanOptions&) { c.input_size = k2p(40), c.hidden_size = k2p(30); }},
      {"T_x_B_overflow", bad, {"overflow"}, shape(S::padded(k2p(40), k2p(30), {}))},
      {"T_x_B_x_I_overflow_short_lengths",
       bad,
       {"overflow"},
       [](Config& c, S& s, PlanOptions&) { c.input_size = 4, s = S::padded(k2p(62), 1, {1}); }},
      // x has 2^62 * 4 elements: the overflow must be found before anything of size T
      // (or B) is materialised.
      {"T_x_B_x_I_overflow_full_lengths",
       bad,
       {"overflow"},
       [](Config& c, S& s, PlanOptions&) { c.input_size = 4, s = S::padded(k2p(62), 1); }},
      {"B_x_I_overflow_full_lengths",
       bad,
       {"overflow"},
       [](Config& c, S& s, PlanOptions&) { c.input_size = 4, s = S::padded(1, k2p(62)); }},
      // rnn_tanh weights: H*(I + H + 2) = 2^30 * 2^31 = 2^61 elements, 2^64 bytes in double.
      {"weight_bytes_overflow",
       bad,
       {"overflow"},
       [](Config& c, S&, PlanOptions&) {
         c.cell = CellType::rnn_tanh, c.hidden_size = k2p(30), c.input_size = k2p(31) - k2p(30) - 2;
       }},
  };
}

class PlanErrors : public ::testing::TestWithParam<std::tuple<PlanCase, Backend>> {};

TEST_P(PlanErrors, Refused) {
  const auto& [pc, backend] = GetParam();
  // A valid base: LSTM 4 -> 6, T = 5, B = 3; every case breaks one thing.
  Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32);
  SequenceShape s = SequenceShape::padded(5, 3, {5, 2, 4});
  PlanOptions o = backend_options(backend);
  pc.mutate(c, s, o);
  // Validation comes before the backend: the code is the same for every backend (also
  // while the cpu backend does not exist and would say unsupported).
  expect_error([&] { Plan p(c, s, o); }, pc.code, pc.message);
}

INSTANTIATE_TEST_SUITE_P(Table, PlanErrors,
                         ::testing::Combine(::testing::ValuesIn(plan_cases()),
                                            ::testing::Values(Backend::reference, Backend::cpu)),
                         [](const ::testing::TestParamInfo<std::tuple<PlanCase, Backend>>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

TEST(Errors, BackendFromString) {
  EXPECT_EQ(backend_from_string("reference"), Backend::reference);
  EXPECT_EQ(backend_from_string("cpu"), Backend::cpu);
  EXPECT_EQ(backend_from_string("cuda"), Backend::cuda);
  expect_error([] { backend_from_string("gpu"); }, Status::invalid_argument,
               {"'gpu'", "reference, cpu, cuda"});
}

// Every name core gives is read back by its from_string (the one parser every front end
// uses); a name outside the set is refused naming the option, the value and the set.
TEST(Errors, EnumNamesRoundTrip) {
  for (CellType c : {CellType::rnn_tanh, CellType::rnn_relu, CellType::lstm, CellType::gru})
    EXPECT_EQ(cell_from_string(to_string(c)), c);
  for (DataType d : {DataType::f32, DataType::f64, DataType::bf16, DataType::f16})
    EXPECT_EQ(dtype_from_string(to_string(d)), d);
  for (NanPolicy p : {NanPolicy::propagate, NanPolicy::replace})
    EXPECT_EQ(nan_policy_from_string(to_string(p)), p);
  for (PlanPurpose p : {PlanPurpose::training, PlanPurpose::inference})
    EXPECT_EQ(plan_purpose_from_string(to_string(p)), p);
  expect_error([] { cell_from_string("lstmp"); }, Status::invalid_argument,
               {"cell 'lstmp' is not one of: rnn_tanh, rnn_relu, lstm, gru"});
  expect_error([] { dtype_from_string("float8"); }, Status::invalid_argument,
               {"dtype 'float8' is not one of: float32, float64, bfloat16, float16"});
  expect_error([] { nan_policy_from_string("ignore"); }, Status::invalid_argument,
               {"clip_nan 'ignore' is not one of: propagate, replace"});
}

// A backend this build lacks (the registry, src/core/backend_registry.cpp) is refused as
// unsupported, naming it and the backends the build has; a valid config and shape are
// checked first, as for every backend.
TEST(Errors, BackendNotInThisBuild) {
  if (core::backend_built(Backend::cuda)) GTEST_SKIP() << "this build has the cuda backend";
  Config c = make_config(CellType::gru, 4, 6, 1, false, DataType::f32);
  const SequenceShape s = SequenceShape::padded(5, 3, {5, 2, 4});
  expect_error([&] { Plan p(c, s, backend_options(Backend::cuda)); }, Status::unsupported,
               {"backend (= cuda)", "not in this build", "reference, cpu"});
  c.hidden_size = 0;
  expect_error([&] { Plan p(c, s, backend_options(Backend::cuda)); }, Status::invalid_argument,
               {"hidden_size"});
}

TEST(Errors, StatusNames) {
  EXPECT_STREQ(to_string(Status::invalid_argument), "invalid_argument");
  EXPECT_STREQ(to_string(Status::unsupported), "unsupported");
  const Error e(Status::unsupported, "m");
  EXPECT_EQ(e.code(), Status::unsupported);
  EXPECT_STREQ(e.what(), "m");
}

// The largest valid clip bounds and dropout are accepted (lo == hi, p == 1, p == 0).
TEST(Errors, BoundaryValuesAreAccepted) {
  Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32, 5);
  c.cell_clip = {true, 0.5, 0.5};
  c.proj_clip = {true, -0.0, 0.0};
  c.dropout = 1.0;
  EXPECT_NO_THROW(Plan(c, SequenceShape::padded(1, 1, {0}), backend_options(Backend::reference)));
  EXPECT_NO_THROW(Plan(c, SequenceShape::packed({1}), backend_options(Backend::reference)));
}

// ---------------------------------------------------------------------------------------
// Execution.

constexpr double kSentinel = 12345.0;

// A valid plan, its inputs, sentinel-filled outputs and valid forward/backward arguments;
// a case breaks one argument.
struct Exec {
  Config c;
  std::unique_ptr<Plan> plan;
  Tensors in;
  Buf y, hy, cy, dx, dh0, dc0, dw;
  Bytes reserve{0};
  ForwardArgs f;
  BackwardArgs b;
  std::vector<std::unique_ptr<Plan>> keep;  // other plans a case builds
  std::vector<std::unique_ptr<Bytes>> bytes;

  Exec(CellType cell, Backend backend) {
    c = make_config(cell, 4, 6, 2, true, DataType::f32);
    const std::vector<int64_t> lengths = {5, 2, 4};
    plan =
        std::make_unique<Plan>(c, SequenceShape::padded(5, 3, lengths), backend_options(backend));
    in = make_tensors(*plan, make_data(c, lengths, 51));
    const bool lstm = is_lstm(c);
    y = Buf(c.dtype, plan->y_numel(), kSentinel);
    hy = Buf(c.dtype, plan->h_numel(), kSentinel);
    if (lstm) cy = Buf(c.dtype, plan->c_numel(), kSentinel);
    dx = Buf(c.dtype, plan->x_numel(), kSentinel);
    dh0 = Buf(c.dtype, plan->h_numel(), kSentinel);
    if (lstm) dc0 = Buf(c.dtype, plan->c_numel(), kSentinel);
    dw = Buf(c.dtype, plan->weights_numel(), kSentinel);
    reserve = Bytes(plan->reserve_size());
    f.x = in.x.data();
    f.h0 = in.h0.data();
    f.c0 = in.c0.data();
    f.weights = in.w.data();
    f.y = y.data();
    f.hy = hy.data();
    f.cy = cy.data();
    f.training = true;
    f.reserve = reserve.data();
    f.reserve_size = reserve.size;
    b.x = in.x.data();
    b.h0 = in.h0.data();
    b.c0 = in.c0.data();
    b.weights = in.w.data();
    b.dy = in.dy.data();
    b.dhy = in.dhy.data();
    b.dcy = in.dcy.data();
    b.dx = dx.data();
    b.dh0 = dh0.data();
    b.dc0 = dc0.data();
    b.dweights = dw.data();
    b.weight_grad_mode = GradMode::accumulate;
    b.reserve = reserve.data();
    b.reserve_size = reserve.size;
  }

  // Runs the valid training forward (into a separate y, so the sentinels stay).
  void valid_forward() {
    Buf y2(c.dtype, plan->y_numel());
    ForwardArgs a = f;
    a.y = y2.data();
    a.hy = a.cy = nullptr;
    plan->forward(a);
  }

  // `n` bytes of scratch, returned at `offset` bytes from a 16-byte aligned address.
  void* scratch(size_t n, size_t offset) {
    bytes.push_back(std::make_unique<Bytes>(n + offset));
    return static_cast<unsigned char*>(bytes.back()->data()) + offset;
  }

  // A training forward of another plan, whose reserve is returned.
  Bytes* foreign_reserve(const Config& oc, const SequenceShape& os) {
    keep.push_back(std::make_unique<Plan>(
        oc, os,
        backend_options(plan->impl_name() == "reference" ? Backend::reference : Backend::cpu)));
    Plan& p = *keep.back();
    const Geometry g = geometry_of(os);
    const Tensors t = make_tensors(p, make_data(oc, g.lengths, 52));
    bytes.push_back(std::make_unique<Bytes>(std::max(p.reserve_size(), plan->reserve_size())));
    Buf yy(oc.dtype, p.y_numel());
    ForwardArgs a;
    a.x = t.x.data();
    a.weights = t.w.data();
    a.y = yy.data();
    a.training = true;
    a.reserve = bytes.back()->data();
    a.reserve_size = bytes.back()->size;
    p.forward(a);
    return bytes.back().get();
  }
};

struct ExecCase {
  std::string name;
  CellType cell;
  Status code;
  std::vector<std::string> message;
  std::function<void(Exec&)> call;  // the failing call
};
std::ostream& operator<<(std::ostream& os, const ExecCase& c) {
  return os << c.name;
}

std::vector<ExecCase> exec_cases() {
  const Status bad = Status::invalid_argument;
  const CellType lstm = CellType::lstm, gru = CellType::gru;
  auto fwd = [](std::function<void(ForwardArgs&)> m) {
    return [m](Exec& e) {
      ForwardArgs a = e.f;
      m(a);
      e.plan->forward(a);
    };
  };
  auto bwd = [](std::function<void(Exec&, BackwardArgs&)> m) {
    return [m](Exec& e) {  // after the valid forward the test runs first
      BackwardArgs a = e.b;
      m(e, a);
      e.plan->backward(a);
    };
  };
  static unsigned char small_ws[8];
  return {
      {"forward_x_null", lstm, bad, {"x is null"}, fwd([](ForwardArgs& a) { a.x = nullptr; })},
      {"forward_weights_null", lstm, bad, {"weights is null"}, fwd([](ForwardArgs& a) {
         a.weights = nullptr;
       })},
      {"forward_y_null", lstm, bad, {"y is null"}, fwd([](ForwardArgs& a) { a.y = nullptr; })},
      {"forward_training_reserve_null", lstm, bad, {"reserve is null"}, fwd([](ForwardArgs& a) {
         a.reserve = nullptr;
       })},
      {"forward_training_reserve_too_small",
       lstm,
       bad,
       {"reserve_size (= 63)"},
       fwd([](ForwardArgs& a) { a.reserve_size = 63; })},
      {"forward_workspace_too_small",
       lstm,
       bad,
       {"workspace_size (= 8)", "required"},
       fwd([](ForwardArgs& a) { a.workspace = small_ws, a.workspace_size = 8; })},
      {"forward_c0_for_gru", gru, bad, {"c0", "gru"}, fwd([](ForwardArgs& a) { a.c0 = a.x; })},
      {"forward_cy_for_gru", gru, bad, {"cy", "gru"}, fwd([](ForwardArgs& a) { a.cy = a.y; })},
      {"backward_x_null", lstm, bad, {"x is null"}, bwd([](Exec&, BackwardArgs& a) {
         a.x = nullptr;
       })},
      {"backward_weights_null", lstm, bad, {"weights is null"}, bwd([](Exec&, BackwardArgs& a) {
         a.weights = nullptr;
       })},
      {"backward_without_reserve", lstm, bad, {"reserve is null"}, bwd([](Exec&, BackwardArgs& a) {
         a.reserve = nullptr, a.reserve_size = 0;
       })},
      {"backward_reserve_too_small",
       lstm,
       bad,
       {"reserve_size (= 10)"},
       bwd([](Exec&, BackwardArgs& a) { a.reserve_size = 10; })},
      {"backward_reserve_never_written",
       lstm,
       bad,
       {"reserve", "training forward"},
       bwd([](Exec& e, BackwardArgs& a) {
         e.bytes.push_back(std::make_unique<Bytes>(e.plan->reserve_size()));
         a.reserve = e.bytes.back()->data();
       })},
      {"backward_reserve_of_other_plan",
       lstm,
       bad,
       {"reserve", "plan"},
       bwd([](Exec& e, BackwardArgs& a) {
         Config oc = e.c;
         oc.hidden_size = 9;
         Bytes* r = e.foreign_reserve(oc, SequenceShape::padded(5, 3, {5, 2, 4}));
         a.reserve = r->data(), a.reserve_size = r->size;
       })},
      // Plans that differ in what their problem_name() leaves out: another order of the
      // lengths, or a cell clip (which changes what the reserve holds).
      {"backward_reserve_of_plan_with_other_lengths_order",
       lstm,
       bad,
       {"reserve", "plan"},
       bwd([](Exec& e, BackwardArgs& a) {
         Bytes* r = e.foreign_reserve(e.c, SequenceShape::padded(5, 3, {2, 5, 4}));
         a.reserve = r->data(), a.reserve_size = r->size;
       })},
      {"backward_reserve_of_plan_with_cell_clip",
       lstm,
       bad,
       {"reserve", "plan"},
       bwd([](Exec& e, BackwardArgs& a) {
         Config oc = e.c;
         oc.cell_clip = {true, -0.5, 0.5};
         Bytes* r = e.foreign_reserve(oc, SequenceShape::padded(5, 3, {5, 2, 4}));
         a.reserve = r->data(), a.reserve_size = r->size;
       })},
      // Every field of the config is in the fingerprint (the field table), padding_fill
      // too, although it changes only y (the fingerprint left it out before the table).
      {"backward_reserve_of_plan_with_other_padding_fill",
       lstm,
       bad,
       {"reserve", "plan"},
       bwd([](Exec& e, BackwardArgs& a) {
         Config oc = e.c;
         oc.padding_fill = -1.0;
         Bytes* r = e.foreign_reserve(oc, SequenceShape::padded(5, 3, {5, 2, 4}));
         a.reserve = r->data(), a.reserve_size = r->size;
       })},
      // Host backends run on the calling thread: a stream is a mistake, refused by name.
      {"forward_stream_on_host_backend",
       lstm,
       bad,
       {"forward: stream (= 4096) is set", "runs on the calling thread"},
       [](Exec& e) {
         ForwardArgs a = e.f;
         a.stream = reinterpret_cast<void*>(uintptr_t{4096});
         e.plan->forward(a);
       }},
      {"backward_stream_on_host_backend",
       lstm,
       bad,
       {"backward: stream (= 4096) is set", "runs on the calling thread"},
       bwd([](Exec&, BackwardArgs& a) { a.stream = reinterpret_cast<void*>(uintptr_t{4096}); })},
      {"backward_workspace_too_small",
       lstm,
       bad,
       {"workspace_size (= 8)", "required"},
       bwd([](Exec&, BackwardArgs& a) { a.workspace = small_ws, a.workspace_size = 8; })},
      // Misaligned buffers: tensors need their element's alignment (4 bytes for the
      // float32 fixture), workspace and reserve that of the widest element carved from
      // them (8 bytes).
      {"forward_x_misaligned",
       lstm,
       bad,
       {"x", "aligned to 4"},
       [](Exec& e) {
         ForwardArgs a = e.f;
         a.x = e.scratch(e.in.x.size() * 4 + 8, 2);
         e.plan->forward(a);
       }},
      {"forward_workspace_misaligned",
       lstm,
       bad,
       {"workspace", "aligned to 8 bytes on backend"},
       [](Exec& e) {
         ForwardArgs a = e.f;
         a.workspace = e.scratch(e.plan->forward_workspace_size(true) + 8, 4);
         a.workspace_size = e.plan->forward_workspace_size(true);
         e.plan->forward(a);
       }},
      {"forward_reserve_misaligned",
       lstm,
       bad,
       {"reserve", "aligned to 8"},
       [](Exec& e) {
         ForwardArgs a = e.f;
         a.reserve = e.scratch(e.reserve.size + 8, 4);
         e.plan->forward(a);
       }},
      {"backward_reserve_misaligned",
       lstm,
       bad,
       {"reserve", "aligned to 8"},
       bwd([](Exec& e, BackwardArgs& a) {
         void* r = e.scratch(e.reserve.size + 8, 4);
         std::memcpy(r, e.reserve.begin(), e.reserve.size);  // a valid reserve, moved
         a.reserve = r;
       })},
      {"backward_dweights_misaligned",
       lstm,
       bad,
       {"dweights", "aligned to 4"},
       bwd([](Exec& e, BackwardArgs& a) { a.dweights = e.scratch(e.dw.size() * 4 + 8, 2); })},
      {"backward_c0_for_gru", gru, bad, {"c0", "gru"}, bwd([](Exec&, BackwardArgs& a) {
         a.c0 = a.x;
       })},
      {"backward_dcy_for_gru", gru, bad, {"dcy", "gru"}, bwd([](Exec&, BackwardArgs& a) {
         a.dcy = a.x;
       })},
      {"backward_dc0_for_gru", gru, bad, {"dc0", "gru"}, bwd([](Exec& e, BackwardArgs& a) {
         a.dc0 = e.dx.data();
       })},
  };
}

class ExecErrors : public ::testing::TestWithParam<std::tuple<ExecCase, Backend>> {};

TEST_P(ExecErrors, RefusedAndNothingWritten) {
  const auto& [ec, backend] = GetParam();
  RNNX_SKIP_UNLESS_AVAILABLE(backend);
  Exec e(ec.cell, backend);
  if (ec.name.find("workspace") != std::string::npos) {
    ASSERT_GT(ec.name.find("forward") == 0 ? e.plan->forward_workspace_size(true)
                                           : e.plan->backward_workspace_size(),
              8u)
        << "test needs a workspace of more than 8 bytes";
  }
  std::vector<unsigned char> reserve_before;
  const auto snapshot = [&] {
    return std::vector<unsigned char>(e.reserve.begin(), e.reserve.end());
  };
  if (ec.name.rfind("forward", 0) == 0) reserve_before = snapshot();
  expect_error(
      [&] {
        if (ec.name.rfind("backward", 0) == 0) {
          // The valid forward writes the reserve; what the failing backward must not touch
          // is checked from there on.
          e.valid_forward();
          reserve_before = snapshot();
        }
        ec.call(e);
      },
      ec.code, ec.message);
  for (const auto& [name, buf] :
       std::vector<std::pair<const char*, const Buf*>>{{"y", &e.y},
                                                       {"hy", &e.hy},
                                                       {"cy", &e.cy},
                                                       {"dx", &e.dx},
                                                       {"dh0", &e.dh0},
                                                       {"dc0", &e.dc0},
                                                       {"dweights", &e.dw}}) {
    for (int64_t i = 0; i < buf->size(); ++i)
      ASSERT_EQ(buf->get(i), kSentinel) << name << "[" << i << "] was written by a refused call";
  }
  EXPECT_TRUE(snapshot() == reserve_before) << "the reserve was written by a refused call";
}

INSTANTIATE_TEST_SUITE_P(Table, ExecErrors,
                         ::testing::Combine(::testing::ValuesIn(exec_cases()),
                                            ::testing::Values(Backend::reference, Backend::cpu)),
                         [](const ::testing::TestParamInfo<std::tuple<ExecCase, Backend>>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace rnnx_test
