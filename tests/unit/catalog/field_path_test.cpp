#include <string>

#include <gtest/gtest.h>

#include "catalog/field_error.h"

namespace kstack::catalog {
namespace {

TEST(FieldPath, BuildsApimachineryStylePaths) {
  EXPECT_EQ(child_path("", "spec"), "spec");
  EXPECT_EQ(child_path("spec", "roles"), "spec.roles");
  EXPECT_EQ(index_path("spec.roles", 12), "spec.roles[12]");
  EXPECT_EQ(key_path("metadata.labels", "kstack.io/stack"), "metadata.labels[kstack.io/stack]");
}

// ChildPath is child_path() built in place: the same text for every length, the inline
// buffer's edge and beyond it.
TEST(FieldPath, ChildPathSpellsWhatChildPathSpells) {
  const std::string long_path(200, 'p');
  for (const std::string& path :
       {std::string(), std::string("spec"), std::string("spec.roles[0]"), std::string(58, 'a'),
        std::string(59, 'a'), std::string(63, 'a'), std::string(64, 'a'), long_path}) {
    for (const std::string& field :
         {std::string("resources"), std::string(), std::string(5, 'f')}) {
      const ChildPath built(path, field);
      EXPECT_EQ(std::string_view(built), child_path(path, field))
          << path.size() << " + " << field.size();
    }
  }
}

}  // namespace
}  // namespace kstack::catalog
