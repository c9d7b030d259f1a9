# cmake -DMANIFEST=<build>/install_manifest.txt -P Uninstall.cmake: removes every file that the last
# `cmake --install` of that build tree installed, then the directories that are left empty.
if(NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "${MANIFEST} not found: nothing was installed from this build tree")
endif()
file(STRINGS "${MANIFEST}" _files)
# cpack installs too (into a staging directory, or under its packaging prefix with DESTDIR) and rewrites the same
# manifest: after it, the manifest no longer names what `cmake --install --prefix P` put in P. The first file of
# the last real install is beside the manifest (install_first_file.txt, cmake/Install.cmake): refuse a manifest
# without it, rather than remove nothing of P in silence, or the files of another install.
get_filename_component(_build_dir "${MANIFEST}" DIRECTORY)
list(LENGTH _files _listed)
if(EXISTS "${_build_dir}/install_first_file.txt")
  file(READ "${_build_dir}/install_first_file.txt" _first)
  list(FIND _files "${_first}" _index)
  if(_index EQUAL -1)
    message(FATAL_ERROR "${MANIFEST} does not list ${_first}, which `cmake --install` last put there: cpack ran "
                        "after that install in this build tree and replaced the list with what it packed. Run "
                        "`cmake --install ${_build_dir} --prefix PREFIX` again with that install's prefix (the one "
                        "holding ${_first}), then uninstall.")
  endif()
endif()
set(_dirs)
set(_removed 0)
foreach(_file IN LISTS _files)
  if(EXISTS "${_file}" OR IS_SYMLINK "${_file}")
    message(STATUS "Removing ${_file}")
    file(REMOVE "${_file}")
    math(EXPR _removed "${_removed} + 1")
  endif()
  get_filename_component(_dir "${_file}" DIRECTORY)
  list(APPEND _dirs "${_dir}")
endforeach()
if(_removed EQUAL 0)
  message(WARNING "Nothing removed: none of the ${_listed} files that ${MANIFEST} lists is there (already "
                  "uninstalled?)")
endif()
# Directories deepest first; only empty ones go, and only those memstress's own files were in.
list(REMOVE_DUPLICATES _dirs)
list(SORT _dirs ORDER DESCENDING)
foreach(_dir IN LISTS _dirs)
  while(_dir MATCHES "/memstress(/|$)")
    file(GLOB _left "${_dir}/*")
    if(_left OR NOT IS_DIRECTORY "${_dir}")
      break()
    endif()
    file(REMOVE_RECURSE "${_dir}")
    get_filename_component(_dir "${_dir}" DIRECTORY)
  endwhile()
endforeach()
