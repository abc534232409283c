// Fibers of the CUDA emulator (see fiber.h).
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#define GDP_EMU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#else
#define GDP_EMU_ASAN 0
#endif

#if defined(__x86_64__)
// gdp_emu_switch(save, to): pushes the callee-saved registers, stores the stack pointer in
// *save, loads `to` and pops the registers saved there. gdp_emu_trampoline is where a new
// fiber "returns" to: it calls the entry function kept in r13.
extern "C" void gdp_emu_switch(void** save, void* to);
extern "C" void gdp_emu_trampoline();
asm(R"(
  .text
  .globl gdp_emu_switch
  .hidden gdp_emu_switch
  .type gdp_emu_switch, @function
gdp_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size gdp_emu_switch, .-gdp_emu_switch

  .globl gdp_emu_trampoline
  .hidden gdp_emu_trampoline
  .type gdp_emu_trampoline, @function
gdp_emu_trampoline:
  callq *%r13
  ud2
  .size gdp_emu_trampoline, .-gdp_emu_trampoline
)");
#else
#include <ucontext.h>
#endif

namespace emu::detail {

namespace {
#if defined(__x86_64__)
void* g_main_sp = nullptr;
#else
ucontext_t g_main_ctx;
#endif
#if GDP_EMU_ASAN
const void* g_main_bottom = nullptr;
std::size_t g_main_size = 0;
#endif
}  // namespace

void fiber_allocate(Fiber& f, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  mprotect(p, page, PROT_NONE);  // a stack overflow faults instead of corrupting memory
  f.stack = static_cast<char*>(p) + page;
  f.size = bytes;
#if !defined(__x86_64__)
  f.sp = new ucontext_t;
#endif
}

void fiber_prepare(Fiber& f, void (*entry)()) {
#if defined(__x86_64__)
  auto top = reinterpret_cast<std::uintptr_t>(f.stack + f.size) & ~std::uintptr_t{15};
  auto* s = reinterpret_cast<void**>(top - 16);  // rsp after the first `ret`: 16-byte aligned
  s[-1] = reinterpret_cast<void*>(&gdp_emu_trampoline);
  void** regs = s - 7;  // r15 r14 r13 r12 rbx rbp, popped in this order
  for (int i = 0; i < 6; ++i) regs[i] = nullptr;
  regs[2] = reinterpret_cast<void*>(entry);  // r13
  f.sp = regs;
#else
  auto* uc = static_cast<ucontext_t*>(f.sp);
  getcontext(uc);
  uc->uc_stack.ss_sp = f.stack;
  uc->uc_stack.ss_size = f.size;
  uc->uc_link = nullptr;
  makecontext(uc, entry, 0);
#endif
}

void fiber_switch_to(Fiber& f) {
#if GDP_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack, f.size);
#endif
#if defined(__x86_64__)
  gdp_emu_switch(&g_main_sp, f.sp);
#else
  swapcontext(&g_main_ctx, static_cast<ucontext_t*>(f.sp));
#endif
#if GDP_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void fiber_switch_to_main(Fiber& f, bool finished) {
#if GDP_EMU_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(finished ? nullptr : &fake, g_main_bottom, g_main_size);
#else
  (void)finished;
#endif
#if defined(__x86_64__)
  gdp_emu_switch(&f.sp, g_main_sp);
#else
  swapcontext(static_cast<ucontext_t*>(f.sp), &g_main_ctx);
#endif
#if GDP_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, &g_main_bottom, &g_main_size);
#endif
}

void fiber_unpoison(Fiber& f) {
#if GDP_EMU_ASAN
  __asan_unpoison_memory_region(f.stack, f.size);
#else
  (void)f;
#endif
}

void fiber_started() {
#if GDP_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &g_main_bottom, &g_main_size);
#endif
}

}  // namespace emu::detail
