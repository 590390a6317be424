// The one translation unit that holds Catch2's main for all C++ test files.
// GCC 12 reports a false -Wmaybe-uninitialized inside <regex> (which catch.hpp
// includes) at -O1 and above; it is not in our code, so silence it here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
