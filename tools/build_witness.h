/* build_witness.h — `cuzk build-witness [--prime bn128|bls12381] CIRCUIT_cpp/ OUT.wgen`:
 * compiles the directory `circom --c` writes into a loadable witness generator.
 *
 * circom's generated C++ (the circuit's .cpp, calcwit.cpp, fr.cpp; not main.cpp, which
 * needs nlohmann/json) is compiled with g++ -fPIC -fvisibility=hidden, fr.asm with
 * nasm -felf64, and linked with cuzk's ABI (synth/wgen_abi.cpp, embedded in this
 * binary) and the circuit's .dat (embedded in the .so, loaded once per process) into
 * a shared object against libgmp. A version script exports only cuzk_wgen_*. When
 * circom also wrote the .sym (`--sym`, next to CIRCUIT_cpp/), the names of the main
 * inputs go in too, so a message can name an input signal that input.json leaves out.
 * Needs g++, nasm and libgmp-dev (deploy/install-deps.sh); CXX and NASM override the
 * tools. */
#ifndef CUZK_BUILD_WITNESS_H
#define CUZK_BUILD_WITNESS_H

/* Runs the subcommand with argv[0] = "build-witness". Returns the exit code, a
 * CUZK_EXIT_* of error.h's table (3 a file of the circom output missing or
 * unreadable, 7 --prime is not the prime circom compiled for, 10 a compiler failed or
 * is missing: its messages are on stderr). */
int build_witness_main(int argc, char **argv);

#endif
