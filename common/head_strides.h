// head_strides.h: where the rows of a [B, H, N, d] attention tensor lie when it is a view, not a contiguous
// tensor. A model hands attention views: its q, k and v are slices of one [B, N, 3·H·d] projection, and it merges
// the heads of o by a transpose and a reshape, which is free only when o is [B, N, H, d] in memory (as SDPA returns
// it). Element (b, h, i, c) is at b·batch + h·head + i·row + c: the columns are contiguous, the other three strides
// are whatever the view has. The bindings read the strides off the tensors (common/attention_binding.h); the
// kernels of days 12 and 20 take them as arguments instead of assuming bh · N · d.
//
// Plain C++ (no CUDA or torch headers), so both the bindings and the kernels' .cu files include it.
#pragma once

#ifdef __CUDACC__
#define COURSE_HD __host__ __device__ __forceinline__
#else
#define COURSE_HD inline
#endif

namespace course {

struct HeadStrides {
  long long batch, head, row;  // in elements

  // Offset of the first row of head bh = b · heads + h.
  COURSE_HD long long start(int bh, int heads) const { return (bh / heads) * batch + (bh % heads) * head; }
  // Every row starts on a 16-byte boundary when the tensor does (what cp.async's 16-byte copies and TMA need):
  // all three strides are multiples of 16 bytes.
  COURSE_HD bool rows16(int element_bytes) const {
    return (batch * element_bytes) % 16 == 0 && (head * element_bytes) % 16 == 0 && (row * element_bytes) % 16 == 0;
  }
};

// One set per tensor of the op: the forward reads q, k, v and writes o; the backward reads all five (dout is the
// incoming gradient) and writes dq, dk, dv contiguous.
struct AttentionStrides {
  HeadStrides q, k, v, o, dout;

  COURSE_HD bool rows16(int element_bytes) const {
    return q.rows16(element_bytes) && k.rows16(element_bytes) && v.rows16(element_bytes) &&
           o.rows16(element_bytes) && dout.rows16(element_bytes);
  }
};

}  // namespace course
