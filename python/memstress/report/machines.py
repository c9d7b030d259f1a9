"""The report's section of machines (`memstress devices --format json`): each GPU's name, memory, UUID, PCI bus id
and link, the driver, CUDA and NCCL. Imported by __main__.py."""

from __future__ import annotations

import html


def section_machines(devices: list[tuple[str, dict]]) -> str:
    """`memstress devices --format json` documents: one line per GPU, with what tells machines apart."""
    lines = []
    for name, doc in devices:
        host = doc.get("host") or {}
        versions = (f"driver {(doc.get('driver') or {}).get('version')}, CUDA {(doc.get('cuda_runtime') or {}).get('version')}, "
                    f"NCCL {(doc.get('nccl') or {}).get('version')}")
        for gpu in doc.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            memory = gpu.get("memory_bytes")
            cells = (name, host.get("name"), gpu.get("ordinal"), gpu.get("name"),
                     f"{memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) else None, gpu.get("uuid"),
                     gpu.get("pci_bus_id"), f"gen {gpu.get('pcie_link_gen')} x{gpu.get('pcie_link_width')}", versions)
            lines.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    if not lines:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("file", "host", "GPU", "name", "memory", "UUID", "PCI bus id", "PCIe",
                                             "software"))
    return f"<h2>Machines</h2><table><tr>{head}</tr>{''.join(lines)}</table>"
