//go:build !race

package realtime_test

// raceEnabled reports whether the test binary runs under the race
// detector: the suite then runs one short round of each scenario (see
// settings), and the scenario whose load is the point (five numbers at
// 1,000 msg/s) runs smaller.
const raceEnabled = false
