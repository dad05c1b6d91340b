# Third-party packages. All come from Debian packages (libcli11-dev, libfmt-dev,
# nlohmann-json3-dev, libgtest-dev, libturbojpeg0-dev, zlib1g-dev) or from a folder unpacked from
# them (scripts/make-deps.sh; pass -DCMAKE_PREFIX_PATH=<folder>/usr).
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(GPUBASE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# TurboJPEG (libjpeg-turbo's simple API): JPEG encode for `dataset synth`, decode for the loader.
# find_path/find_library rather than pkg-config: Debian's libturbojpeg.pc hard-codes prefix=/usr,
# which is wrong inside an unpacked .deps/ folder, while these honour CMAKE_PREFIX_PATH.
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h REQUIRED)
find_library(TURBOJPEG_LIBRARY NAMES turbojpeg REQUIRED)
if(NOT TARGET TurboJPEG::TurboJPEG)
  add_library(TurboJPEG::TurboJPEG UNKNOWN IMPORTED)
  set_target_properties(TurboJPEG::TurboJPEG PROPERTIES
    IMPORTED_LOCATION "${TURBOJPEG_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${TURBOJPEG_INCLUDE_DIR}")
endif()

# libjpeg (libjpeg-turbo's libjpeg API, libjpeg62-turbo-dev): the loader's decode needs DCT
# scaling with jpeg_crop_scanline/jpeg_skip_scanlines, which TurboJPEG 2.x does not expose.
find_package(JPEG REQUIRED)
# Debian's multiarch jconfig.h sits in include/<triplet>/. Inside an unpacked .deps/ folder that
# directory is not on the compiler's path, so a host's own jconfig.h (Ubuntu: libjpeg 8) would be
# picked up with the folder's libjpeg 6.2 -- "Wrong JPEG library version: library is 62, caller
# expects 80" at run time. Put the folder's own beside its jpeglib.h.
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${JPEG_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}/jconfig.h")
  set_property(TARGET JPEG::JPEG APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               "${JPEG_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

# zlib (optional): reads gzip-compressed IDX files (Fashion-MNIST ships as .gz). Without it the
# IDX reader asks for the files to be gunzipped first.
find_package(ZLIB)
