//go:build race

package realtime_test

// raceEnabled: the race detector slows the sender tenfold or more, so
// the scenario whose load is the point (five numbers at 1,000 msg/s) runs
// smaller under it.
const raceEnabled = true
