// The translation unit that builds the tests' precompiled header
// (tests/CMakeLists.txt, gpusweep_test_pch); every test binary reuses it.
