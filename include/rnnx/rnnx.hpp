// rnnx: fused recurrent operators (RNN-tanh/ReLU, LSTM, GRU), multi-layer,
// bidirectional, forward and backward, with variable-length sequences.
#pragma once

#include "rnnx/config.hpp"
#include "rnnx/convert.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"
#include "rnnx/error_bound.hpp"
#include "rnnx/network.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/plugin.hpp"
#include "rnnx/sequence.hpp"
#include "rnnx/version.hpp"
#include "rnnx/weights.hpp"
