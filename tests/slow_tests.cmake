# Tests that take 5 s or more on the 2-core machine (gcc -O2; several times longer under ASan)
# also carry the label `slow`, so that `ctest -LE slow` is the quick run. Loaded by ctest after
# the discovered tests (CMakeLists.txt, TEST_INCLUDE_FILES); ctest ignores a name a build lacks.
set_tests_properties(IlpOracleTest.MatchesBruteForceOnFourNodes
  IlpQualityTest.PlacerNeverBeatsTheProvenOptimumAndIsWithinFivePercentOfIt
  PROPERTIES LABELS "sched;slow")
set_tests_properties(NodeSelectExhaustiveTest.MatchesExhaustiveOptimumOnEverySample
  PROPERTIES LABELS "select;slow")
set_tests_properties(PrometheusTest.RealPrometheusScrapesQueueLength
  CliClientTest.ErrorsAreClearAndExitNonZero PROPERTIES LABELS "api;slow")
