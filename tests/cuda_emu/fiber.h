// Fibers for the CUDA emulator: user-level threads on one OS thread that switch only where
// told to (a GPU thread at a barrier). x86-64 uses a six-register hand-written switch (a
// few ns; ucontext's swapcontext makes a syscall per switch), other targets use ucontext.
// Under AddressSanitizer every switch is announced (__sanitizer_*_switch_fiber).
#pragma once

#include <cstddef>

namespace emu::detail {

// One fiber: a stack and, while it is suspended, where to resume it.
struct Fiber {
  void* sp = nullptr;     // saved stack pointer (x86-64) or ucontext_t* (elsewhere)
  char* stack = nullptr;  // lowest address of the usable stack (a guard page lies below)
  std::size_t size = 0;   // usable bytes
};

// Allocates the stack (mmap, with a PROT_NONE guard page below it). Throws on failure.
void fiber_allocate(Fiber& f, std::size_t bytes);
// Prepares f to run entry() from the top of its stack at its next fiber_switch_to.
void fiber_prepare(Fiber& f, void (*entry)());
// Suspends the main context and resumes f; returns when f calls fiber_switch_to_main.
void fiber_switch_to(Fiber& f);
// From inside fiber f: suspends it (resumable with fiber_switch_to) and returns to main.
// `finished` tells AddressSanitizer the fiber will not be resumed (then its fake stack is freed).
void fiber_switch_to_main(Fiber& f, bool finished);
// Marks the whole stack of f as addressable again (after abandoning a fiber mid-function).
void fiber_unpoison(Fiber& f);
// First thing a fiber's entry function must call (AddressSanitizer bookkeeping).
void fiber_started();

}  // namespace emu::detail
