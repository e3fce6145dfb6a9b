#!/usr/bin/env python3
"""Writes the hwloc 2.x XML topologies in this folder (run it after editing a shape).

Each file describes a real server shape, as lstopo would export it, cut down to what
placement reads: packages, NUMA nodes, L3 caches, cores, PUs (Linux numbering: all
first hyperthreads, then all second ones), and the PCIe tree of the GPUs (host
bridge -> PCIe switch -> GPU), with OS devices where the exporting hwloc had the CUDA
and NVML plugins. `lstopo-no-graphics --input FILE` loads each of them.

  dual-xeon-8gpu.xml   2 x Xeon Gold 6348 (28 cores, HT), 2 NUMA nodes, 8 x A100-SXM4
                       (10de:20b2), 4 behind PCIe switches on each socket's root
                       ports; CUDA/NVML OS devices cuda0-7 / nvml0-7.
  epyc-4gpu.xml        1 x EPYC 7543P (32 cores, SMT, NPS1, 8 CCX x 4 cores),
                       1 NUMA node, 4 x A100-PCIE (10de:20f1) on four root ports;
                       PCI functions only (hwloc built without the CUDA plugin, as
                       Debian's): cuzkd numbers NVIDIA GPUs in PCI order.
"""
import os

here = os.path.dirname(os.path.abspath(__file__))


def mask(bits):
    v = 0
    for b in bits:
        v |= 1 << b
    s = "%x" % v
    # hwloc writes 32-bit words separated by commas, most significant first
    s = s.rjust(((len(s) + 7) // 8) * 8, "0")
    return "0x" + ",0x".join(s[i:i + 8] for i in range(0, len(s), 8))


class Gen:
    def __init__(self):
        self.gp = 1
        self.out = []

    def g(self):
        self.gp += 1
        return self.gp

    def w(self, depth, text):
        self.out.append("  " * depth + text)


def sets(cpus, nodes):
    c, n = mask(cpus), mask(nodes)
    return ('cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"'
            % (c, c, n, n))


def build(path, title, sockets, cores, l3_cores, mem_gb, gpus, osdevs):
    """gpus: list of (socket, host_bus, switch, gpu_bus, pci_id, subsys)."""
    G = Gen()
    ncpu = sockets * cores
    allc = list(range(2 * ncpu))
    G.w(0, '<?xml version="1.0" encoding="UTF-8"?>')
    G.w(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    pass  # no XML comments: hwloc's minimalistic parser (no libxml2) refuses them
    G.w(0, '<topology version="2.0">')
    G.w(1, '<object type="Machine" os_index="0" %s allowed_cpuset="%s" allowed_nodeset="%s" gp_index="1">'
        % (sets(allc, range(sockets)), mask(allc), mask(range(sockets))))
    G.w(2, '<info name="DMIProductName" value="%s"/>' % title)
    G.w(2, '<info name="Backend" value="Linux"/>')
    G.w(2, '<info name="OSName" value="Linux"/>')
    G.w(2, '<info name="hwlocVersion" value="2.9.0"/>')
    cuda_no = 0
    for s in range(sockets):
        pus = []
        for c in range(cores):
            core = s * cores + c
            pus += [core, core + ncpu]
        G.w(2, '<object type="Package" os_index="%d" %s gp_index="%d">' % (s, sets(pus, [s]), G.g()))
        G.w(3, '<info name="CPUModel" value="%s"/>' % title.split(",")[0])
        G.w(3, '<object type="NUMANode" os_index="%d" %s gp_index="%d" local_memory="%d">'
            % (s, sets(pus, [s]), G.g(), mem_gb << 30))
        G.w(4, '<page_type size="4096" count="%d"/>' % ((mem_gb << 30) // 4096))
        G.w(4, '<page_type size="2097152" count="0"/>')
        G.w(3, '</object>')
        for l3 in range(cores // l3_cores):
            l3pus = []
            for c in range(l3 * l3_cores, (l3 + 1) * l3_cores):
                core = s * cores + c
                l3pus += [core, core + ncpu]
            G.w(3, '<object type="L3Cache" %s gp_index="%d" cache_size="%d" depth="3" '
                'cache_linesize="64" cache_associativity="12" cache_type="0">'
                % (sets(l3pus, [s]), G.g(), 32 << 20))
            for c in range(l3 * l3_cores, (l3 + 1) * l3_cores):
                core = s * cores + c
                G.w(4, '<object type="Core" os_index="%d" %s gp_index="%d">'
                    % (c, sets([core, core + ncpu], [s]), G.g()))
                for pu in (core, core + ncpu):
                    G.w(5, '<object type="PU" os_index="%d" %s gp_index="%d"/>'
                        % (pu, sets([pu], [s]), G.g()))
                G.w(4, '</object>')
            G.w(3, '</object>')
        # the socket's PCIe: one host bridge per root port carrying GPUs
        for (gs, host_bus, switch, gpu_bus, pci_id, subsys) in gpus:
            if gs != s:
                continue
            G.w(3, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
                'bridge_pci="0000:[%02x-%02x]">' % (G.g(), host_bus, gpu_bus))
            d = 4
            if switch:
                G.w(4, '<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="1" '
                    'bridge_pci="0000:[%02x-%02x]" pci_busid="0000:%02x:00.0" '
                    'pci_type="0604 [10b5:%s] [0000:0000] ca" pci_link_speed="15.753846">'
                    % (G.g(), host_bus + 1, gpu_bus, host_bus, switch))
                d = 5
            G.w(d, '<object type="PCIDev" gp_index="%d" pci_busid="0000:%02x:00.0" '
                'pci_type="0302 [10de:%s] [10de:%s] a1" pci_link_speed="31.507692">'
                % (G.g(), gpu_bus, pci_id, subsys))
            if osdevs:
                # the GPU as the CUDA and the NVML backends each see it
                for attrs, backend, extra in (
                        ('name="cuda%d" subtype="CUDA" osdev_type="5"', "CUDA",
                         [("CUDAGlobalMemorySize", "83886080")]),
                        ('name="nvml%d" osdev_type="1"', "NVML", [])):
                    G.w(d + 1, '<object type="OSDev" gp_index="%d" ' % G.g() + attrs % cuda_no + '>')
                    for name, value in [("Backend", backend), ("GPUVendor", "NVIDIA Corporation"),
                                        ("GPUModel", "NVIDIA A100-SXM4-80GB")] + extra:
                        G.w(d + 2, '<info name="%s" value="%s"/>' % (name, value))
                    G.w(d + 1, '</object>')
                cuda_no += 1
            G.w(d, '</object>')
            if switch:
                G.w(4, '</object>')
            G.w(3, '</object>')
        G.w(2, '</object>')
    G.w(1, '</object>')
    for sup in ("discovery.pu", "discovery.numa", "discovery.numa_memory",
                "custom.exported_support"):
        G.w(1, '<support name="%s"/>' % sup)
    G.w(0, '</topology>')
    with open(os.path.join(here, path), "w") as f:
        f.write("\n".join(G.out) + "\n")


# 2 sockets x 28 cores; GPUs on buses 0x17,0x31 (switch each: 2 GPUs) ... written as
# four root ports per socket, each with a PCIe switch (PLX 8747) and one GPU.
build("dual-xeon-8gpu.xml", "2 x Intel Xeon Gold 6348, 8 x NVIDIA A100-SXM4-80GB",
      sockets=2, cores=28, l3_cores=28, mem_gb=512,
      gpus=[(0, 0x16, "8747", 0x1a, "20b2", "1463"), (0, 0x30, "8747", 0x34, "20b2", "1463"),
            (0, 0x49, "8747", 0x4d, "20b2", "1463"), (0, 0x63, "8747", 0x67, "20b2", "1463"),
            (1, 0x97, "8747", 0x9b, "20b2", "1463"), (1, 0xb0, "8747", 0xb4, "20b2", "1463"),
            (1, 0xc9, "8747", 0xcd, "20b2", "1463"), (1, 0xe2, "8747", 0xe6, "20b2", "1463")],
      osdevs=True)
build("epyc-4gpu.xml", "AMD EPYC 7543P 32-Core Processor, 4 x NVIDIA A100-PCIE-40GB",
      sockets=1, cores=32, l3_cores=4, mem_gb=512,
      gpus=[(0, 0x00, None, 0x01, "20f1", "145f"), (0, 0x20, None, 0x21, "20f1", "145f"),
            (0, 0x40, None, 0x41, "20f1", "145f"), (0, 0x60, None, 0x61, "20f1", "145f")],
      osdevs=False)
