# All dependencies come from Debian bookworm packages (scripts/install-deps.sh).
find_package(Boost 1.81.0 EXACT CONFIG REQUIRED COMPONENTS json url system)
find_package(OpenSSL 3 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(tl-expected CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# prometheus-cpp: only `core` (registry + text format) is used; /metrics is served by kstack.
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(Threads REQUIRED)
if(KSTACK_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(KSTACK_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

# Beast/Asio are compiled once, in kube/asio_impl.cpp, instead of in every transport TU.
add_library(kstack_boost_asio INTERFACE)
target_compile_definitions(kstack_boost_asio INTERFACE
  BOOST_ASIO_SEPARATE_COMPILATION BOOST_BEAST_SEPARATE_COMPILATION
  BOOST_ASIO_NO_DEPRECATED)
target_link_libraries(kstack_boost_asio INTERFACE Boost::headers OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
