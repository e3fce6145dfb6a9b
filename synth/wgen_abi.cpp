/* wgen_abi.cpp — cuzk's side of a .wgen (proto/wgen_abi.h), compiled by
 * `cuzk build-witness` together with circom's generated C++ (circuit.cpp, calcwit.cpp,
 * fr.cpp, fr.asm) into one shared object. It replaces circom's main.cpp, which reads
 * input.json with nlohmann/json and writes a .wtns file: here the caller (the C
 * loader, synth/wgen.c) parses the JSON and hands field elements in, and takes the
 * witness out into its own buffer.
 *
 * Not built by the Makefile (it needs a circuit): the cuzk binary embeds its text. It
 * is compiled with -fvisibility=hidden and linked with a version script that exports
 * only cuzk_wgen_*; wgen_assert.h stands in for <assert.h> so that a failed circom
 * assert throws instead of aborting the process. */
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmp.h>

/* calcwit.cpp's destructor is empty: it frees neither the signals nor the flags of
 * the inputs. A daemon runs millions of contexts, so cuzk_wgen_free frees them, and
 * needs the private flag array for that: the class is read as a struct (all public;
 * same layout and, in the Itanium C++ ABI, the same mangled names). Every header
 * calcwit.hpp includes is included above, so only circom's own types see the define. */
#define class struct
#define private public
#include "calcwit.hpp"
#undef private
#undef class
#include "circom.hpp"
#include "proto/wgen_abi.h"

#define WGEN_API extern "C" __attribute__((visibility("default")))

extern void run(Circom_CalcWit *ctx);
extern bool Fr_init();

/* The circuit's .dat and input names, put into .rodata by the dat.S that
 * build-witness writes (.incbin). */
extern "C" const unsigned char cuzk_wgen_dat[], cuzk_wgen_dat_end[];
extern "C" const char cuzk_wgen_names[];
/* 32 bytes of circuit fingerprint then one byte, 1 when build-witness had the r1cs */
extern "C" const unsigned char cuzk_wgen_fp[];

/* Thrown by wgen_assert.h's assert. */
struct wgen_assert_failed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void cuzk_wgen_assert_fail(const char *expr, const char *file, int line)
{
    std::ostringstream s;
    s << "assert(" << expr << ") failed at " << file << ":" << line;
    throw wgen_assert_failed(s.str());
}

static Circom_Circuit *g_circuit;
static cuzk_wgen_desc g_desc;
static std::once_flag g_once;

/* The data after the constants: for each of get_size_of_io_map() templates, its IO
 * field definitions, then those of the buses (circom's main.cpp, loadCircuit). */
static const uint32_t *read_defs(const uint32_t *p, IOFieldDefPair *out)
{
    uint32_t n = *p++;
    out->len = n;
    out->defs = (IOFieldDef *)calloc(n ? n : 1, sizeof(IOFieldDef));
    for (uint32_t j = 0; j < n; j++) {
        IOFieldDef &d = out->defs[j];
        d.offset = p[0];
        d.len = p[1];
        d.lengths = new u32[d.len ? d.len : 1];
        memcpy(d.lengths, p + 2, d.len * sizeof(u32));
        p += d.len + 2;
        d.size = p[0];
        d.busId = p[1];
        p += 2;
    }
    return p;
}

static void load_circuit()
{
    const unsigned char *dat = cuzk_wgen_dat;
    Circom_Circuit *c = new Circom_Circuit;
    size_t off = 0, n;

    Fr_init();
    n = get_size_of_input_hashmap() * sizeof(HashSignalInfo);
    c->InputHashMap = new HashSignalInfo[get_size_of_input_hashmap()];
    memcpy((void *)c->InputHashMap, dat + off, n);
    off += n;
    n = get_size_of_witness() * sizeof(u64);
    c->witness2SignalList = new u64[get_size_of_witness()];
    memcpy((void *)c->witness2SignalList, dat + off, n);
    off += n;
    c->circuitConstants = new FrElement[get_size_of_constants() ? get_size_of_constants() : 1];
    n = get_size_of_constants() * sizeof(FrElement);
    memcpy((void *)c->circuitConstants, dat + off, n);
    off += n;
    c->busInsId2FieldInfo = NULL;
    if (get_size_of_io_map() > 0) {
        std::vector<u32> index(get_size_of_io_map());
        memcpy(index.data(), dat + off, index.size() * sizeof(u32));
        off += index.size() * sizeof(u32);
        /* .incbin keeps the file's 4-byte alignment only if dat.S aligns the start (it
         * does: .balign 64) */
        const uint32_t *p = (const uint32_t *)(dat + off);
        for (size_t i = 0; i < index.size(); i++) {
            IOFieldDefPair pair;
            p = read_defs(p, &pair);
            c->templateInsId2IOSignalInfo[index[i]] = pair;
        }
        c->busInsId2FieldInfo =
            (IOFieldDefPair *)calloc(get_size_of_bus_field_map() + 1, sizeof(IOFieldDefPair));
        for (uint32_t i = 0; i < get_size_of_bus_field_map(); i++)
            p = read_defs(p, &c->busInsId2FieldInfo[i]);
    }
    g_circuit = c;

    cuzk_wgen_desc &d = g_desc;
    d.abi = CUZK_WGEN_ABI;
    d.n8 = Fr_N64 * 8;
    memcpy(d.prime, Fr_q.longVal, Fr_N64 * 8);
    d.nwitness = get_size_of_witness();
    d.ninputs = get_main_input_signal_no();
    d.input_start = get_main_input_signal_start();
    d.nhash = get_size_of_input_hashmap();
    d.inputs = (const cuzk_wgen_input *)c->InputHashMap;
    d.names = cuzk_wgen_names;
    d.dat_size = (uint64_t)(cuzk_wgen_dat_end - cuzk_wgen_dat);
    uint64_t h = 0xCBF29CE484222325ULL;
    for (const unsigned char *q = cuzk_wgen_dat; q < cuzk_wgen_dat_end; q++) h = (h ^ *q) * 0x100000001B3ULL;
    d.dat_hash = h;
}

WGEN_API const uint8_t *cuzk_wgen_fingerprint(void)
{
    return cuzk_wgen_fp[32] == 1 ? cuzk_wgen_fp : NULL;
}

/* The ABI version as data, so that cuzkd can read it from the file's symbol table
 * (supervisor/wgen_trust.c) and refuse a shared object that is not a generator of
 * this ABI before anything in it runs: describe() is code, and loading a file runs
 * its constructors. */
WGEN_API const uint32_t cuzk_wgen_abi = CUZK_WGEN_ABI;

WGEN_API const cuzk_wgen_desc *cuzk_wgen_describe(void)
{
    std::call_once(g_once, load_circuit);
    return &g_desc;
}

WGEN_API void *cuzk_wgen_new(void)
{
    cuzk_wgen_describe();
    try {
        Circom_CalcWit *ctx = new Circom_CalcWit(g_circuit);
        /* circom's create functions set every field it reads; the main component's
         * arrays are freed in cuzk_wgen_free */
        return ctx;
    } catch (const std::bad_alloc &) {
        return NULL;
    }
}

WGEN_API void cuzk_wgen_set(void *p, uint64_t id, const uint64_t *v)
{
    Circom_CalcWit *ctx = (Circom_CalcWit *)p;
    FrElement &e = ctx->signalValues[id];
    e.shortVal = 0;
    e.type = Fr_LONG;
    memcpy(e.longVal, v, sizeof e.longVal);
}

/* circom prints the reason of a failed assert on std::cout just before the assert
 * ("Failed assert in template/function T line L. Followed trace of components: ..."):
 * while the circuit runs, std::cout goes to a buffer, so the message can be returned;
 * the rest (log()) is passed on to stderr. */
WGEN_API int cuzk_wgen_run(void *p, char *err, size_t errlen)
{
    Circom_CalcWit *ctx = (Circom_CalcWit *)p;
    std::ostringstream out;
    std::streambuf *old = std::cout.rdbuf(out.rdbuf());
    std::string why;
    try {
        run(ctx);
    } catch (const std::exception &e) {
        why = e.what();
    }
    std::cout.rdbuf(old);
    std::string text = out.str(), reason;
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);) {
        if (l.rfind("Failed assert", 0) == 0)
            reason = l;
        else if (!l.empty())
            std::cerr << l << "\n";
    }
    if (why.empty()) return 0;
    if (!reason.empty()) why = reason;
    snprintf(err, errlen, "%s", why.c_str());
    return -1;
}

WGEN_API void cuzk_wgen_get(void *p, uint32_t first, uint32_t n, uint8_t *out)
{
    Circom_CalcWit *ctx = (Circom_CalcWit *)p;
    for (uint32_t i = 0; i < n; i++) {
        FrElement v;
        ctx->getWitness(first + i, &v);
        Fr_toLongNormal(&v, &v);
        memcpy(out + (size_t)i * Fr_N64 * 8, v.longVal, Fr_N64 * 8);
    }
}

WGEN_API void cuzk_wgen_free(void *p)
{
    Circom_CalcWit *ctx = (Circom_CalcWit *)p;
    if (!ctx) return;
    if (get_number_of_components() > 0) {
        Circom_Component &m = ctx->componentMemory[0];
        delete[] m.subcomponents;
        delete[] m.subcomponentsParallel;
        delete[] m.outputIsSet;
        delete[] m.mutexes;
        delete[] m.cvs;
        delete[] m.sbct;
    }
    delete[] ctx->componentMemory;
    delete[] ctx->signalValues;
    delete[] ctx->inputSignalAssigned;
    delete ctx;
}
