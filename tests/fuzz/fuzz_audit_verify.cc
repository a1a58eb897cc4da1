// libFuzzer: `outpost audit verify` (audit/audit_verify.h) on an arbitrary
// file: every outcome is a verdict — PASS, or FAIL naming a line and a kind —
// never a crash, and a FAIL always says what kind.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "outpost/audit/audit_verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = outpost::fuzz::WriteInput(data, size, ".jsonl");
  outpost::audit::VerifyOptions o;
  o.public_pem = "-";  // no key: signatures are checked and fail cleanly
  const auto r = outpost::audit::VerifyAuditFiles({path}, o);
  if (!r.ok && (r.kind.empty() || r.error.empty())) __builtin_trap();
  o.allow_partial = true;
  o.expect_count = 2;
  o.expect_head = std::string(64, 'a');
  (void)outpost::audit::VerifyAuditFiles({path}, o);
  return 0;
}
