#include "outpost/models/memory_ledger.h"

#include <gtest/gtest.h>

namespace outpost::models {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(MemoryLedger, ReservesAgainstOneBudgetAndReleasesOnDestruction) {
  MemoryLedger ledger(1000 * kMiB);
  auto a = ledger.Reserve("gemma", 600 * kMiB);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(ledger.available(), 400 * kMiB);
  // A second model that does not fit beside the first is refused, with numbers.
  auto b = ledger.Reserve("smollm", 500 * kMiB);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  const std::string& msg = b.status().message();
  EXPECT_NE(msg.find("'smollm' needs 500"), std::string::npos) << msg;
  EXPECT_NE(msg.find("held by gemma 600"), std::string::npos) << msg;
  EXPECT_EQ(ledger.available(), 400 * kMiB);  // a refusal holds nothing
  auto c = ledger.Reserve("smollm", 400 * kMiB);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(ledger.available(), 0u);
  EXPECT_EQ(ledger.Entries().size(), 2u);
  a->reset();  // unloading a model hands its memory back
  EXPECT_EQ(ledger.available(), 600 * kMiB);
  EXPECT_EQ(ledger.Entries().count("gemma"), 0u);
}

TEST(MemoryLedger, OneReservationPerOwner) {
  MemoryLedger ledger(1000 * kMiB);
  auto a = ledger.Reserve("gemma", 1 * kMiB);
  ASSERT_TRUE(a.ok());
  auto again = ledger.Reserve("gemma", 1 * kMiB);
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(again.status().param(), "model");
  EXPECT_NE(again.status().message().find("already loaded"), std::string::npos);
}

}  // namespace
}  // namespace outpost::models
