// NetworkChoices: the algorithm spaces and the choices by size class of one network.
#include "cpu/network_choices.hpp"

#include "cpu/packed_gemm.hpp"

namespace rnnx::cpu {

NetworkChoices::NetworkChoices(const PlanContext& ctx) {
  for (bool team_rows : {false, true}) {
    for (bool threads : {false, true}) {
      spaces_[team_rows][threads] = algo_space(ctx, team_rows, threads);
    }
  }
}

const AlgoSpace& NetworkChoices::space(const PlanContext& ctx) const {
  return space(ctx.schedule.B, plan_threads(ctx) >= 2);
}

const AlgoSpace& NetworkChoices::space(int64_t batch, bool threads) const {
  return spaces_[batch <= kPackedChunkRows][threads];
}

template <typename T>
AlgoChoice NetworkChoices::choose(const PlanContext& ctx, const AlgoSpace& space) {
  // The first choice of a class holds for every later batch of it, whatever thread count its
  // call runs on (a team loop of one thread is a loop), as a plan's holds for all its calls:
  // a backward then runs the algorithm its forward ran.
  SizeClass size = size_class(ctx);
  size.threads = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [s, choice] : choices_) {
    if (s == size) return choice;
  }
  // Under the lock: a second batch of the class waits for the first one's search.
  const AlgoChoice choice = choose_algo<T>(ctx, space);
  if (choices_.size() < kMaxClasses) choices_.emplace_back(size, choice);
  return choice;
}

template AlgoChoice NetworkChoices::choose<float>(const PlanContext&, const AlgoSpace&);
template AlgoChoice NetworkChoices::choose<double>(const PlanContext&, const AlgoSpace&);

}  // namespace rnnx::cpu
