# python: the extension module gpubase._gpubase (pybind11, python/module.cpp) over gb_python (the
# plain C++ half, python/batch_source.cpp). Built when the Python 3 headers and pybind11 are found
# (Debian: python3-dev, pybind11-dev; an air-gapped host: pybind11 from the .deps/ folder through
# CMAKE_PREFIX_PATH, the interpreter's own headers); otherwise left out with a message. The
# package lands in <build>/python/gpubase: PYTHONPATH=<build>/python makes `import gpubase` work.
# The interpreter the module is built for: unless Python3_EXECUTABLE is given, the first of
# `python3` on the PATH and the system's /usr/bin/python3 that has torch, else numpy (the tensors
# the loader hands over), else whichever FindPython3 picks.
if(NOT Python3_EXECUTABLE)
  find_program(gpubase_path_python3 python3)
  foreach(module torch numpy)
    foreach(candidate ${gpubase_path_python3} /usr/bin/python3)
      if(EXISTS "${candidate}")
        execute_process(COMMAND "${candidate}" -c "import ${module}" RESULT_VARIABLE rc
                        OUTPUT_QUIET ERROR_QUIET)
        if(rc EQUAL 0)
          set(Python3_EXECUTABLE "${candidate}")
          break()
        endif()
      endif()
    endforeach()
    if(Python3_EXECUTABLE)
      break()
    endif()
  endforeach()
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module)
if(Python3_FOUND)
  find_package(pybind11 CONFIG QUIET)
endif()
if(NOT Python3_FOUND OR NOT pybind11_FOUND)
  message(STATUS "gpubase: the Python module (import gpubase) is left out: needs the Python 3 "
                 "headers (python3-dev) and pybind11 (pybind11-dev)")
  set(GPUBASE_PYTHON_EXECUTABLE "" CACHE INTERNAL "")
  return()
endif()
message(STATUS "gpubase: Python module for ${Python3_EXECUTABLE} (${Python3_VERSION}), "
               "pybind11 ${pybind11_VERSION}")
set(GPUBASE_PYTHON_EXECUTABLE "${Python3_EXECUTABLE}" CACHE INTERNAL "")

add_library(gb_python STATIC ${CMAKE_CURRENT_SOURCE_DIR}/python/batch_source.cpp)
target_include_directories(gb_python PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gb_python PUBLIC gb_core gb_sys gb_data gb_pipeline)
set_target_properties(gb_python PROPERTIES POSITION_INDEPENDENT_CODE ON)
gpubase_warnings(gb_python)

# NO_EXTRAS: no link-time optimization (serial LTO jobs, warnings) and no stripping.
pybind11_add_module(gpubase_python MODULE NO_EXTRAS ${CMAKE_CURRENT_SOURCE_DIR}/python/module.cpp)
target_link_libraries(gpubase_python PRIVATE gb_python)
# Only what the loader uses: cuBLASLt and cuDNN come with gb_gpu but are not needed here.
target_link_options(gpubase_python PRIVATE -Wl,--as-needed)
set_target_properties(gpubase_python PROPERTIES
  OUTPUT_NAME _gpubase
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/gpubase)
gpubase_warnings(gpubase_python)

# The pure-Python package beside the module (copied again whenever a file changes).
file(GLOB gpubase_py CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/gpubase/*.py)
foreach(f ${gpubase_py})
  get_filename_component(name ${f} NAME)
  configure_file(${f} ${CMAKE_BINARY_DIR}/python/gpubase/${name} COPYONLY)
endforeach()
