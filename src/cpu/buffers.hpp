// The cpu backend's reserve and workspaces, each carved by one function that serves both the
// size query (base == nullptr) and execution, so sizes and pointers cannot disagree.
// Token-indexed buffers are sized by the real token count N, never by B * T.
#pragma once

#include <cstdint>

#include "core/backend.hpp"
#include "cpu/plan_spec.hpp"

namespace rnnx::cpu {

// One direction's part of a layer's reserve; absent parts are null.
template <typename T>
struct ReserveDir {
  T* gates = nullptr;            // [N, G*H] activated gates (LSTM, GRU); with extended_cell the
                                 // gate pre-activations after the gate clip (also RNN)
  uint8_t* gate_pass = nullptr;  // [N, G*H] with gate_clip: gradient passes the gate clip
  T* c = nullptr;                // [N, H] LSTM c_t after clipping
  uint8_t* c_pass = nullptr;     // [N, H] LSTM with cell clip: gradient passes the clip
  T* h_full = nullptr;           // [N, H] LSTMP o * tanh(c), the projection's input
  uint8_t* r_pass = nullptr;     // [N, P'] LSTMP with proj clip
  T* hn = nullptr;               // [N, H] GRU: W_hn h + b_hn (linear before reset) or r * h
};

template <typename T>
struct ReserveLayer {
  T* y = nullptr;          // [N, D*P'] the layer's output as computed: the recurrent states
  T* y_dropped = nullptr;  // [N, D*P'] after dropout, the next layer's input (when dropout)
  ReserveDir<T> dir[2];
};

// Carves layer l's block; the backend records each block's offset at plan time.
template <typename T>
ReserveLayer<T> carve_reserve_layer(const PlanSpec& p, Carver& carver, int64_t l);
// Layer l's block inside the reserve at `base`, from the recorded offsets.
template <typename T>
ReserveLayer<T> reserve_layer(const PlanSpec& p, const void* base, int64_t l);

// What one direction's time loop uses. When the directions run concurrently
// (PlanSpec::concurrent_dirs) each has its own; otherwise dir[1] is dir[0].
template <typename T>
struct ForwardDirBuffers {
  T* gx = nullptr;       // [N - split, G*H] inference input projection in bulk (LSTM, GRU)
  T* gx_step = nullptr;  // [B, G*H] inference input projection of one step in the loop
  T* h_state = nullptr;  // [B, P']
  T* c_state = nullptr;  // [B, H]
  T* hg = nullptr;       // [B, G*H] recurrent projection of one step
  T* scratch = nullptr;  // [B, H] inference LSTMP h_full or original-GRU r * h of one step
  T* bias = nullptr;     // [G*H + H] combined biases of one direction, then b_hn
  // Packed engine only (else null): W_hh packed (original GRU: its r,z rows, then its n
  // rows), W_hr packed (LSTMP), W_ih packed (input projection in the loop), and the packed
  // rows of one step's left operand.
  T* w_pack = nullptr;
  T* wi_pack = nullptr;
  T* wr_pack = nullptr;
  T* a_pack = nullptr;
  // Team loops (PlanSpec::team_loops): the packed state and input of a step, double buffered.
  T* ah_pack[2] = {};
  T* ax_pack[2] = {};
  // A network's packed copy of the weights ([L * D] blocks, forward_kept_block_floats each,
  // packed_weights.hpp), bound as they are instead of w_pack, wi_pack and wr_pack; or null.
  T* const* kept = nullptr;
};

template <typename T>
struct ForwardBuffers {
  T* x = nullptr;             // [N, I] gathered input (not for packed input, which is used as is)
  T* y[2] = {};               // [N, D*P'] inference layer outputs, ping-pong
  T* gemm_scratch = nullptr;  // packed engine: packed blocks of the bulk input projection
  ForwardDirBuffers<T> dir[2];
};

template <typename T>
Carver carve_forward(const PlanSpec& p, bool training, void* base, ForwardBuffers<T>* out);

template <typename T>
struct BackwardDirBuffers {
  T* dg = nullptr;        // [N, G*H] input-side pre-activation gradients of one direction
  T* dgh = nullptr;       // [N, 3H] GRU linear before reset: hidden-side gradients
  T* h_prev = nullptr;    // [N, P'] previous state of every token of one direction
  T* dr = nullptr;        // [N, P'] LSTMP: gradient of r before the clip
  T* dh_state = nullptr;  // [B, P']
  T* dc_state = nullptr;  // [B, H]
  T* h0 = nullptr;        // [B, P'] sorted initial state of one layer and direction
  T* c0 = nullptr;        // [B, H]
  T* scratch = nullptr;   // [B, H] LSTMP dh_full or original-GRU d(r*h) of one step
  // Packed engine only: W_hh packed as the right operand of dG W_hh (original GRU: its r,z
  // rows, then its n rows), W_hr packed (LSTMP), packed rows of one step's left operand.
  T* w_pack = nullptr;
  T* wr_pack = nullptr;
  T* a_pack = nullptr;
  T* ag_pack[2] = {};  // team loops: the packed gradients of a step, double buffered
};

template <typename T>
struct BackwardBuffers {
  T* x = nullptr;             // [N, I] gathered input (not for packed input)
  T* dy[2] = {};              // [N, D*P'] output gradients of the layers, ping-pong
  T* dx = nullptr;            // [N, I] layer-0 input gradient (not for packed: written in place)
  T* colsum = nullptr;        // [G*H] bias gradient of one direction before it is stored
  T* gemm_scratch = nullptr;  // packed engine: packed blocks of the all-token products
  BackwardDirBuffers<T> dir[2];
};

template <typename T>
Carver carve_backward(const PlanSpec& p, void* base, BackwardBuffers<T>* out);

// The byte sizes of a plan's buffers: records where each layer's reserve block starts in
// p.reserve_layer (the same carving then serves execution) and returns the sizes.
struct BufferSizes {
  size_t reserve = 0;
  size_t forward[2] = {0, 0};  // [inference, training]
  size_t backward = 0;
  // Each the larger of the two.
  void widen(const BufferSizes& o);
};
template <typename T>
BufferSizes lay_out_buffers(PlanSpec& p);

// Floats of the packed weights of one direction (packed engine): the recurrent product of
// the forward (W_hh^T, by parts for the original GRU) and of the backward (W_hh).
int64_t forward_recurrent_pack_floats(const PlanSpec& p);
// Floats of a network's kept copy of layer l's forward weights of one direction: W_hh^T as
// forward_recurrent_pack_floats, then W_hr^T (LSTMP), then W_ih^T (packed_weights.hpp).
int64_t forward_kept_block_floats(const PlanSpec& p, int64_t l);
int64_t backward_recurrent_pack_floats(const PlanSpec& p);

}  // namespace rnnx::cpu
