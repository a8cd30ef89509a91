// assembly_cpp_peer.cc - a driver for the reference assembly simulator's C++
// port (Mitropolsky et al.'s "assemblies" repository, directory cpp/), so
// that bench_assembly can time it beside gaia in the same run. Not part of
// gaia and not built by make: build it by hand against a checkout of the
// reference (README, "Benchmarks"):
//   g++ -O3 -std=c++17 -I ASSEMBLIES/cpp bench/assembly_cpp_peer.cc ASSEMBLIES/cpp/brain.cc -o assembly_cpp_peer
// then GAIA_ASSEMBLY_CPP=$PWD/assembly_cpp_peer ./build/bench/bench_assembly
//
// Usage: assembly_cpp_peer lazy|explicit N K P BETA STEPS SEED [RUNS]
// A projection: stimulus (K neurons) into area A (N neurons, cap K), first
// alone, then with A > A, STEPS steps in all, RUNS runs with seeds SEED,
// SEED + 1, ... Prints one line per run: "setup_seconds step_seconds support"
// (support = neurons of A that ever fired; the port counts all n as support
// for an explicit area).
#include "brain.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
    if (argc < 8 || (std::strcmp(argv[1], "lazy") != 0 && std::strcmp(argv[1], "explicit") != 0)) {
        std::fprintf(stderr, "usage: assembly_cpp_peer lazy|explicit N K P BETA STEPS SEED [RUNS]\n");
        return 2;
    }
    const bool is_explicit = std::strcmp(argv[1], "explicit") == 0;
    const uint32_t n = (uint32_t)std::strtoul(argv[2], nullptr, 10), k = (uint32_t)std::strtoul(argv[3], nullptr, 10);
    const float p = std::strtof(argv[4], nullptr), beta = std::strtof(argv[5], nullptr);
    const int steps = std::atoi(argv[6]), runs = argc > 8 ? std::atoi(argv[8]) : 1;
    const uint32_t seed = (uint32_t)std::strtoul(argv[7], nullptr, 10);
    if (n == 0 || k == 0 || k > n || steps < 1 || runs < 1) {
        std::fprintf(stderr, "assembly_cpp_peer: bad sizes\n");
        return 2;
    }
    for (int r = 0; r < runs; r++) {
        auto t0 = std::chrono::steady_clock::now();
        // max_weight 1e6: no cap in practice, as gaia's default
        nemo::Brain b(p, beta, 1e6f, seed + (uint32_t)r);
        b.AddStimulus("stim", k);
        b.AddArea("A", n, k, /*recurrent=*/true, is_explicit);
        b.AddFiber("stim", "A");
        auto t1 = std::chrono::steady_clock::now();
        b.Project({{"stim", {"A"}}}, 1);
        if (steps > 1) b.Project({{"stim", {"A"}}, {"A", {"A"}}}, (uint32_t)(steps - 1));
        auto t2 = std::chrono::steady_clock::now();
        std::printf("%.6f %.6f %u\n", std::chrono::duration<double>(t1 - t0).count(),
                    std::chrono::duration<double>(t2 - t1).count(), b.GetArea("A").support);
        std::fflush(stdout);
    }
    return 0;
}
