#pragma once

// main() of a GoogleTest program run under mpirun: MPI (the Job) lives for the whole program, and the one
// test gets its World as an argument, no global. Only rank 0 prints gtest's report; every rank's exit code
// still says whether its part passed.

#include <gtest/gtest.h>

#include <chrono>

#include "harness/dist/job.hpp"

namespace memstress::testing {

inline int run_world_test(int argc, char** argv, const char* suite, const char* name, void (*body)(World&)) {
  ::testing::InitGoogleTest(&argc, argv);
  const Job job(std::chrono::seconds(120));
  World& world = job.world();
  class Body : public ::testing::Test {
   public:
    Body(World& w, void (*f)(World&)) : world_(w), body_(f) {}
    void TestBody() override { body_(world_); }

   private:
    World& world_;
    void (*body_)(World&);
  };
  ::testing::RegisterTest(
      suite, name, nullptr, nullptr, __FILE__, __LINE__, [&world, body]() -> ::testing::Test* {
        return new Body(world, body);  // NOLINT(cppcoreguidelines-owning-memory): gtest owns it
      });
  if (world.rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}

}  // namespace memstress::testing
