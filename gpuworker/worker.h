/* worker.h — the proving stage (cuzk-gpuworker): READY -> PROVING -> PROVED.
 *
 * Worker i pops PIPE_RING_WORKER(i); claims (CAS READY->PROVING); takes the
 * partition's buffer (pool: PART|p -> its pid; the backend consumes a, b, c in place,
 * so after a death mid-prove the buffer is not intact: reclaim sees it no longer held
 * for p and the partition is synthesized again, and pool_reclaim_pid frees it); gives
 * it to its backend (backend.h; --backend cpu) in place; the backend releases the
 * buffer as soon as it no longer reads it, and the worker then frees it (pool: pid ->
 * free, then part.buf = NONE); writes results[p]; CAS PROVING->PROVED; pushes
 * PIPE_RING_FINAL.
 * Between two partitions the loop touches only its ring, the table's state words and
 * its own stats slot. The zkey stays open (cache), so the MSM bases stay resident.
 *
 * Asynchronous backends (backend.h depth > 0: CUDA, and cpu-async for tests) keep up
 * to depth partitions in flight: claim + submit while there is room (polling the ring
 * every 1 ms while the device works), collect and hand on each as it finishes. Before
 * opening another circuit's zkey, or applying a changed circuits table, the worker
 * waits for what is in flight (the zkey cache may close a zkey an in-flight thread still reads). A
 * result marked fatal (device fault) makes the worker print the CUDA error and _exit
 * 111 at once, holding its partitions: cuzkd's reclaim and retry do the rest.
 *
 * Stats slot (role STATS_ROLE_GPUWORKER):
 *   states   wait_input/idle: ring empty (idle when no job is running); busy: claim
 *            and hand-off; zkey: zkey open on a cache miss; ntt: the coset NTTs and h;
 *            msm: the five MSMs; wait_output: finalizer ring full. ntt and msm are
 *            measured inside the backend call and entered in order afterwards, so
 *            a live reader sees "ntt" for the whole call; the totals are exact.
 *            device (asynchronous backends, instead of ntt/msm_*): partitions are in
 *            flight and the worker waits for the device.
 *   counters 0 parts_done, 1 parts_failed, 2 claims_lost, 3 msm_a_ns, 4 msm_b1_ns,
 *            5 msm_b2_ns, 6 msm_c_ns, 7 msm_h_ns, 8 ntt_ns (totals, ns; CUDA: each
 *            kernel's own event pair, which may overlap between in-flight threads; CPU: the
 *            sections' wall time), 9 lane_occupy_ns (the in-flight occupancy, earlier name kept; host clock: the time at least one
 *            partition was in the backend, circuit loads and round trips included;
 *            CPU: the compute sections), 10 domain_hits, 11 domain_builds,
 *            12 gpu_busy_ns (the device's own clock: the union of the partitions'
 *            device spans, backend_done.dev_*, busy.h; never above wall: the
 *            device-busy share), 13 fixed_tables (fixed-base tables built: one
 *            a MSM of a circuit, fixed_base.h), 14 fixed_msms (MSMs run through one),
 *            15 fixed_evicted (circuits whose tables went for --fixed-base-mb)
 *   hists    0 gap: the device's idle time between one partition's last device step
 *              and the next one's first copy (device spans; 0 when they overlapped;
 *              the figure to watch), 1 prove: one backend call (async: submit to
 *              collect), 2 ntt, 3 msm
 *   gauges   0 precomp_bytes, 1 precomp_budget, 2 device_wait_blocks, 3 cpu_ns
 *            (this process's CPU time, every 100 ms), 4 nvml_ok, 5 nvml_util_pct,
 *            6 nvml_mem_bytes, 7 nvml_power_mw, 8 nvml_sm_mhz (NVML, nvml.h; 0 without), 9 fixed_bytes,
 *            10 fixed_budget (the fixed-base tables' bytes and --fixed-base-mb),
 *            11 fixed_pending (circuits due for tables or being built)
 */
#ifndef CUZK_WORKER_H
#define CUZK_WORKER_H

#include <stddef.h>

#include "stage/stage.h"

/* Runs until *o->stop is set (then finishes the partition in hand and returns 0).
 * -errno / -CUZK_E_* with err when the stage cannot run (attach, slot, backend). */
int worker_run(const struct stage_opts *o, char *err, size_t errlen);

/* `cuzk-gpuworker prove [--backend B] [--repeat N] [--insecure-seed S] ZKEY WTNS PROOF
 * PUBLIC` (argv[0] = "prove"): synthesize, prove through backend B as the worker does,
 * finalize, verify (pairing), write; one line of times on stdout. The process exit
 * code (0, or a CUZK_E_* value). */
int worker_prove_main(int argc, char **argv);

#endif
