# Third-party packages. All come from Debian packages (libcli11-dev, libfmt-dev,
# nlohmann-json3-dev, libgtest-dev) or from a folder unpacked from them
# (scripts/make-deps.sh; pass -DCMAKE_PREFIX_PATH=<folder>/usr).
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(GPUBASE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
