#include "suites/registry.hpp"

namespace memstress::suites {

Registry builtin_registry() {
  Registry registry;
  registry.add(make_smoke());
  registry.add(make_alloc_smoke());
  registry.add(make_sizes());
  registry.add(make_fragmentation());
  registry.add(make_oom());
  registry.add(make_leak());
  registry.add(make_streams());
  registry.add(make_transfers());
  registry.add(make_inplace());
  registry.add(make_dataloader());
  registry.add(make_integrity());
  registry.add(make_collectives());
  registry.add(make_nccl_memory());
  registry.add(make_p2p());
  registry.add(make_health());
  return registry;
}

}  // namespace memstress::suites
