# LibTorch for memprof, and for a program that links the installed memprof
# (memprofConfig.cmake includes this file): both find it the same way.
#
# In: MEMPROF_CUDA, AUTO (the default), ON or OFF: whether to use LibTorch's
#   CUDA libraries (AUTO: where the CUDA toolkit is); CMAKE_PREFIX_PATH or
#   Torch_DIR naming the torch package folder; MEMPROF_WITHOUT_CUDA_REMEDY,
#   what the error for ON without a toolkit offers besides installing one.
# Out: the target memprof::libtorch (LibTorch's libraries and include
#   directories, and the link-order fix below); MEMPROF_WITH_CUDA (ON when
#   the CUDA libraries are used); Torch_VERSION, TORCH_INSTALL_PREFIX and
#   MEMPROF_LIBTORCH_CUDA (which libraries, in words). Including it again
#   once memprof::libtorch exists does nothing.
#
# A plain find_package(Torch) (or find_dependency(Torch) in a package
# config) is not enough: it fails where there is no CUDA toolkit (Note
# [LibTorch without the CUDA toolkit]).
if(TARGET memprof::libtorch)
  return()
endif()
if(NOT DEFINED MEMPROF_CUDA)
  set(MEMPROF_CUDA AUTO)
endif()
# The other way out when MEMPROF_CUDA is ON and there is no toolkit.
if(NOT DEFINED MEMPROF_WITHOUT_CUDA_REMEDY)
  string(CONCAT MEMPROF_WITHOUT_CUDA_REMEDY "configure with "
    "-DMEMPROF_CUDA=AUTO or OFF to build without the CUDA parts")
endif()
if(NOT MEMPROF_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MEMPROF_CUDA is '${MEMPROF_CUDA}'; use AUTO, ON or OFF")
endif()

# Note [LibTorch without the CUDA toolkit]
# The torch wheel is a CUDA build: its Caffe2Config.cmake looks for the
# CUDA toolkit (nvcc, through its own FindCUDA) and fails without one, so
# find_package(Torch) cannot succeed on a machine without the toolkit, even
# for a build that never touches CUDA. memprof therefore looks for nvcc
# first, with the same two searches as that FindCUDA and into the same
# cache entry, so that the two always agree:
# - toolkit found, MEMPROF_CUDA AUTO or ON: find_package(Torch) as usual;
# - MEMPROF_CUDA OFF, or AUTO without a toolkit: import the wheel's own
#   exported targets (Caffe2Targets.cmake: c10, torch_cpu,
#   torch_cpu_library, ...) with the two stand-ins Caffe2Config.cmake
#   gives them for this wheel (an empty protobuf::libprotobuf, since the
#   wheel links protobuf in, and caffe2::mkl from public/mkl.cmake), and
#   TorchConfig.cmake's include directories; nothing CUDA is read;
# - MEMPROF_CUDA ON without a toolkit: an error naming the remedy.
# libtorch_cpu.so still NEEDs libcudart.so.13 and libcupti.so.13; without
# the toolkit they come from the nvidia-* wheels scripts/deps.sh installs
# beside torch, which the torch libraries' RPATH finds.
if(NOT MEMPROF_CUDA STREQUAL "OFF" AND NOT CUDA_TOOLKIT_ROOT_DIR)
  find_program(CUDA_TOOLKIT_ROOT_DIR_NVCC NAMES nvcc
    PATHS ENV CUDA_TOOLKIT_ROOT ENV CUDA_PATH ENV CUDA_BIN_PATH
    PATH_SUFFIXES bin bin64 DOC "Toolkit location." NO_DEFAULT_PATH)
  find_program(CUDA_TOOLKIT_ROOT_DIR_NVCC NAMES nvcc
    PATHS /opt/cuda/bin PATH_SUFFIXES cuda/bin DOC "Toolkit location.")
endif()
if(MEMPROF_CUDA STREQUAL "OFF")
  set(MEMPROF_TOOLKIT_FOUND OFF)
elseif(CUDA_TOOLKIT_ROOT_DIR OR CUDA_TOOLKIT_ROOT_DIR_NVCC)
  set(MEMPROF_TOOLKIT_FOUND ON)
elseif(MEMPROF_CUDA STREQUAL "ON")
  message(FATAL_ERROR "MEMPROF_CUDA=ON needs the CUDA 13 toolkit (nvcc), "
    "which LibTorch's CMake config requires for a build with CUDA, and none "
    "was found (not on PATH, in CUDA_PATH or in /usr/local/cuda): install "
    "the CUDA 13 toolkit, or ${MEMPROF_WITHOUT_CUDA_REMEDY}")
else()
  set(MEMPROF_TOOLKIT_FOUND OFF)
endif()

set(MEMPROF_TORCH_NOT_FOUND "LibTorch not found: add the torch package folder \
to CMAKE_PREFIX_PATH (the torch Python package's own folder, which holds \
share/cmake/Torch: python3 -c 'import torch, os; \
print(os.path.dirname(torch.__file__))')")
if(MEMPROF_TOOLKIT_FOUND)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    message(FATAL_ERROR "${MEMPROF_TORCH_NOT_FOUND}")
  endif()
  if(MEMPROF_CUDA STREQUAL "ON" AND NOT CAFFE2_USE_CUDA)
    message(FATAL_ERROR "MEMPROF_CUDA=ON, but the LibTorch at "
      "${TORCH_INSTALL_PREFIX} was built without CUDA: point "
      "CMAKE_PREFIX_PATH at a CUDA build of LibTorch (scripts/deps.sh "
      "installs one), or configure with -DMEMPROF_CUDA=AUTO or OFF")
  endif()
  set(MEMPROF_WITH_CUDA ${CAFFE2_USE_CUDA})
  if(CAFFE2_USE_CUDA)
    set(MEMPROF_LIBTORCH_CUDA "with CUDA, toolkit ${CUDAToolkit_VERSION}")
  else()
    set(MEMPROF_LIBTORCH_CUDA "CPU only")
  endif()
else()
  find_path(MEMPROF_TORCH_CMAKE_DIR TorchConfig.cmake
    HINTS ${Torch_DIR} PATHS ${CMAKE_PREFIX_PATH} ENV CMAKE_PREFIX_PATH
    PATH_SUFFIXES share/cmake/Torch NO_DEFAULT_PATH)
  if(NOT MEMPROF_TORCH_CMAKE_DIR)
    message(FATAL_ERROR "${MEMPROF_TORCH_NOT_FOUND}")
  endif()
  get_filename_component(TORCH_INSTALL_PREFIX
    "${MEMPROF_TORCH_CMAKE_DIR}/../../.." ABSOLUTE)
  include("${MEMPROF_TORCH_CMAKE_DIR}/TorchConfigVersion.cmake")
  set(Torch_VERSION ${PACKAGE_VERSION})
  set(TORCH_INCLUDE_DIRS ${TORCH_INSTALL_PREFIX}/include
    ${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include)
  if(NOT TARGET protobuf::libprotobuf)
    add_library(protobuf::libprotobuf INTERFACE IMPORTED)
  endif()
  include("${MEMPROF_TORCH_CMAKE_DIR}/../Caffe2/public/mkl.cmake")
  include("${MEMPROF_TORCH_CMAKE_DIR}/../Caffe2/Caffe2Targets.cmake")
  set(MEMPROF_WITH_CUDA OFF)
  if(TARGET torch_cuda AND MEMPROF_CUDA STREQUAL "OFF")
    set(MEMPROF_LIBTORCH_CUDA "with CUDA, its CPU library alone")
  elseif(TARGET torch_cuda)
    set(MEMPROF_LIBTORCH_CUDA
      "with CUDA, its CPU library alone: no CUDA toolkit here")
  else()
    set(MEMPROF_LIBTORCH_CUDA "CPU only")
  endif()
endif()

# Everything that uses LibTorch links it through memprof::libtorch (a user's
# program through memprof::memprof). The wheel's libtorch.so and
# libtorch_cpu.so export their own static copy of std::filesystem
# (remove_all among it), which a binary would otherwise bind to ahead of
# libstdc++'s and crash in (docs/NOTES-libtorch.md): naming libstdc++ before
# any other library puts it first in the lookup order. libtorch.so pulls in
# libtorch_cuda.so when LibTorch has CUDA; without the CUDA parts,
# LibTorch's CPU library (and c10) alone.
add_library(memprof::libtorch INTERFACE IMPORTED)
if(MEMPROF_WITH_CUDA)
  target_link_libraries(memprof::libtorch INTERFACE ${TORCH_LIBRARIES})
else()
  target_link_libraries(memprof::libtorch INTERFACE torch_cpu_library)
endif()
target_include_directories(memprof::libtorch INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_options(memprof::libtorch INTERFACE
  "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
