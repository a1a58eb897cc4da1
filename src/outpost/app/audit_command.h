// `outpost audit verify [FILES]` and `outpost audit tail`: check the audit
// log's chain and signatures (audit/audit_verify.h), and read its records
// with filters. Both default to the log in the state directory (--dir).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace outpost::app {

struct AuditFlags {
  CLI::App* verify = nullptr;
  CLI::App* tail = nullptr;
  std::string dir;  // default: <state dir>/audit
  std::vector<std::string> files;
  std::string public_key;  // PEM file
  std::string checkpoint;  // COUNT:HEAD from the centre
  bool allow_partial = false;
  bool json = false;
  int lines = 20;
  std::string since;  // "10m", "2h", or an ISO time "2026-12-01T10:00:00Z"
  std::string tenant, route, type;
};

CLI::App* AddAuditCommand(CLI::App* app, AuditFlags* f);
// Exit codes: 0 the log verifies (warnings allowed), 1 it does not, 2 usage.
int RunAudit(const AuditFlags& f);

}  // namespace outpost::app
