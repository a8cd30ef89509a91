// cuda_emu.cpp - the scheduler behind cuda_emu.h: blocks one after another,
// a block's threads as fibres on this OS thread.
//
// A fibre runs until it reaches __syncthreads or a warp operation, or ends;
// the scheduler then runs the next ready fibre. A barrier opens when every
// thread of the block waits at it; a warp operation completes when every
// lane of its mask has arrived. When no fibre is ready and some have not
// ended, the launch fails with a message that names the kernel and what
// each thread waits for. Odd blocks run their threads in reverse order, so
// a read that a missing barrier leaves unordered sees the wrong value in
// one order or the other. A watchdog thread ends the process when a launch
// runs longer than GAIA_EMU_TIMEOUT seconds (default 300: an endless loop).
#include "cuda_emu.h"

#include <atomic>
#include <map>
#include <pthread.h>
#include <set>
#include <stdarg.h>
#include <stdio.h>
#include <string>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define GAIA_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAIA_EMU_ASAN 1
#endif
#endif
#ifdef GAIA_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace gaia_emu {

enum { F_READY, F_BARRIER, F_WARP, F_DONE };
static const size_t STACK_BYTES = 256 * 1024;

// The switch between fibres: on x86-64 six pushes, a stack swap and six pops
// (ucontext's swapcontext also saves the signal mask, a system call per
// switch, which made the switches most of the run time); elsewhere ucontext.
#if defined(__x86_64__) && !defined(GAIA_EMU_UCONTEXT)
extern "C" void gaia_emu_switch(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".globl gaia_emu_switch\n"
        ".type gaia_emu_switch, @function\n"
        "gaia_emu_switch:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size gaia_emu_switch, .-gaia_emu_switch\n");
struct context {
    void *sp;
};
static void context_make(context *c, char *stack, size_t bytes, void (*entry)(void)) {
    // entry is "returned to" with the stack as right after a call: the
    // address it starts at 16-aligned, a zero return address above it.
    uintptr_t top = ((uintptr_t)stack + bytes) & ~(uintptr_t)15;
    void **sp = (void **)(top - 16);
    sp[1] = nullptr;
    sp[0] = (void *)entry;
    sp -= 6; // r15, r14, r13, r12, rbx, rbp
    for (int i = 0; i < 6; i++) sp[i] = nullptr;
    c->sp = sp;
}
static void context_switch(context *from, context *to) { gaia_emu_switch(&from->sp, to->sp); }
#else
struct context {
    ucontext_t uc;
};
static void context_make(context *c, char *stack, size_t bytes, void (*entry)(void)) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = bytes;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
static void context_switch(context *from, context *to) { swapcontext(&from->uc, &to->uc); }
#endif

struct fibre {
    context ctx;
    char *mem;   // guard page, then the stack
    char *stack; // usable stack
    int state;
    uint3 idx;
    uint64_t warp_result;
};

struct warp_state {
    unsigned arrived, mask, done; // lanes waiting at the operation, its mask, lanes that have ended
    int kind, line, width;
    const char *file;
    uint64_t val[32];
    int param[32];
};

struct shared_slot {
    const void *key;
    void *ptr;
    size_t bytes;
};

// One launch at a time (launches are synchronous), on one OS thread.
static std::vector<fibre> pool;
static context sched_ctx;
static int nthreads, cur, ndone, bar_arrived, bar_line;
static const char *bar_file;
static std::vector<warp_state> warps;
static std::vector<shared_slot> shared;
static void *dyn_shared;
static bool dyn_allocated;
static size_t dyn_bytes;
static thread_fn body;
static void *body_arg;
static bool failed, stacks_dirty;
static std::string failure;
static cudaError_t last_error = cudaSuccess;
static std::map<const void *, int> max_dyn_smem;
static std::set<std::string> launched;
static std::vector<std::string> failures;
static bool quiet_faults; // faults a test provokes on purpose are not printed
#ifdef GAIA_EMU_ASAN
static const void *sched_bottom;
static size_t sched_size;
#endif

// The watchdog: when the current launch began (0: none running).
static std::atomic<long long> launch_t0(0);
static std::atomic<const char *> watch_name(nullptr);

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *watchdog(void *) {
    const char *env = getenv("GAIA_EMU_TIMEOUT");
    long long limit = (env && atoll(env) > 0 ? atoll(env) : 300) * 1000;
    for (;;) {
        long long t0 = launch_t0.load();
        if (t0 && now_ms() - t0 > limit) {
            fprintf(stderr, "cuda_emu: kernel %s ran past %lld s (an endless loop?); giving up\n", watch_name.load(),
                    limit / 1000);
            fflush(stderr);
            _exit(3);
        }
        usleep(200000);
    }
    return nullptr;
}

static std::string base_name(const char *expr) {
    std::string s;
    for (const char *p = expr; *p && *p != '<'; p++)
        if (*p != '(' && *p != ')' && *p != ' ') s += *p;
    return s;
}

// Names for messages, in static buffers: a fibre that fails is abandoned
// mid-call, so nothing its frames allocated would ever be freed.
static const char *where(const char *file, int line) {
    static char b[4][160];
    static int k;
    const char *slash = strrchr(file, '/');
    k = (k + 1) % 4;
    snprintf(b[k], sizeof b[k], "%s:%d", slash ? slash + 1 : file, line);
    return b[k];
}

static const char *thread_name(int t) {
    static char b[96];
    const uint3 &i = pool[t].idx;
    snprintf(b, sizeof b, "block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z, i.x, i.y, i.z);
    return b;
}

// Back to the scheduler (from a fibre).
static void yield_to_scheduler(void) {
#ifdef GAIA_EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, sched_bottom, sched_size);
    context_switch(&pool[cur].ctx, &sched_ctx);
    __sanitizer_finish_switch_fiber(fake, &sched_bottom, &sched_size);
#else
    context_switch(&pool[cur].ctx, &sched_ctx);
#endif
}

// Records the launch's failure and leaves this fibre for good.
static void fail(const char *fmt, ...) {
    char b[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (!failed) {
        failed = true;
        failure = b;
    }
    stacks_dirty = true;
    yield_to_scheduler(); // never resumed
    abort();
}

static void fibre_main(void) {
#ifdef GAIA_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &sched_bottom, &sched_size);
#endif
    body(body_arg);
    pool[cur].state = F_DONE;
    warps[cur >> 5].done |= 1u << (cur & 31);
    ndone++;
#ifdef GAIA_EMU_ASAN
    __sanitizer_start_switch_fiber(nullptr, sched_bottom, sched_size);
#endif
    context_switch(&pool[cur].ctx, &sched_ctx); // never resumed
    abort();
}

static void grow_pool(int n) {
    long page = sysconf(_SC_PAGESIZE);
    while ((int)pool.size() < n) {
        fibre f;
        memset(&f, 0, sizeof f);
        f.mem = (char *)mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (f.mem == MAP_FAILED) {
            fprintf(stderr, "cuda_emu: cannot map a fibre stack\n");
            abort();
        }
        mprotect(f.mem, page, PROT_NONE); // an overflow faults instead of corrupting a neighbour
        f.stack = f.mem + page;
        pool.push_back(f);
    }
}

static void switch_to(int t) {
    cur = t;
    threadIdx = pool[t].idx;
#ifdef GAIA_EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, pool[t].stack, STACK_BYTES);
    context_switch(&sched_ctx, &pool[t].ctx);
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
    context_switch(&sched_ctx, &pool[t].ctx);
#endif
}

static std::string describe_waits(void) {
    std::string s;
    int shown = 0;
    if (bar_arrived) {
        char b[256];
        snprintf(b, sizeof b, "%d of %d threads wait at __syncthreads (%s), %d have exited", bar_arrived, nthreads,
                 where(bar_file, bar_line), ndone);
        s += b;
    }
    for (size_t w = 0; w < warps.size(); w++) {
        const warp_state &ws = warps[w];
        if (!ws.arrived) continue;
        unsigned missing = ws.mask & ~ws.arrived;
        char b[256];
        snprintf(b, sizeof b,
                 "%swarp %zu: lanes 0x%08x wait at a warp operation (%s) with mask 0x%08x; lanes 0x%08x never come",
                 s.empty() ? "" : "; ", w, ws.arrived, where(ws.file, ws.line), ws.mask, missing);
        s += b;
        if (++shown == 4) break;
    }
    return s;
}

static void run_block(unsigned linear_block) {
    int t;
    bool reverse = linear_block & 1u;
    ndone = 0;
    bar_arrived = 0;
    for (size_t w = 0; w < warps.size(); w++) warps[w].arrived = warps[w].done = 0;
    if (stacks_dirty) {
#ifdef GAIA_EMU_ASAN
        // fibres abandoned by a failed launch left their frames poisoned
        for (t = 0; t < (int)pool.size(); t++) ASAN_UNPOISON_MEMORY_REGION(pool[t].stack, STACK_BYTES);
#endif
        stacks_dirty = false;
    }
    for (t = 0; t < nthreads; t++) {
        fibre &f = pool[t];
        f.idx.x = t % blockDim.x;
        f.idx.y = (t / blockDim.x) % blockDim.y;
        f.idx.z = t / (blockDim.x * blockDim.y);
        f.state = F_READY;
        context_make(&f.ctx, f.stack, STACK_BYTES, fibre_main);
    }
    while (ndone < nthreads && !failed) {
        bool ran = false;
        for (int k = 0; k < nthreads && !failed; k++) {
            t = reverse ? nthreads - 1 - k : k;
            if (pool[t].state != F_READY) continue;
            switch_to(t);
            ran = true;
        }
        if (!ran && !failed) {
            failed = true;
            stacks_dirty = true;
            char b[64];
            snprintf(b, sizeof b, "deadlock in block (%u,%u,%u): ", blockIdx.x, blockIdx.y, blockIdx.z);
            failure = b + describe_waits();
        }
    }
    for (size_t i = 0; i < shared.size(); i++) free(shared[i].ptr);
    shared.clear();
    if (dyn_allocated) free(dyn_shared);
    dyn_shared = nullptr;
    dyn_allocated = false;
}

cudaError_t get_last_error(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
void set_error(cudaError_t e) {
    if (last_error == cudaSuccess) last_error = e;
}

cudaError_t func_set_attribute(const void *fn, int attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > 227 * 1024)
        return cudaErrorInvalidValue;
    max_dyn_smem[fn] = value;
    return cudaSuccess;
}

void launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t, thread_fn fn,
            void *arg) {
    static pthread_t dog;
    static bool dog_started;
    size_t threads = (size_t)block.x * block.y * block.z;
    int smem_limit = 48 * 1024;
    std::map<const void *, int>::iterator it = max_dyn_smem.find(kernel);
    if (it != max_dyn_smem.end()) smem_limit = it->second;
    std::string base = base_name(name);
    // The launch configuration checks of the CUDA runtime.
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 || threads > 1024 ||
        block.z > 64 || grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u) {
        set_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (smem > (size_t)smem_limit) {
        set_error(cudaErrorInvalidValue);
        return;
    }
    launched.insert(base);
    if (!dog_started) {
        dog_started = pthread_create(&dog, nullptr, watchdog, nullptr) == 0;
        if (dog_started) pthread_detach(dog);
    }
    watch_name.store(name);
    launch_t0.store(now_ms());
    grow_pool((int)threads);
    warps.resize((threads + 31) / 32);
    nthreads = (int)threads;
    gridDim = grid;
    blockDim = block;
    body = fn;
    body_arg = arg;
    dyn_bytes = smem;
    failed = false;
    unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z, b;
    for (b = 0; b < nblocks && !failed; b++) {
        blockIdx.x = (unsigned)(b % grid.x);
        blockIdx.y = (unsigned)((b / grid.x) % grid.y);
        blockIdx.z = (unsigned)(b / ((unsigned long long)grid.x * grid.y));
        run_block((unsigned)b);
    }
    launch_t0.store(0);
    if (failed) {
        char b2[64];
        snprintf(b2, sizeof b2, " (grid %u,%u,%u block %u,%u,%u)", grid.x, grid.y, grid.z, block.x, block.y, block.z);
        std::string msg = "kernel " + base + b2 + ": " + failure;
        if (!quiet_faults) fprintf(stderr, "cuda_emu: %s\n", msg.c_str());
        failures.push_back(msg);
        set_error(cudaErrorLaunchFailure);
    }
}

void syncthreads(const char *file, int line) {
    if (bar_arrived == 0) {
        bar_file = file;
        bar_line = line;
    } else if (line != bar_line || strcmp(file, bar_file) != 0) {
        fail("%s waits at __syncthreads (%s) while others wait at %s", thread_name(cur), where(file, line),
             where(bar_file, bar_line));
    }
    bar_arrived++;
    if (bar_arrived == nthreads) { // everyone is here: open
        for (int t = 0; t < nthreads; t++)
            if (pool[t].state == F_BARRIER) pool[t].state = F_READY;
        bar_arrived = 0;
        return;
    }
    if (bar_arrived + ndone == nthreads)
        fail("__syncthreads (%s) is reached by %d of %d threads; the other %d have exited", where(file, line),
             bar_arrived, nthreads, ndone);
    pool[cur].state = F_BARRIER;
    yield_to_scheduler();
}

static uint64_t warp_result(const warp_state &ws, int lane, int base_lane) {
    int width = ws.width, seg = lane & ~(width - 1), src = lane, p = ws.param[lane];
    unsigned ballot = 0;
    switch (ws.kind) {
    case W_SHFL:
        src = seg + (p & (width - 1));
        break;
    case W_SHFL_UP:
        src = lane - p >= seg ? lane - p : lane;
        break;
    case W_SHFL_DOWN:
        src = lane + p < seg + width ? lane + p : lane;
        break;
    case W_SHFL_XOR:
        src = (lane ^ p) < seg + width && (lane ^ p) >= seg ? lane ^ p : lane;
        break;
    default:
        for (int l = 0; l < 32; l++)
            if (((ws.mask >> l) & 1u) && ws.val[l]) ballot |= 1u << l;
        if (ws.kind == W_BALLOT) return ballot;
        if (ws.kind == W_ANY) return ballot != 0;
        if (ws.kind == W_ALL) return ballot == ws.mask;
        return 0;
    }
    if (!((ws.mask >> src) & 1u))
        fail("warp %d lane %d reads lane %d, which is not in the mask 0x%08x (%s)", base_lane / 32, lane, src, ws.mask,
             where(ws.file, ws.line));
    return ws.val[src];
}

uint64_t warp_op(int kind, unsigned mask, uint64_t value, int param, int width, const char *file, int line) {
    int lane = cur & 31, w = cur >> 5, base = w * 32;
    warp_state &ws = warps[w];
    int lanes_here = nthreads - base < 32 ? nthreads - base : 32;
    if (width < 1 || width > 32 || (width & (width - 1)))
        fail("%s: warp operation width %d (%s)", thread_name(cur), width, where(file, line));
    if (!((mask >> lane) & 1u))
        fail("%s: lane %d calls a warp operation (%s) with mask 0x%08x, which leaves it out", thread_name(cur), lane,
             where(file, line), mask);
    if (lanes_here < 32 && (mask >> lanes_here))
        fail("%s: warp operation (%s) with mask 0x%08x in a warp of %d threads (the block has %d)", thread_name(cur),
             where(file, line), mask, lanes_here, nthreads);
    if (ws.arrived == 0) {
        ws.kind = kind;
        ws.mask = mask;
        ws.file = file;
        ws.line = line;
        ws.width = width;
    } else if (ws.kind != kind || ws.mask != mask || ws.line != line || ws.width != width ||
               (ws.file != file && strcmp(ws.file, file))) {
        fail("%s: lanes of warp %d meet different warp operations: %s mask 0x%08x and %s mask 0x%08x", thread_name(cur),
             w, where(file, line), mask, where(ws.file, ws.line), ws.mask);
    }
    ws.val[lane] = value;
    ws.param[lane] = param;
    ws.arrived |= 1u << lane;
    if (ws.arrived == mask) { // complete: every lane's result, then release them
        for (int l = 0; l < 32; l++)
            if ((mask >> l) & 1u) pool[base + l].warp_result = warp_result(ws, l, base);
        for (int l = 0; l < 32; l++)
            if (((mask >> l) & 1u) && pool[base + l].state == F_WARP) pool[base + l].state = F_READY;
        ws.arrived = 0;
        return pool[cur].warp_result;
    }
    // A lane of the mask that has ended never comes.
    if (mask & ws.done)
        fail("warp %d: lane %d has exited, but lanes 0x%08x wait for it at a warp operation (%s) with mask 0x%08x", w,
             __builtin_ctz(mask & ws.done), ws.arrived, where(file, line), mask);
    pool[cur].state = F_WARP;
    yield_to_scheduler();
    return pool[cur].warp_result;
}

unsigned active_mask(void) {
    int base = cur & ~31;
    unsigned m = 0;
    for (int l = 0; l < 32 && base + l < nthreads; l++)
        if (pool[base + l].state != F_DONE) m |= 1u << l;
    return m;
}

static void fill_garbage(void *p, size_t n) { memset(p, 0xff, n); }

void *shared_static(const void *key, size_t bytes) {
    for (size_t i = 0; i < shared.size(); i++)
        if (shared[i].key == key) return shared[i].ptr;
    shared_slot s;
    s.key = key;
    s.bytes = bytes;
    s.ptr = malloc(bytes);
    if (!s.ptr) {
        fprintf(stderr, "cuda_emu: no memory for %zu bytes of shared memory\n", bytes);
        abort();
    }
    fill_garbage(s.ptr, bytes);
    shared.push_back(s);
    return s.ptr;
}

void *shared_dynamic(void) {
    if (!dyn_allocated) {
        dyn_shared = malloc(dyn_bytes); // 0 bytes: any access is an overrun (ASan)
        if (dyn_bytes && !dyn_shared) {
            fprintf(stderr, "cuda_emu: no memory for %zu bytes of shared memory\n", dyn_bytes);
            abort();
        }
        if (dyn_bytes) fill_garbage(dyn_shared, dyn_bytes);
        dyn_allocated = true;
    }
    return dyn_shared;
}

// ---------------------------------------------------------------- for the tests
const std::set<std::string> &launched_kernels(void) { return launched; }
void set_quiet_faults(bool q) { quiet_faults = q; }
std::vector<std::string> take_failures(void) {
    std::vector<std::string> f;
    f.swap(failures);
    return f;
}

} // namespace gaia_emu
