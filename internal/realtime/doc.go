// Package realtime holds the wall-clock proof of wapace's promises about
// refusals: its tests send at a number's full figure (80 msg/s) for 30 s
// against wapace-fakemeta running as a subprocess, with a CPU hog under
// nice -n 19 on every core, through the Client with default options in
// (a) one process with 64 goroutines, (b) three processes sharing one
// redis-server, (c) the outbox dispatching from SQLite, (d) the outbox
// dispatching 50,000 queued templates over five numbers upgraded to 1,000
// msg/s each (for 10 s, a third of the period), and check 0 x
// 130429, 0 x 131056, no duplicate and at least 95 % of the figure between
// the first and the last acceptance; a scripted burst of 130429 costs the
// number at most about 2 s of sending.
//
// The tests run with every `go test` that is not -short, and CI runs them
// again alone in a step of their own (.ci/run), with two rounds each. The
// refusal counts are asserted in every run; the 95 % only when the machine
// was not overcommitted by other work during the round (see check), since
// a slot that passes while the sender waits for a CPU is lost; (d)'s
// share of 5,000 msg/s is issue 24's goal, measured in BENCHMARKS.md with
// this scenario and logged, not asserted (see noFiveBar). Under the
// race detector each scenario runs one 5 s round that checks refusals,
// duplicates and errors, not the rate or the burst's cost. Knobs, for
// measuring (BENCHMARKS.md): WAPACE_REALTIME_SECONDS (default 30),
// WAPACE_REALTIME_HOG=0 (no hog), WAPACE_REALTIME_ROUNDS (default 1),
// WAPACE_REALTIME_MIN_RATE (default 0.95), WAPACE_REALTIME_BUSY_MAX
// (default 1 runnable task per CPU + 3).
package realtime
