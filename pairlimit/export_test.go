package pairlimit

// Len returns the number of pairs the limiter's own memory store holds
// state for (see len), for the tests of the external package.
func (l *Limiter) Len() int { return l.len() }
