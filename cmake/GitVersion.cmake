# Regenerates git_version.cpp at every build (only rewritten when the sha or dirty state changes), so
# `memstress --version` names the commit the binary was built from, not the one it was configured at.
set(MEMSTRESS_GIT_VERSION_CPP "${PROJECT_BINARY_DIR}/generated/git_version.cpp")
add_custom_target(
  memstress_git_version
  BYPRODUCTS "${MEMSTRESS_GIT_VERSION_CPP}"
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${MEMSTRESS_GIT_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/WriteGitVersion.cmake
  COMMENT "Recording the git sha"
  VERBATIM)
