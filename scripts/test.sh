#!/usr/bin/env bash
# The test command: sets up what is missing, builds, then runs the GoogleTest suites (ctest, when
# GoogleTest is installed; TORCHAUG_REQUIRE_GTEST=1 makes its absence an error: the internal headers'
# tests, and the API tests built against the CMake package installed into build/prefix) and pytest.
# CUDA tests run where torch sees a GPU and are skipped elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCHAUG_SETUP=test source scripts/setup.sh
PY=${PYTHON:-python3}

gtest_rc=0
if cmake --find-package -DNAME=GTest -DCOMPILER_ID=GNU -DLANGUAGE=CXX -DMODE=EXIST >/dev/null 2>&1 \
   || [ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ] || [ -f /usr/lib/cmake/GTest/GTestConfig.cmake ]; then
  torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  echo "test: building the C++ library, installing it into build/prefix, and the GoogleTest suites"
  cmake -S . -B build/cmake -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_BUILD_TYPE=Release > build/cmake_configure.log 2>&1 \
    || { cat build/cmake_configure.log; exit 1; }
  cmake --build build/cmake -j "$(nproc)" > build/cmake_build.log 2>&1 || { tail -60 build/cmake_build.log; exit 1; }
  cmake --install build/cmake --prefix "$PWD/build/prefix" > build/cmake_install.log 2>&1 || { cat build/cmake_install.log; exit 1; }
  # the API tests built against the installed tree only (find_package(torchaug) from build/prefix)
  cmake -S tests/cpp -B build/cpp-tests -DCMAKE_PREFIX_PATH="$PWD/build/prefix;$torch_prefix" \
        -DPython3_EXECUTABLE="$(command -v "$PY")" -DCMAKE_BUILD_TYPE=Release > build/cpp_tests_configure.log 2>&1 \
    || { cat build/cpp_tests_configure.log; exit 1; }
  cmake --build build/cpp-tests -j "$(nproc)" > build/cpp_tests_build.log 2>&1 || { tail -60 build/cpp_tests_build.log; exit 1; }
  ctest --test-dir build/cmake --output-on-failure || gtest_rc=$?
  ctest --test-dir build/cpp-tests --output-on-failure || gtest_rc=$?
elif [ "${TORCHAUG_REQUIRE_GTEST:-0}" = 1 ]; then
  echo "test: GoogleTest not found (apt-get install libgtest-dev cmake)"; exit 1
else
  echo "test: GoogleTest not found: skipping the C++ suite (apt-get install libgtest-dev cmake)"
fi

"$PY" -m pytest tests -q -ra -p no:cacheprovider "$@" || exit $?
exit $gtest_rc
