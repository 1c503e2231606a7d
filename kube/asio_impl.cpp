// The one translation unit that compiles Boost.Asio, Asio's SSL support and Beast's non-template
// code. Everything else sees only declarations thanks to BOOST_{ASIO,BEAST}_SEPARATE_COMPILATION,
// which the CMake target `kstack_boost_asio` (cmake/dependencies.cmake) defines for every user.
#if !defined(BOOST_ASIO_SEPARATE_COMPILATION) || !defined(BOOST_BEAST_SEPARATE_COMPILATION)
#error "link kstack_boost_asio: Asio/Beast must be compiled with separate compilation"
#endif
#if !defined(BOOST_ASIO_NO_DEPRECATED)
#error "link kstack_boost_asio: its definitions must match those of the code using Asio/Beast"
#endif

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
