// Boost.JSON compiled from its headers in the fuzz build, so that the parser under kstack's
// watch decoder and error mapping is instrumented for coverage and sanitizers.
#include <boost/json/src.hpp>
