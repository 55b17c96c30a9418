// A GoogleTest fixture with a fresh, empty temporary folder per test
// (paths::make_temp_directory), removed with everything in it after the test.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "util/paths.hpp"

namespace cifar::test {

class TempFolderTest : public ::testing::Test {
 protected:
  explicit TempFolderTest(std::string prefix = "cifar_test_") : prefix_(std::move(prefix)) {}
  void SetUp() override { root_ = paths::make_temp_directory(prefix_); }
  void TearDown() override { paths::remove_all(root_); }
  // `name` inside the folder.
  std::string at(const std::string& name) const { return paths::join(root_, name); }

  std::string root_;

 private:
  std::string prefix_;
};

}  // namespace cifar::test
