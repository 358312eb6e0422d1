// The case flags of `rnnx bench` and rnnx_onednn_peer (bench_case_cli.hpp).
#include "bench_case_cli.hpp"

namespace rnnx::bench {

void add_case_flags(CLI::App& app, CaseFlags& f) {
  BenchCase& c = f.bench_case;
  app.add_option("--cell", c.cell, "lstm, gru, gru-orig, rnn_tanh or rnn_relu")
      ->check(CLI::IsMember(cell_names()))
      ->capture_default_str();
  app.add_option("--layers", c.layers, "Number of layers")->capture_default_str();
  app.add_flag("--bidirectional", c.bidirectional, "Two directions");
  app.add_option("--input", c.input, "Input size I");
  app.add_option("--hidden", c.hidden, "Hidden size H");
  app.add_option("--proj", c.proj, "LSTM projection size (0 = none)")->capture_default_str();
  app.add_option("--batch", c.batch, "Batch size B");
  app.add_option("--seq", c.seq, "Longest sequence T (the padded time axis)");
  app.add_option("--lengths", f.lengths,
                 "full, uniform, longtail, or a file with one length per line")
      ->capture_default_str();
  app.add_option("--seed", f.seed, "Seed of the lengths, data and dropout")->capture_default_str();
}

void require_case_flags(const CLI::App& app) {
  for (const char* name : {"--input", "--hidden", "--batch", "--seq"}) {
    if (app.count(name) == 0) throw CLI::RequiredError(name);
  }
}

}  // namespace rnnx::bench
