#pragma once

// The store's tests on each backend: SQLite always (a file in a temporary directory), PostgreSQL where
// MEMSTRESS_TEST_POSTGRESQL names a server's admin database (tests/CMakeLists.txt sets it for
// unit.db.postgresql, whose fixture starts a throwaway server: tests/db/postgresql_server.sh). Each test
// gets fresh, empty databases, dropped afterwards.

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "harness/db/connection.hpp"
#include "tests/unit/temp_dir.hpp"

namespace memstress::db {

inline std::string postgresql_admin_url() {
  const char* url = std::getenv("MEMSTRESS_TEST_POSTGRESQL");
  return url != nullptr ? url : "";
}

inline std::vector<std::string> db_backends() {
  std::vector<std::string> out{"sqlite"};
  if (!postgresql_admin_url().empty()) {
    out.emplace_back("postgresql");
  }
  return out;
}

class OnBackend : public ::testing::TestWithParam<std::string> {
 protected:
  // The URL of a new, empty database on this test's backend.
  std::string fresh(const std::string& name) {
    if (GetParam() == "sqlite") {
      return dir_.file(name + ".sqlite").string();
    }
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string db =
        "ms_" +
        std::to_string(std::hash<std::string>{}(std::string(test->name()) + "/" + name) % 1'000'000'000);
    admin("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
    admin("CREATE DATABASE " + db);
    made_.push_back(db);
    std::string url = postgresql_admin_url();
    const std::size_t at = url.find("///postgres");
    return url.replace(at, std::string("///postgres").size(), "///" + db);
  }

  void TearDown() override {
    for (const std::string& db : made_) {
      admin("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
    }
  }

  memstress::testing::TempDir dir_;

 private:
  static void admin(const std::string& sql) {
    open_database(postgresql_admin_url(), OpenMode::create, "--db")->exec(sql);
  }
  std::vector<std::string> made_;
};

inline std::string backend_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace memstress::db
