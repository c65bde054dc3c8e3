//go:build !race

package realtime_test

// raceEnabled reports whether the test binary runs under the race
// detector: the suite then runs one short round of each scenario (see
// settings).
const raceEnabled = false
