// The search for the fastest of a plan's candidates, as both searching backends run it: the
// cpu backend over its algorithm choices (cpu/autotune.cpp, host clock) and the cuda backend
// over cuDNN's algorithms (cuda/cudnn_search.cpp, device events). What a candidate is, how
// one is timed and which candidates neighbour which stay with the backend; the rules that
// decide, on measurements of a noisy machine, which one is kept are here, once:
// * from the start (the heuristic's choice), every untried neighbour of the incumbent is
//   measured; the incumbent stays unless the other is clearly faster (kClearlyFaster) twice:
//   a second, paired measurement of both confirms the first, so that one noisy run of the
//   incumbent (the machine busy with something else for a moment) does not hand the choice
//   over; a new incumbent's neighbours are tried in turn until none wins;
// * the winner is measured once more at the end, and when two measurements of one candidate
//   differ by more than the spread limit (interference_spread()), something else took the
//   machine during the search: the times rank the machine's load, not the candidates, and
//   nothing is chosen.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

namespace rnnx::core {

// A challenger must take at most this fraction of the incumbent's time (3% faster).
constexpr double kClearlyFaster = 0.97;

// The factor by which two measurements of one candidate may differ before a search counts as
// disturbed: 1.5, or RNNX_AUTOTUNE_SPREAD (tests: a huge one keeps every choice, one below 1
// none). Throws Error(invalid_argument) naming the variable for a value that is not a
// number > 0.
double interference_spread();

// What a backend's search memory holds for a key whose search was disturbed: not a
// candidate's name, so that plans of that key take the heuristic in this process (they keep
// computing the same bits) while the next process searches again.
inline constexpr const char* kDisturbedSearch = "disturbed-search:heuristic";

// measure(c) -> std::optional<double>: seconds of one measurement of c (a backend's own
// statistic over its runs), or nothing when c cannot serve (refused, or results that differ
// from the start's); the start must measure. neighbours(c) -> std::vector<Candidate>: the
// candidates to try from c. Candidates compare with ==. Returns the fastest, or nothing when
// the search was disturbed.
template <class Candidate, class Measure, class Neighbours>
std::optional<Candidate> fastest_candidate(const Candidate& start, Measure&& measure,
                                           Neighbours&& neighbours, double spread_limit) {
  double spread = 1.0;  // the largest ratio between two measurements of one candidate
  const auto remeasure = [&](const Candidate& c, double before) {
    const std::optional<double> now = measure(c);
    if (!now) return before;
    const double lo = std::max(std::min(*now, before), 1e-12);
    spread = std::max(spread, std::max(*now, before) / lo);
    return std::min(*now, before);
  };
  const std::optional<double> first = measure(start);
  if (!first) return std::nullopt;
  Candidate best = start;
  double best_s = *first;
  std::vector<Candidate> tried = {start};
  bool improved = true;
  while (improved) {
    improved = false;
    for (const Candidate& c : neighbours(best)) {
      if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
      tried.push_back(c);
      std::optional<double> s = measure(c);
      if (!s) continue;
      if (*s < best_s * kClearlyFaster) {
        best_s = remeasure(best, best_s);
        s = remeasure(c, *s);
      }
      if (*s < best_s * kClearlyFaster) {
        best = c;
        best_s = *s;
        improved = true;
      }
    }
  }
  // The winner once more: a search whose every measurement fell in a busy spell would
  // otherwise show no spread.
  remeasure(best, best_s);
  if (spread > spread_limit) return std::nullopt;
  return best;
}

}  // namespace rnnx::core
