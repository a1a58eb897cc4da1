// libFuzzer: the fleet's desired-state document as a box receives it
// (fleet/desired_state.h): the input parsed as a payload (the JSON a central
// team writes), verified as a DSSE envelope against the test fixture's key,
// and selected for a node; and the node's labels flag. Every outcome is a
// value or an error; no crash, no leak.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "outpost/fleet/desired_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<outpost::models::TrustedKey> keys = [] {
    auto k = outpost::models::LoadTrustedKeys({"tests/data/signatures/oms-p256.pub"});
    return k.ok() ? *k : std::vector<outpost::models::TrustedKey>{};
  }();
  const std::string in(reinterpret_cast<const char*>(data), size);
  auto doc = outpost::fleet::ParseDesiredState(in);
  if (doc.ok()) {
    const outpost::fleet::NodeIdentity node{"plant-3", {{"line", "a"}}};
    for (const auto& m : outpost::fleet::SelectFor(*doc, node)) (void)m.Ref();
  }
  (void)outpost::fleet::VerifyDesiredState(in, keys);
  (void)outpost::fleet::ParseLabels(in, "fleet_labels");
  return 0;
}
