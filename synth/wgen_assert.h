/* wgen_assert.h — written as assert.h into the include path of a .wgen build (cuzk
 * build-witness), ahead of the system's. circom checks a circuit's assert() and its
 * own invariants with <assert.h>, whose failure aborts: in the synth stage that
 * would kill the process for one bad input. This assert throws instead
 * (cuzk_wgen_assert_fail, synth/wgen_abi.cpp) and cuzk_wgen_run turns it into an error
 * message. It ignores NDEBUG: circom's asserts are checks of the input, not debug
 * aids. No include guard, as <assert.h>: each inclusion redefines assert. */
#undef assert
#ifdef __cplusplus
[[noreturn]] void cuzk_wgen_assert_fail(const char *expr, const char *file, int line);
#define assert(e) (static_cast<bool>(e) ? void(0) : cuzk_wgen_assert_fail(#e, __FILE__, __LINE__))
#else
#include_next <assert.h>
#endif
