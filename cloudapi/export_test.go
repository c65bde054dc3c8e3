package cloudapi

// SetPaceWrites turns the write-time check on or off, for the benchmark
// that measures its cost (off is the send path without it).
func SetPaceWrites(on bool) { paceWrites = on }
